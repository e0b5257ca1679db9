//! Prefixed, sortable, unguessable identifiers: a type prefix and a ULID.

use std::fmt;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("identifier must start with `{expected}`")]
    WrongPrefix { expected: &'static str },
    #[error("identifier does not end in a valid ULID")]
    BadUlid,
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            pub fn from_ulid(ulid: Ulid) -> Self {
                Self(format!("{}{}", $prefix, ulid))
            }

            pub fn parse(raw: &str) -> Result<Self, IdError> {
                let rest = raw
                    .strip_prefix($prefix)
                    .ok_or(IdError::WrongPrefix { expected: $prefix })?;
                let ulid = Ulid::from_string(rest).map_err(|_| IdError::BadUlid)?;
                Ok(Self::from_ulid(ulid))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(raw: String) -> Result<Self, IdError> {
                Self::parse(&raw)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

prefixed_id!(
    /// An account: `acct_` + ULID.
    AccountId,
    "acct_"
);
prefixed_id!(
    /// An API key record (not the secret): `key_` + ULID.
    ApiKeyId,
    "key_"
);
prefixed_id!(
    /// One credit ledger entry: `led_` + ULID.
    LedgerEntryId,
    "led_"
);
prefixed_id!(
    /// One RFC 8628 device grant (not the device code, which is a secret): `dgr_` + ULID.
    DeviceGrantId,
    "dgr_"
);
prefixed_id!(
    /// One execution task (its billing record): `task_` + ULID.
    TaskId,
    "task_"
);
prefixed_id!(
    /// One verification artifact: `art_` + ULID.
    ArtifactId,
    "art_"
);
prefixed_id!(
    /// One emailed-code challenge; the `deviceId` of `/api/register`: `dev_` + ULID.
    ChallengeId,
    "dev_"
);

prefixed_id!(
    /// One hosted checkout the service asked the payment provider for: `chk_` + ULID.
    CheckoutId,
    "chk_"
);
prefixed_id!(
    /// One receipt of a purchase, clawback or dispute movement: `rcp_` + ULID.
    ReceiptId,
    "rcp_"
);
prefixed_id!(
    /// One internal usage-meter event: `mtr_` + ULID.
    MeterEventId,
    "mtr_"
);
prefixed_id!(
    /// One endpoint of the customer's that webhooks are sent to: `we_` + ULID.
    WebhookEndpointId,
    "we_"
);
prefixed_id!(
    /// One event sent as a webhook; its `webhook-id`, the same on every attempt and replay:
    /// `evt_` + ULID.
    WebhookEventId,
    "evt_"
);
prefixed_id!(
    /// One delivery of an event to one endpoint (a replay is a new delivery): `whd_` + ULID.
    WebhookDeliveryId,
    "whd_"
);
prefixed_id!(
    /// One readiness scan: `scn_` + ULID.
    ScanId,
    "scn_"
);
prefixed_id!(
    /// One target-site connection (an OAuth link to an upstream account): `con_` + ULID.
    ConnectionId,
    "con_"
);
prefixed_id!(
    /// One delegated payment authority: `pa_` + ULID.
    AuthorityId,
    "pa_"
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_and_normalises_case() {
        let id = AccountId::from_ulid(Ulid::nil());
        assert_eq!(AccountId::parse(id.as_str()).unwrap(), id);
        let lower = id.as_str().to_lowercase();
        assert_eq!(AccountId::parse(&lower).unwrap(), id);
    }

    #[test]
    fn rejects_wrong_prefix_and_garbage() {
        assert_eq!(
            AccountId::parse("key_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
            Err(IdError::WrongPrefix { expected: "acct_" })
        );
        assert_eq!(AccountId::parse("acct_nope"), Err(IdError::BadUlid));
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in ".*") {
            let _ = AccountId::parse(&s);
        }

        #[test]
        fn any_ulid_round_trips(n in any::<u128>()) {
            let id = LedgerEntryId::from_ulid(Ulid::from(n));
            prop_assert_eq!(LedgerEntryId::parse(id.as_str()).unwrap(), id);
        }
    }
}

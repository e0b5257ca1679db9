//! Issuing, listing and revoking API keys, and granting credits with them. What an account's
//! own keys (and its human) may do to its keys is in [`account`].

mod account;

pub use account::{Holder, KEY_NAME_MAX, RotatedKey, grantable_scopes};

use anyhow::Context;
use svc_ports::{
    Account, AccountId, ApiKeyId, ApiKeyRecord, ApiKeySecret, CreditAmount, Email, Environment,
    KeyPrefix, LedgerEntryId, Plan, Scopes,
    keys::KEY_RANDOM_LEN,
    ledger::Grant,
    store::{AccountError, KeyError, LedgerError},
};

use std::sync::Arc;

use super::{Ports, auth::KeyCache};

/// What `svc keys create` (and later signup) asks for.
#[derive(Debug, Clone)]
pub struct CreateKey {
    pub email: Email,
    /// Plan for a new account; an existing account keeps its plan.
    pub plan: Plan,
    /// Credits granted to the account along with the key.
    pub credits: Option<CreditAmount>,
    pub scopes: Scopes,
    pub label: String,
}

/// A freshly issued key. The secret is shown once and never stored.
#[derive(Debug)]
pub struct IssuedKey {
    pub secret: ApiKeySecret,
    pub record: ApiKeyRecord,
    pub account: Account,
}

#[derive(Debug, thiserror::Error)]
pub enum KeyServiceError {
    #[error("no key of this account has the prefix {0}")]
    NotFound(String),
    #[error("the key {0} was already revoked")]
    AlreadyRevoked(KeyPrefix),
    #[error("the key {0} was already rotated; rotate its replacement instead")]
    AlreadyRotated(KeyPrefix),
    #[error(
        "this key ({0}) was rotated and works only until its overlap ends, so it cannot create, \
         rotate or revoke keys; use the key that replaced it"
    )]
    KeyEnding(KeyPrefix),
    /// The calling key does not hold every scope asked for (or held by the key it acts on).
    #[error("this key cannot grant or act on scopes it does not hold: {}", .0.join(", "))]
    InsufficientScope(Vec<String>),
    #[error(
        "`execute:consequential` lets the key place orders, make bookings and make payments \
         with your credits and payment authorities; confirm that to grant it"
    )]
    ConsequentialUnconfirmed,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

pub struct KeyService {
    ports: Ports,
    environment: Environment,
    /// The authenticator's cache: a key revoked or rotated here stops working at once.
    cache: Arc<KeyCache>,
    /// Credits granted once to an account that signup creates.
    free_credits: i64,
    /// How long a rotated key keeps working beside its replacement.
    overlap: std::time::Duration,
}

/// A rotated key keeps working this long beside its replacement, unless configured otherwise:
/// long enough for a running agent to pick up the new key.
pub const DEFAULT_ROTATION_OVERLAP: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The ledger reference of the free credits: one grant per account, whatever retries happen.
pub const FREE_CREDITS_REFERENCE: &str = "free-credits";

/// The sandbox's seeded account: its address and the test credits it gets once.
pub const SANDBOX_EMAIL: &str = "agent@sandbox.example.com";
pub const SANDBOX_CREDITS: i64 = 1000;

impl KeyService {
    /// The sandbox's seeded account and its test key, which may also run consequential
    /// actions; `credits` test credits are granted once per account (also when a sandbox on a
    /// database starts again).
    pub async fn seed_sandbox(&self, credits: i64) -> anyhow::Result<IssuedKey> {
        let issued = self
            .create_key(CreateKey {
                email: Email::parse(SANDBOX_EMAIL)?,
                plan: Plan::Sandbox,
                credits: None,
                scopes: Scopes::parse_list("read discover execute execute:consequential")?,
                label: "sandbox seed".into(),
            })
            .await?;
        self.grant(
            &issued.account.id,
            CreditAmount::new(credits).context("SVC_SANDBOX_SEED_CREDITS")?,
            Some("sandbox-seed".into()),
            "sandbox seed credits",
        )
        .await?;
        Ok(issued)
    }

    pub fn new(ports: Ports, environment: Environment, cache: Arc<KeyCache>) -> Self {
        Self {
            ports,
            environment,
            cache,
            free_credits: 0,
            overlap: DEFAULT_ROTATION_OVERLAP,
        }
    }

    pub fn with_free_credits(mut self, credits: i64) -> Self {
        self.free_credits = credits;
        self
    }

    /// How long a rotated key keeps working (`SVC_KEY_ROTATION_OVERLAP_HOURS`).
    pub fn with_rotation_overlap(mut self, overlap: std::time::Duration) -> Self {
        self.overlap = overlap;
        self
    }

    /// The account a proven address signs up or signs in to. One that this call creates gets
    /// the free credits in the same write as the account: a crash cannot leave it without them.
    pub async fn signup_account(&self, email: &Email) -> anyhow::Result<Account> {
        let free = match self.free_credits {
            0 => None,
            n => Some(CreditAmount::new(n).context("SVC_FREE_CREDITS")?),
        };
        let (account, created) = self.find_or_create(email, self.signup_plan(), free).await?;
        if created && let Some(amount) = free {
            tracing::info!(account_id = %account.id, credits = amount.get(), "credits granted");
        }
        Ok(account)
    }

    /// Drops a key from the authenticator's cache: after its revocation or rotation.
    pub fn forget(&self, prefix: &KeyPrefix) {
        self.cache.forget(prefix);
    }

    /// The plan of an account created by signup: sandbox in the sandbox, free in live.
    pub fn signup_plan(&self) -> Plan {
        match self.environment {
            Environment::Test => Plan::Sandbox,
            Environment::Live => Plan::Free,
        }
    }

    pub async fn account_by_email(&self, email: &Email) -> anyhow::Result<Option<Account>> {
        Ok(self
            .ports
            .accounts
            .account_by_email(self.environment, email)
            .await?)
    }

    /// Finds or creates the account for `email` in this environment.
    pub async fn ensure_account(&self, email: &Email, plan: Plan) -> anyhow::Result<Account> {
        Ok(self.find_or_create(email, plan, None).await?.0)
    }

    /// The account for `email`, and whether this call created it (with `opening` credits).
    async fn find_or_create(
        &self,
        email: &Email,
        plan: Plan,
        opening: Option<CreditAmount>,
    ) -> anyhow::Result<(Account, bool)> {
        let accounts = &self.ports.accounts;
        if let Some(a) = accounts.account_by_email(self.environment, email).await? {
            return Ok((a, false));
        }
        let now = self.ports.clock.now();
        let account = Account {
            id: AccountId::from_ulid(self.ports.entropy.ulid()),
            email: email.clone(),
            plan,
            environment: self.environment,
            created_at: now,
        };
        let created = match opening {
            None => accounts.create_account(&account).await,
            Some(amount) => {
                let grant = Grant {
                    id: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
                    account_id: account.id.clone(),
                    amount,
                    reference: Some(FREE_CREDITS_REFERENCE.into()),
                    memo: "free credits for a new account".into(),
                    at: now,
                };
                accounts.create_account_with_grant(&account, &grant).await
            }
        };
        match created {
            Ok(()) => {
                tracing::info!(account_id = %account.id, plan = %plan, "account created");
                Ok((account, true))
            }
            // Created concurrently by another request: use that one.
            Err(AccountError::EmailTaken) => Ok((
                accounts
                    .account_by_email(self.environment, email)
                    .await?
                    .context("account vanished after a concurrent create")?,
                false,
            )),
            Err(e) => Err(anyhow::Error::new(e).context("creating account")),
        }
    }

    pub async fn create_key(&self, request: CreateKey) -> Result<IssuedKey, KeyServiceError> {
        let account = self.ensure_account(&request.email, request.plan).await?;
        if let Some(amount) = request.credits {
            self.grant(&account.id, amount, None, "operator grant with new key")
                .await?;
        }
        let (secret, record) = self
            .issue_key(&account.id, request.scopes, request.label)
            .await?;
        Ok(IssuedKey {
            secret,
            record,
            account,
        })
    }

    /// A new key for `account`, not yet stored: the caller stores it, alone or in the
    /// transaction that justifies it (a device grant, an email code, a rotation).
    pub fn draft_key(
        &self,
        account: &AccountId,
        scopes: Scopes,
        label: String,
    ) -> anyhow::Result<(ApiKeySecret, ApiKeyRecord)> {
        let random = self.ports.entropy.base62(KEY_RANDOM_LEN);
        let secret = ApiKeySecret::from_random(self.environment, &random)
            .context("entropy produced an invalid key body")?;
        let record = ApiKeyRecord {
            id: ApiKeyId::from_ulid(self.ports.entropy.ulid()),
            account_id: account.clone(),
            prefix: secret.prefix(),
            hash: secret.hash(),
            scopes,
            label,
            created_at: self.ports.clock.now(),
            revoked_at: None,
            expires_at: None,
            last_used_at: None,
        };
        Ok((secret, record))
    }

    /// Generates and stores a new key for an existing account.
    pub async fn issue_key(
        &self,
        account: &AccountId,
        scopes: Scopes,
        label: String,
    ) -> anyhow::Result<(ApiKeySecret, ApiKeyRecord)> {
        // A prefix collision (47 random bits) is astronomically rare; retry a few times anyway.
        for _ in 0..4 {
            let (secret, record) = self.draft_key(account, scopes.clone(), label.clone())?;
            match self.ports.accounts.insert_key(&record).await {
                Ok(()) => {
                    // The prefix identifies the key to people; the secret never reaches a log.
                    tracing::info!(account_id = %account, key_prefix = %record.prefix, scopes = %record.scopes.to_list_string(), "api key created");
                    return Ok((secret, record));
                }
                Err(KeyError::Duplicate) => continue,
                Err(e) => return Err(anyhow::Error::new(e).context("storing key")),
            }
        }
        anyhow::bail!("could not generate a unique key after 4 tries")
    }

    pub async fn grant(
        &self,
        account: &AccountId,
        amount: CreditAmount,
        reference: Option<String>,
        memo: &str,
    ) -> anyhow::Result<svc_ports::GrantOutcome> {
        let grant = Grant {
            id: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            account_id: account.clone(),
            amount,
            reference,
            memo: memo.to_owned(),
            at: self.ports.clock.now(),
        };
        match self.ports.ledger.grant(&grant).await {
            Ok(outcome) => {
                tracing::info!(account_id = %account, credits = amount.get(), "credits granted");
                Ok(outcome)
            }
            Err(LedgerError::UnknownAccount) => anyhow::bail!("account {account} does not exist"),
            Err(e) => Err(anyhow::Error::new(e).context("granting credits")),
        }
    }

    /// Keys of one account (by email) or of every account, oldest first, with their account.
    pub async fn list(
        &self,
        email: Option<&Email>,
    ) -> anyhow::Result<Vec<(ApiKeyRecord, Option<Account>)>> {
        let account = match email {
            Some(e) => match self
                .ports
                .accounts
                .account_by_email(self.environment, e)
                .await?
            {
                Some(a) => Some(a.id),
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let keys = self.ports.accounts.keys(account).await?;
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let a = self.ports.accounts.account(&k.account_id).await?;
            out.push((k, a));
        }
        Ok(out)
    }

    pub async fn revoke(&self, prefix: &KeyPrefix) -> Result<ApiKeyRecord, KeyServiceError> {
        match self
            .ports
            .accounts
            .revoke_key(prefix, self.ports.clock.now())
            .await
        {
            Ok(record) => {
                self.cache.forget(prefix);
                tracing::info!(account_id = %record.account_id, key_prefix = %record.prefix, "api key revoked");
                Ok(record)
            }
            Err(KeyError::NotFound) => Err(KeyServiceError::NotFound(prefix.to_string())),
            Err(KeyError::AlreadyRevoked) => Err(KeyServiceError::AlreadyRevoked(prefix.clone())),
            Err(e) => Err(anyhow::Error::new(e).context("revoking key").into()),
        }
    }
}

//! The one table from a service's typed error to the problem every face answers with
//! (problem+json in REST, a tool error in MCP, a failed task in A2A).

use svc_ports::{FailureClass, ProviderError};
use svc_services::{
    ActivityError, AuthError, AuthorityFailure, BillingFailure, ExecuteRefusal, IdentityFailure,
    KeyServiceError, ReadError, VerifyRefusal, connections::ConnectionFailure, hooks::HookFailure,
    readiness::ScanFailure, telemetry::TelemetryRefusal,
};

use crate::problem::{ApiProblem, NextActionKind};

/// Maps a read failure to its problem.
pub fn read_problem(e: ReadError) -> ApiProblem {
    match e {
        ReadError::Refused(r) => ApiProblem::new(FailureClass::UrlRefused, r.to_string()),
        ReadError::Unreachable(f) => {
            ApiProblem::new(FailureClass::UpstreamUnreachable, f.to_string())
                .next_action(NextActionKind::Retry, None)
        }
        ReadError::InvalidSelector(s) => {
            ApiProblem::new(FailureClass::InvalidRequest, s.to_string())
        }
        e @ (ReadError::MaxAgeTooLarge | ReadError::SelectorLimits) => {
            ApiProblem::new(FailureClass::InvalidRequest, e.to_string())
        }
        ReadError::MissingScope(scope) => ApiProblem::new(
            FailureClass::InsufficientScope,
            format!("This needs a key with the `{scope}` scope."),
        ),
        ReadError::Internal(e) => ApiProblem::failure(e.as_ref()),
        // No browser to run a page that must be rendered, or every tab busy.
        ReadError::RenderUnavailable(e) => {
            ApiProblem::new(FailureClass::Unavailable, e.to_string())
                .retry_after(std::time::Duration::from_secs(2))
                .next_action(NextActionKind::Retry, None)
        }
        // Every PDF parser busy: the file is fine, the service is not free for it now.
        ReadError::PdfBusy(e) => ApiProblem::new(FailureClass::Unavailable, e.to_string())
            .retry_after(std::time::Duration::from_secs(10))
            .next_action(NextActionKind::Retry, None),
    }
}

impl From<VerifyRefusal> for ApiProblem {
    fn from(e: VerifyRefusal) -> Self {
        let detail = e.to_string();
        match e {
            VerifyRefusal::NotFound => ApiProblem::new(
                FailureClass::NotFound,
                "No task of this account has that id.",
            ),
            VerifyRefusal::NotVerifiable(_) => ApiProblem::new(FailureClass::NotVerifiable, detail),
            VerifyRefusal::Pending { .. } => {
                ApiProblem::new(FailureClass::VerificationPending, detail)
                    .retry_after(std::time::Duration::from_secs(30))
            }
            VerifyRefusal::Refused(e) => e.into(),
        }
    }
}

impl From<ExecuteRefusal> for ApiProblem {
    fn from(e: ExecuteRefusal) -> Self {
        let detail = e.to_string();
        match e {
            ExecuteRefusal::UnknownDomain(_) => {
                ApiProblem::new(FailureClass::UnknownDomain, detail)
            }
            ExecuteRefusal::UnknownAction { .. } => {
                ApiProblem::new(FailureClass::UnknownAction, detail)
            }
            ExecuteRefusal::InvalidParams(_) | ExecuteRefusal::BadIdempotencyKey(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            ExecuteRefusal::MissingScopes { consequential, .. } => {
                let p = ApiProblem::new(FailureClass::InsufficientScope, detail);
                if consequential {
                    p.next_action(NextActionKind::Approve, None)
                } else {
                    p
                }
            }
            ExecuteRefusal::ConnectionRequired { .. } => {
                ApiProblem::new(FailureClass::ConnectionRequired, detail)
                    .next_action(NextActionKind::Connect, None)
            }
            ExecuteRefusal::ConnectionExpired { .. } => {
                ApiProblem::new(FailureClass::ConnectionExpired, detail)
                    .next_action(NextActionKind::Connect, None)
            }
            ExecuteRefusal::ConnectionProviderUnavailable { .. } => {
                ApiProblem::new(FailureClass::ConnectionProviderUnavailable, detail)
                    .retry_after(std::time::Duration::from_secs(30))
            }
            ExecuteRefusal::PaymentAuthorityRequired { account_url, .. } => {
                ApiProblem::new(FailureClass::PaymentAuthorityRequired, detail)
                    .next_action(NextActionKind::Approve, Some(account_url))
            }
            ExecuteRefusal::PaymentAuthorityRefused { reason, .. } => {
                let class = if reason == svc_ports::AuthorityRefusal::InvalidAmount {
                    FailureClass::InvalidRequest
                } else {
                    FailureClass::PaymentAuthorityRefused
                };
                ApiProblem::new(class, detail)
            }
            ExecuteRefusal::InsufficientCredits { top_up_url, .. } => {
                ApiProblem::new(FailureClass::InsufficientCredits, detail)
                    .next_action(NextActionKind::TopUp, Some(top_up_url))
            }
            ExecuteRefusal::InFlight { .. } => {
                ApiProblem::new(FailureClass::IdempotencyInFlight, detail)
                    .retry_after(std::time::Duration::from_secs(1))
            }
            ExecuteRefusal::KeyConflict { .. } => {
                ApiProblem::new(FailureClass::IdempotencyConflict, detail)
            }
            ExecuteRefusal::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<ConnectionFailure> for ApiProblem {
    fn from(e: ConnectionFailure) -> Self {
        let detail = e.to_string();
        match e {
            ConnectionFailure::UnknownProvider(_) => {
                ApiProblem::new(FailureClass::UnknownProvider, detail)
            }
            ConnectionFailure::ProviderUnavailable(_) => {
                ApiProblem::new(FailureClass::ConnectionProviderUnavailable, detail)
                    .retry_after(std::time::Duration::from_secs(30))
            }
            ConnectionFailure::InvalidInput(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            ConnectionFailure::UnknownLink
            | ConnectionFailure::OtherAccount
            | ConnectionFailure::LinkExpired => ApiProblem::new(FailureClass::NotFound, detail)
                .next_action(NextActionKind::Connect, None),
            ConnectionFailure::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<ScanFailure> for ApiProblem {
    fn from(e: ScanFailure) -> Self {
        match e {
            ScanFailure::InvalidUrl(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, e.to_string())
            }
            ScanFailure::Refused(r) => ApiProblem::new(FailureClass::UrlRefused, r.to_string()),
            ScanFailure::Unreachable(_) => {
                ApiProblem::new(FailureClass::UpstreamUnreachable, e.to_string())
            }
            ScanFailure::Busy => ApiProblem::new(FailureClass::Unavailable, e.to_string())
                .retry_after(std::time::Duration::from_secs(5)),
            ScanFailure::Store(e) => ApiProblem::failure(&e),
        }
    }
}

impl From<IdentityFailure> for ApiProblem {
    fn from(e: IdentityFailure) -> Self {
        let detail = e.to_string();
        match e {
            IdentityFailure::InvalidRequest(_) | IdentityFailure::KeyAlreadyRevoked => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            IdentityFailure::InvalidScope(_) => ApiProblem::new(FailureClass::InvalidScope, detail),
            IdentityFailure::AuthorizationPending => {
                ApiProblem::new(FailureClass::AuthorizationPending, detail)
            }
            IdentityFailure::SlowDown { interval } => {
                ApiProblem::new(FailureClass::SlowDown, detail)
                    .retry_after(std::time::Duration::from_secs(u64::from(interval)))
            }
            IdentityFailure::AccessDenied => ApiProblem::new(FailureClass::AccessDenied, detail),
            IdentityFailure::ExpiredToken => ApiProblem::new(FailureClass::ExpiredToken, detail)
                .next_action(NextActionKind::SignUp, None),
            IdentityFailure::InvalidGrant(_) => ApiProblem::new(FailureClass::InvalidGrant, detail),
            IdentityFailure::UnknownUserCode | IdentityFailure::WrongCode { .. } => {
                ApiProblem::new(FailureClass::InvalidCode, detail)
            }
            IdentityFailure::CodeDead(_) => ApiProblem::new(FailureClass::CodeExpired, detail)
                .next_action(NextActionKind::SignUp, None),
            IdentityFailure::AddressLocked => ApiProblem::new(FailureClass::LockedOut, detail)
                .retry_after(std::time::Duration::from_secs(3600)),
            IdentityFailure::LockedOut { retry_after } => {
                ApiProblem::new(FailureClass::LockedOut, detail).retry_after(retry_after)
            }
            IdentityFailure::TooManyCodes { retry_after } => {
                ApiProblem::new(FailureClass::RateLimited, detail).retry_after(retry_after)
            }
            IdentityFailure::MailUnavailable => ApiProblem::new(FailureClass::Unavailable, detail)
                .retry_after(std::time::Duration::from_secs(30)),
            // An id that names nothing is a resource that does not exist (404), like a task.
            IdentityFailure::KeyNotFound | IdentityFailure::UnknownChallenge => {
                ApiProblem::new(FailureClass::NotFound, detail)
            }
            IdentityFailure::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<KeyServiceError> for ApiProblem {
    fn from(e: KeyServiceError) -> Self {
        let detail = e.to_string();
        match e {
            // Another account's key reads as no key at all.
            KeyServiceError::NotFound(_) => ApiProblem::new(FailureClass::NotFound, detail),
            KeyServiceError::InsufficientScope(_) | KeyServiceError::KeyEnding(_) => {
                ApiProblem::new(FailureClass::InsufficientScope, detail)
            }
            KeyServiceError::ConsequentialUnconfirmed => {
                ApiProblem::new(FailureClass::InsufficientScope, detail)
                    .next_action(NextActionKind::Approve, None)
            }
            KeyServiceError::AlreadyRevoked(_) | KeyServiceError::AlreadyRotated(_) => {
                ApiProblem::new(FailureClass::KeyNotActive, detail)
            }
            KeyServiceError::Invalid(_) => ApiProblem::new(FailureClass::InvalidRequest, detail),
            KeyServiceError::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<AuthorityFailure> for ApiProblem {
    fn from(e: AuthorityFailure) -> Self {
        match e {
            AuthorityFailure::NotFound => ApiProblem::new(FailureClass::NotFound, e.to_string()),
            AuthorityFailure::Invalid(d) => ApiProblem::new(FailureClass::InvalidRequest, d),
            AuthorityFailure::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<ActivityError> for ApiProblem {
    fn from(e: ActivityError) -> Self {
        match e {
            ActivityError::Invalid(d) => ApiProblem::new(FailureClass::InvalidRequest, d),
            ActivityError::Store(e) => ApiProblem::failure(&e),
        }
    }
}

impl From<HookFailure> for ApiProblem {
    fn from(e: HookFailure) -> Self {
        match e {
            HookFailure::NotFound => ApiProblem::new(FailureClass::NotFound, e.to_string()),
            HookFailure::TooManyReplays(_) => {
                ApiProblem::new(FailureClass::RateLimited, e.to_string())
                    .retry_after(std::time::Duration::from_secs(60))
            }
            HookFailure::Invalid(d) => ApiProblem::new(FailureClass::InvalidRequest, d),
            HookFailure::UrlRefused(r) => ApiProblem::new(
                FailureClass::UrlRefused,
                format!("The webhook URL is refused: {r}. Give a public http or https URL."),
            ),
            HookFailure::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

impl From<TelemetryRefusal> for ApiProblem {
    fn from(e: TelemetryRefusal) -> Self {
        match e {
            TelemetryRefusal::Invalid { .. } => {
                ApiProblem::new(FailureClass::InvalidRequest, e.to_string())
            }
            TelemetryRefusal::Busy => ApiProblem::new(FailureClass::Unavailable, e.to_string())
                .retry_after(std::time::Duration::from_secs(1)),
        }
    }
}

impl From<AuthError> for ApiProblem {
    fn from(e: AuthError) -> Self {
        let sign_up = |p: ApiProblem| p.next_action(NextActionKind::SignUp, None);
        match e {
            AuthError::Missing => sign_up(ApiProblem::new(
                FailureClass::MissingApiKey,
                "This endpoint needs an API key in `Authorization: Bearer svc_...`.",
            )),
            AuthError::Malformed => ApiProblem::new(
                FailureClass::InvalidApiKey,
                "The Authorization header must be `Bearer svc_live_...` or `Bearer svc_test_...` with 32 characters after the prefix.",
            ),
            AuthError::Unknown => {
                ApiProblem::new(FailureClass::InvalidApiKey, "This API key is not known.")
            }
            AuthError::Revoked => {
                ApiProblem::new(FailureClass::RevokedApiKey, "This API key was revoked.")
            }
            AuthError::Expired => ApiProblem::new(
                FailureClass::RevokedApiKey,
                "This API key was rotated and its overlap has ended; use the key that replaced it.",
            ),
            AuthError::WrongEnvironment { presented, server } => ApiProblem::new(
                FailureClass::WrongEnvironment,
                format!("A {presented} key cannot be used on the {server} service."),
            ),
            AuthError::Store(e) => ApiProblem::failure(&e),
        }
    }
}

impl From<BillingFailure> for ApiProblem {
    fn from(e: BillingFailure) -> Self {
        let detail = e.to_string();
        match e {
            BillingFailure::NotConfigured => ApiProblem::new(FailureClass::Unavailable, detail),
            BillingFailure::UnknownSku(_) | BillingFailure::InvalidRequest(_) => {
                ApiProblem::new(FailureClass::InvalidRequest, detail)
            }
            BillingFailure::ContactSales { url, .. } => {
                ApiProblem::new(FailureClass::ContactSales, detail)
                    .next_action(NextActionKind::ContactSales, Some(url))
            }
            BillingFailure::IdempotencyKeyRequired => {
                ApiProblem::new(FailureClass::IdempotencyKeyRequired, detail)
            }
            BillingFailure::IdempotencyConflict => {
                ApiProblem::new(FailureClass::IdempotencyConflict, detail)
            }
            BillingFailure::HandoffUnusable => ApiProblem::new(FailureClass::CodeExpired, detail),
            BillingFailure::InternalOnly => ApiProblem::new(FailureClass::InternalOnly, detail),
            // The provider's own words (an error about our key, its request id) stay in the
            // log; a refusal is ours to fix, so retrying soon is no use.
            BillingFailure::Provider(ProviderError::Unavailable(_)) => ApiProblem::new(
                FailureClass::PaymentProviderUnavailable,
                "The payment provider did not answer; nothing was charged. Try again in a moment.",
            )
            .retry_after(std::time::Duration::from_secs(5)),
            BillingFailure::Provider(ProviderError::Rejected(_)) => ApiProblem::new(
                FailureClass::PaymentProviderRefused,
                "The payment provider could not open a checkout; nothing was charged. The service's operators were told; try again later.",
            ),
            BillingFailure::Internal(e) => ApiProblem::failure(e.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_scanner_answers_503_with_retry_after() {
        let p = ApiProblem::from(ScanFailure::Busy);
        assert_eq!(p.class, FailureClass::Unavailable);
        assert_eq!(p.class.http_status(), 503);
        assert_eq!(p.retry_after, Some(std::time::Duration::from_secs(5)));
        assert!(p.detail.contains("too many scans"), "{}", p.detail);
    }
}

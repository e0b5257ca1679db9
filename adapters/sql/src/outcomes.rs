//! What a conditional write that matched no row means, judged from the row as it is now (read
//! after the write): the same answer on both stores.

use chrono::{DateTime, Utc};
use svc_ports::{
    DeviceGrant, DeviceGrantStatus, EmailChallenge, SettleOutcome, TaskRecord, VerifyOutcome,
    store::{IdentityError, KeyError, TaskError},
};

/// A decision on a device grant that matched no pending, unexpired grant.
pub(crate) fn undecided_grant(now: Option<DeviceGrant>) -> IdentityError {
    match now {
        None => IdentityError::NotFound,
        Some(g) if g.status != DeviceGrantStatus::Pending => IdentityError::NotPending,
        Some(_) => IdentityError::Expired,
    }
}

/// A device key that could not be issued: the grant is not (or no longer) approved.
pub(crate) fn unissued_key(now: Option<DeviceGrant>) -> IdentityError {
    match now.map(|g| g.status) {
        None => IdentityError::NotFound,
        Some(DeviceGrantStatus::Issued) => IdentityError::AlreadyUsed,
        Some(DeviceGrantStatus::Pending | DeviceGrantStatus::Denied) => IdentityError::NotApproved,
        Some(DeviceGrantStatus::Approved) => IdentityError::Key(KeyError::UnknownAccount),
    }
}

/// Why a challenge cannot take a try now.
pub(crate) fn untried_challenge(now: Option<EmailChallenge>, at: DateTime<Utc>) -> IdentityError {
    match now {
        None => IdentityError::NotFound,
        Some(c) if c.consumed_at.is_some() => IdentityError::AlreadyUsed,
        Some(c) if at >= c.expires_at => IdentityError::Expired,
        Some(_) => IdentityError::Exhausted,
    }
}

/// Why a challenge could not be consumed.
pub(crate) fn unconsumed_challenge(now: Option<EmailChallenge>) -> IdentityError {
    match now {
        None => IdentityError::NotFound,
        Some(c) if c.consumed_at.is_some() => IdentityError::AlreadyUsed,
        Some(_) => IdentityError::Expired,
    }
}

/// A settlement that changed nothing: the task settled before (or does not exist). A task
/// still in flight was not settled by anyone: the settlement's own write failed on a unique
/// value (its entry, event or delivery id taken), which is an error, not a lost race.
pub(crate) fn settled_before(now: Option<TaskRecord>) -> Result<SettleOutcome, TaskError> {
    match now {
        None => Err(TaskError::NotFound),
        Some(t) if t.status == svc_ports::TaskStatus::InFlight => Err(svc_ports::StoreError(
            anyhow::anyhow!("settling task {}: one of its ids is taken", t.id),
        )
        .into()),
        Some(t) => Ok(SettleOutcome::AlreadySettled(t)),
    }
}

/// A verification that changed nothing: another one landed first, or the task is not
/// verifiable.
pub(crate) fn unverified(now: Option<TaskRecord>) -> Result<VerifyOutcome, TaskError> {
    match now {
        Some(t) if t.verified_artifact.is_some() => Ok(VerifyOutcome::AlreadyVerified(t)),
        Some(t) => Ok(VerifyOutcome::NotVerifiable(t)),
        None => Err(TaskError::NotFound),
    }
}

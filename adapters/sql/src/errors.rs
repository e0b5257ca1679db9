//! How both stores report a failed statement: a database that cannot be reached (the caller
//! may retry; nothing was stored) apart from everything else, and the constraint violations
//! that mean "exists already" or "belongs to nothing".

use std::fmt::Display;

use anyhow::anyhow;
use svc_ports::{
    StoreError,
    store::{AccountError, AuthorityError, BillingError, ConnectionError, IdentityError, KeyError},
};

/// A failed statement as the ports see it; connection failures become
/// [`svc_ports::StoreUnreachable`], which every face answers with a retryable 503.
pub(crate) fn backend(e: sqlx::Error, what: &'static str) -> StoreError {
    if unreachable(&e) {
        return StoreError::unreachable(e, what);
    }
    StoreError(anyhow::Error::new(e).context(what))
}

/// The connection failed, or the server is going away or not accepting connections yet:
/// SQLSTATE class 08 (connection exception), 57P01-57P03 (admin shutdown, crash shutdown,
/// cannot connect now); or the server rolled the statement back to break a deadlock or a
/// serialization conflict (40P01, 40001). Each leaves nothing written, and the same request
/// can succeed a moment later, so each is a retryable 503 (and a settle is tried again).
fn unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| {
            c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03" | "40P01" | "40001")
        }),
        _ => false,
    }
}

/// A row that does not decode, inside code that speaks `sqlx::Error`.
pub(crate) fn undecodable(e: StoreError) -> sqlx::Error {
    sqlx::Error::Decode(e.0.into())
}

pub(crate) fn corrupt<E: Display>(what: &'static str) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError(anyhow!("corrupt {what} in store: {e}"))
}

/// The errors a port's writes answer for a broken unique constraint (`DUPLICATE`) and for a
/// reference to a row that does not exist (`UNKNOWN`); `None`: not expected of its writes.
pub(crate) trait Refusals: From<StoreError> {
    const DUPLICATE: Option<Self>;
    const UNKNOWN: Option<Self>;
}

impl Refusals for AccountError {
    const DUPLICATE: Option<Self> = Some(AccountError::EmailTaken);
    const UNKNOWN: Option<Self> = None;
}

impl Refusals for KeyError {
    const DUPLICATE: Option<Self> = Some(KeyError::Duplicate);
    const UNKNOWN: Option<Self> = Some(KeyError::UnknownAccount);
}

impl Refusals for AuthorityError {
    const DUPLICATE: Option<Self> = Some(AuthorityError::Duplicate);
    const UNKNOWN: Option<Self> = Some(AuthorityError::UnknownAccount);
}

impl Refusals for BillingError {
    const DUPLICATE: Option<Self> = None;
    const UNKNOWN: Option<Self> = Some(BillingError::UnknownAccount);
}

impl Refusals for ConnectionError {
    const DUPLICATE: Option<Self> = Some(ConnectionError::Duplicate);
    const UNKNOWN: Option<Self> = Some(ConnectionError::UnknownAccount);
}

/// Grants and challenges reference no other row; a session's account is given as
/// [`refused_as`] `NotFound`.
impl Refusals for IdentityError {
    const DUPLICATE: Option<Self> = Some(IdentityError::Duplicate);
    const UNKNOWN: Option<Self> = None;
}

/// A failed write as its port's error ([`Refusals`]), or a failed statement like any other.
pub(crate) fn refused<E: Refusals>(what: &'static str) -> impl FnOnce(sqlx::Error) -> E {
    refused_as(what, E::DUPLICATE, E::UNKNOWN)
}

/// A failed write as the error given for a broken unique constraint (`duplicate`) or a
/// reference to a row that does not exist (`unknown`); where one is `None` it is not expected
/// and is a failed statement like any other.
pub(crate) fn refused_as<E: From<StoreError>>(
    what: &'static str,
    duplicate: Option<E>,
    unknown: Option<E>,
) -> impl FnOnce(sqlx::Error) -> E {
    move |e| {
        if is_unique_violation(&e)
            && let Some(duplicate) = duplicate
        {
            return duplicate;
        }
        if is_foreign_key_violation(&e)
            && let Some(unknown) = unknown
        {
            return unknown;
        }
        backend(e, what).into()
    }
}

pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

pub(crate) fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_foreign_key_violation())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_unreachable_and_others_are_not() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert!(svc_ports::store::is_unreachable(&backend(io, "reading")));
        assert!(svc_ports::store::is_unreachable(&backend(
            sqlx::Error::PoolTimedOut,
            "reading"
        )));
        assert!(!svc_ports::store::is_unreachable(&backend(
            sqlx::Error::RowNotFound,
            "reading"
        )));
    }
}

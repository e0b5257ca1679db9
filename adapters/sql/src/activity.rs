//! Rows of the activity statements into the ports' types, shared by both stores (each store's
//! statements live in its own `activity.rs`).

use svc_ports::{
    ApiKeyId, StoreError,
    activity::{UsageKind, UsageRow, epoch_day},
};

use crate::rows::{Columns, corrupt_column};

/// Credits a day's usage row adds up, as each store names it in its statement.
fn usage_kind(name: &str) -> Result<UsageKind, String> {
    match name {
        "charged" => Ok(UsageKind::Charged),
        "refunded" => Ok(UsageKind::Refunded),
        "bought" => Ok(UsageKind::Bought),
        "granted" => Ok(UsageKind::Granted),
        "taken_back" => Ok(UsageKind::TakenBack),
        "released" => Ok(UsageKind::Released),
        other => Err(format!("unknown usage kind {other:?}")),
    }
}

/// A row of `day` (days since 1970-01-01, UTC), `usage`, `key_id`, `credits`, `entries`.
pub(crate) fn usage_row(r: &impl Columns) -> Result<UsageRow, StoreError> {
    let day = r.int("day")?;
    Ok(UsageRow {
        day: epoch_day(day).ok_or_else(|| corrupt_column("day", day))?,
        kind: r.parsed("usage", usage_kind)?,
        key_id: r.parsed_opt("key_id", ApiKeyId::parse)?,
        credits: r.int("credits")?,
        count: r.int("entries")?,
    })
}

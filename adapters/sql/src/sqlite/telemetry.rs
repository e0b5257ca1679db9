//! `TelemetryStore`: agent traffic events, stored after redaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::Row;
use svc_ports::{
    AccountId, FunnelCount, StoredEvent,
    store::{StoreError, TelemetryStore},
};

use super::{SqliteStore, backend, corrupt, from_millis, millis};

#[async_trait]
impl TelemetryStore for SqliteStore {
    async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        // The batch is bound once, as a JSON array with one array per event holding its
        // columns in the order of the INSERT (the event itself as its JSON text).
        let rows: Vec<_> = events
            .iter()
            .map(|e| {
                (
                    &e.id,
                    millis(e.received_at),
                    &e.event_id,
                    &e.session_id,
                    &e.agent_protocol,
                    &e.discovery_surface,
                    &e.conversion_state,
                    &e.task_type,
                    e.account_id.as_ref().map(AccountId::as_str),
                    e.event.to_string(),
                )
            })
            .collect();
        let batch = serde_json::to_string(&rows).map_err(corrupt("agent event"))?;
        // One statement, whatever the batch's size: all of it or none. `jsonb_each` parses
        // the batch once (as fast as a multi-row VALUES).
        sqlx::query(
            "INSERT INTO agent_events (id, received_at, event_id, session_id, agent_protocol, \
             discovery_surface, conversion_state, task_type, account_id, event) \
             SELECT e.value ->> 0, e.value ->> 1, e.value ->> 2, e.value ->> 3, e.value ->> 4, \
             e.value ->> 5, e.value ->> 6, e.value ->> 7, e.value ->> 8, e.value ->> 9 \
             FROM jsonb_each($1) AS e",
        )
        .bind(batch)
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "storing agent events"))?;
        Ok(())
    }

    async fn funnel<'a>(
        &self,
        since: DateTime<Utc>,
        account: Option<&'a AccountId>,
    ) -> Result<Vec<FunnelCount>, StoreError> {
        let err = |e| backend(e, "reading funnel");
        let rows = sqlx::query(
            "SELECT discovery_surface, conversion_state, COUNT(*) AS events FROM agent_events \
             WHERE received_at >= $1 AND ($2 IS NULL OR account_id = $2) \
             GROUP BY discovery_surface, conversion_state \
             ORDER BY discovery_surface, conversion_state",
        )
        .bind(millis(since))
        .bind(account.map(AccountId::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "counting agent events"))?;
        rows.iter()
            .map(|r| {
                let events: i64 = r.try_get("events").map_err(err)?;
                Ok(FunnelCount {
                    discovery_surface: r.try_get("discovery_surface").map_err(err)?,
                    conversion_state: r.try_get("conversion_state").map_err(err)?,
                    events: u64::try_from(events).unwrap_or(0),
                })
            })
            .collect()
    }

    async fn recent_events(&self, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let err = |e| backend(e, "reading agent event");
        let rows = sqlx::query(
            "SELECT id, received_at, event_id, session_id, agent_protocol, discovery_surface, \
             conversion_state, task_type, account_id, event FROM agent_events \
             ORDER BY received_at DESC, id DESC LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "reading agent events"))?;
        rows.iter()
            .map(|r| {
                let account: Option<&str> = r.try_get("account_id").map_err(err)?;
                Ok(StoredEvent {
                    id: r.try_get("id").map_err(err)?,
                    received_at: from_millis(r.try_get("received_at").map_err(err)?)?,
                    event_id: r.try_get("event_id").map_err(err)?,
                    session_id: r.try_get("session_id").map_err(err)?,
                    agent_protocol: r.try_get("agent_protocol").map_err(err)?,
                    discovery_surface: r.try_get("discovery_surface").map_err(err)?,
                    conversion_state: r.try_get("conversion_state").map_err(err)?,
                    task_type: r.try_get("task_type").map_err(err)?,
                    account_id: account
                        .map(AccountId::parse)
                        .transpose()
                        .map_err(corrupt("account id"))?,
                    event: serde_json::from_str(r.try_get("event").map_err(err)?)
                        .map_err(corrupt("agent event"))?,
                })
            })
            .collect()
    }
}

//! `TelemetryStore`: agent traffic events, stored after redaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::Row;
use svc_ports::{
    AccountId, FunnelCount, StoredEvent,
    store::{StoreError, TelemetryStore},
};

use super::{SqliteStore, backend, corrupt, from_millis, millis};

/// One event as the batch insert reads it from JSON.
#[derive(Serialize)]
struct EventRow<'a> {
    id: &'a str,
    received_at: i64,
    event_id: &'a str,
    session_id: &'a str,
    agent_protocol: &'a str,
    discovery_surface: &'a str,
    conversion_state: &'a str,
    task_type: &'a str,
    account_id: Option<&'a str>,
    /// The event as the text stored (a JSON string, so it is kept byte for byte).
    event: String,
}

#[async_trait]
impl TelemetryStore for SqliteStore {
    async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let rows: Vec<EventRow<'_>> = events
            .iter()
            .map(|e| EventRow {
                id: &e.id,
                received_at: millis(e.received_at),
                event_id: &e.event_id,
                session_id: &e.session_id,
                agent_protocol: &e.agent_protocol,
                discovery_surface: &e.discovery_surface,
                conversion_state: &e.conversion_state,
                task_type: &e.task_type,
                account_id: e.account_id.as_ref().map(AccountId::as_str),
                event: e.event.to_string(),
            })
            .collect();
        let batch = serde_json::to_string(&rows).map_err(corrupt("agent event"))?;
        // The whole batch is one statement (all of it or none), whatever its size: the rows
        // come from one JSON array bound once.
        sqlx::query(
            "INSERT INTO agent_events (id, received_at, event_id, session_id, agent_protocol, \
             discovery_surface, conversion_state, task_type, account_id, event) \
             SELECT e.value ->> 'id', e.value ->> 'received_at', e.value ->> 'event_id', \
             e.value ->> 'session_id', e.value ->> 'agent_protocol', \
             e.value ->> 'discovery_surface', e.value ->> 'conversion_state', \
             e.value ->> 'task_type', e.value ->> 'account_id', e.value ->> 'event' \
             FROM json_each($1) AS e",
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

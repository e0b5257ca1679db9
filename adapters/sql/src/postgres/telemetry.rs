//! `TelemetryStore`: agent traffic events. A batch is one statement whatever its size: each
//! column is bound as one array and `UNNEST` turns the arrays back into rows, so the batch is
//! stored whole or not at all without a transaction. The event itself is JSONB.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use svc_ports::{
    AccountId, FunnelCount, StoredEvent,
    store::{StoreError, TelemetryStore},
};

use super::{PostgresStore, backend, col, jsonb_safe, ms, parsed_opt};

#[async_trait]
impl TelemetryStore for PostgresStore {
    async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        for e in events {
            jsonb_safe(&e.event, "an agent event")?;
        }
        let column = |f: fn(&StoredEvent) -> &str| events.iter().map(f).collect::<Vec<_>>();
        sqlx::query(
            r#"
            INSERT INTO agent_events (id, received_at, event_id, session_id, agent_protocol,
                discovery_surface, conversion_state, task_type, account_id, event)
            SELECT * FROM UNNEST($1::TEXT[], $2::TIMESTAMPTZ[], $3::TEXT[], $4::TEXT[],
                $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::TEXT[], $9::TEXT[], $10::JSONB[])
            "#,
        )
        .bind(column(|e| &e.id))
        .bind(events.iter().map(|e| ms(e.received_at)).collect::<Vec<_>>())
        .bind(column(|e| &e.event_id))
        .bind(column(|e| &e.session_id))
        .bind(column(|e| &e.agent_protocol))
        .bind(column(|e| &e.discovery_surface))
        .bind(column(|e| &e.conversion_state))
        .bind(column(|e| &e.task_type))
        .bind(
            events
                .iter()
                .map(|e| e.account_id.as_ref().map(AccountId::as_str))
                .collect::<Vec<_>>(),
        )
        .bind(events.iter().map(|e| Json(&e.event)).collect::<Vec<_>>())
        .execute(&self.pool)
        .await
        .map_err(|e| backend(e, "storing agent events"))?;
        Ok(())
    }

    async fn funnel<'a>(
        &self,
        since: DateTime<Utc>,
        account: Option<&'a AccountId>,
    ) -> Result<Vec<FunnelCount>, StoreError> {
        sqlx::query(
            "SELECT discovery_surface, conversion_state, COUNT(*) AS events FROM agent_events \
             WHERE received_at >= $1 AND ($2::TEXT IS NULL OR account_id = $2) \
             GROUP BY discovery_surface, conversion_state \
             ORDER BY discovery_surface, conversion_state",
        )
        .bind(ms(since))
        .bind(account.map(AccountId::as_str))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "counting agent events"))?
        .iter()
        .map(|r| {
            Ok(FunnelCount {
                discovery_surface: col(r, "discovery_surface")?,
                conversion_state: col(r, "conversion_state")?,
                events: u64::try_from(col::<i64>(r, "events")?).unwrap_or(0),
            })
        })
        .collect()
    }

    async fn recent_events(&self, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        sqlx::query(
            "SELECT id, received_at, event_id, session_id, agent_protocol, discovery_surface, \
             conversion_state, task_type, account_id, event FROM agent_events \
             ORDER BY received_at DESC, id DESC LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| backend(e, "reading agent events"))?
        .iter()
        .map(|r| {
            Ok(StoredEvent {
                id: col(r, "id")?,
                received_at: col(r, "received_at")?,
                event_id: col(r, "event_id")?,
                session_id: col(r, "session_id")?,
                agent_protocol: col(r, "agent_protocol")?,
                discovery_surface: col(r, "discovery_surface")?,
                conversion_state: col(r, "conversion_state")?,
                task_type: col(r, "task_type")?,
                account_id: parsed_opt(r, "account_id", AccountId::parse)?,
                event: col(r, "event")?,
            })
        })
        .collect()
    }
}

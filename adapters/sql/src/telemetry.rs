//! `TelemetryStore` for both dialects: a batch is one multi-row insert in one transaction.

macro_rules! impl_sql_telemetry {
    ($store:ty, $db:ty) => {
        use svc_ports::{FunnelCount, StoredEvent, store::TelemetryStore};

        /// Rows per INSERT statement (10 binds each, under SQLite's 32,766 and Postgres'
        /// 65,535 bind limits).
        const EVENTS_PER_STATEMENT: usize = 500;

        #[async_trait]
        impl TelemetryStore for $store {
            async fn insert_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
                if events.is_empty() {
                    return Ok(());
                }
                let err = |e| backend(e, "storing agent events");
                let mut tx = self.begin_write().await.map_err(err)?;
                for chunk in events.chunks(EVENTS_PER_STATEMENT) {
                    let mut builder = sqlx::QueryBuilder::<$db>::new(
                        "INSERT INTO agent_events (id, received_at, event_id, session_id, agent_protocol, \
                         discovery_surface, conversion_state, task_type, account_id, event) ",
                    );
                    builder.push_values(chunk, |mut row, e| {
                        row.push_bind(e.id.clone())
                            .push_bind(millis(e.received_at))
                            .push_bind(e.event_id.clone())
                            .push_bind(e.session_id.clone())
                            .push_bind(e.agent_protocol.clone())
                            .push_bind(e.discovery_surface.clone())
                            .push_bind(e.conversion_state.clone())
                            .push_bind(e.task_type.clone())
                            .push_bind(e.account_id.as_ref().map(|a| a.as_str().to_owned()))
                            .push_bind(e.event.to_string());
                    });
                    builder.build().execute(&mut *tx).await.map_err(err)?;
                }
                tx.commit().await.map_err(err)?;
                Ok(())
            }

            async fn funnel<'a>(
                &self,
                since: DateTime<Utc>,
                account: Option<&'a AccountId>,
            ) -> Result<Vec<FunnelCount>, StoreError> {
                let rows = sqlx::query(
                    "SELECT discovery_surface, conversion_state, COUNT(*) AS events FROM agent_events \
                     WHERE received_at >= $1 AND ($2 IS NULL OR account_id = $2) \
                     GROUP BY discovery_surface, conversion_state \
                     ORDER BY discovery_surface, conversion_state",
                )
                .bind(millis(since))
                .bind(account.map(|a| a.as_str().to_owned()))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| backend(e, "counting agent events"))?;
                rows.iter()
                    .map(|r| {
                        let err = |e| backend(e, "reading funnel");
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
                        let err = |e| backend(e, "reading agent event");
                        let event: String = r.try_get("event").map_err(err)?;
                        let account: Option<String> = r.try_get("account_id").map_err(err)?;
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
                                .map(|a| AccountId::parse(&a))
                                .transpose()
                                .map_err(corrupt("account id"))?,
                            event: serde_json::from_str(&event).map_err(corrupt("agent event"))?,
                        })
                    })
                    .collect()
            }
        }
    };
}

pub(crate) use impl_sql_telemetry;

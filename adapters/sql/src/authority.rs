//! `AuthorityStore` for both dialects, and the spend a new task makes under an authority.
//! The spend is checked and stored inside the task's transaction with the authority row
//! locked (`FOR UPDATE` on Postgres; SQLite's one writer already serialises), so concurrent
//! tasks on any number of instances never spend past the limit. A single-use authority's one
//! live spend is also guarded by a partial unique index.

/// Implements `AuthorityStore` and the spend helpers `try_begin` and `try_settle` call;
/// expands beside `impl_sql_stores!`. `$for_update` is the dialect's row-lock clause.
macro_rules! impl_sql_authority {
    ($store:ty, $db:ty, $for_update:literal) => {
        use svc_ports::{
            AuthorityId, AuthorityRefusal, AuthoritySpendRecord, AuthorityUsage, PaymentAuthority,
            authority::{AmountLimit, AuthorityInterval, Principal, check_spend, window_start},
            store::{AuthorityError, AuthorityStore},
        };

        const AUTHORITY_COLUMNS: &str = "id, account_id, principal_type, principal_id, agent_provider, scope, \
            amount_value, amount_interval, currency, expires_at, revocation_url, receipt_required, \
            verification_required, created_by, created_at, revoked_at";
        const SPEND_COLUMNS: &str =
            "task_id, authority_id, amount, currency, scope, window_start, spent_at, released_at";

        fn authority_from_row(r: &DbRow) -> Result<PaymentAuthority, StoreError> {
            let err = |e| backend(e, "reading payment authority");
            let s = |c: &str| r.try_get::<String, _>(c).map_err(err);
            let interval = AuthorityInterval::parse(&s("amount_interval")?)
                .ok_or_else(|| corrupt("authority interval")("unknown"))?;
            let revoked: Option<i64> = r.try_get("revoked_at").map_err(err)?;
            Ok(PaymentAuthority {
                authority_id: AuthorityId::parse(&s("id")?).map_err(corrupt("authority id"))?,
                principal: Principal {
                    kind: s("principal_type")?,
                    id: s("principal_id")?,
                    agent_provider: s("agent_provider")?,
                },
                scope: serde_json::from_str(&s("scope")?).map_err(corrupt("authority scope"))?,
                amount_limit: AmountLimit::new(r.try_get("amount_value").map_err(err)?, interval)
                    .map_err(corrupt("authority amount"))?,
                currency: svc_ports::billing::Currency::parse(&s("currency")?).map_err(corrupt("currency"))?,
                expires_at: from_millis(r.try_get("expires_at").map_err(err)?)?,
                revocation_url: s("revocation_url")?,
                receipt_required: r.try_get("receipt_required").map_err(err)?,
                verification_required: r.try_get("verification_required").map_err(err)?,
                created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
                account_id: AccountId::parse(&s("account_id")?).map_err(corrupt("account id"))?,
                created_by: s("created_by")?,
                revoked_at: revoked.map(from_millis).transpose()?,
            })
        }

        fn spend_from_row(r: &DbRow) -> Result<AuthoritySpendRecord, StoreError> {
            let err = |e| backend(e, "reading authority spend");
            let s = |c: &str| r.try_get::<String, _>(c).map_err(err);
            let released: Option<i64> = r.try_get("released_at").map_err(err)?;
            Ok(AuthoritySpendRecord {
                authority_id: AuthorityId::parse(&s("authority_id")?).map_err(corrupt("authority id"))?,
                task_id: TaskId::parse(&s("task_id")?).map_err(corrupt("task id"))?,
                amount: r.try_get("amount").map_err(err)?,
                currency: svc_ports::billing::Currency::parse(&s("currency")?).map_err(corrupt("currency"))?,
                scope: s("scope")?,
                window_start: from_millis(r.try_get("window_start").map_err(err)?)?,
                spent_at: from_millis(r.try_get("spent_at").map_err(err)?)?,
                released_at: released.map(from_millis).transpose()?,
            })
        }

        /// Checks and stores a new task's spend inside the task's transaction (after the task
        /// row, which it references). `Ok(Err(_))`: refused; the caller drops the transaction.
        async fn spend_authority_on(
            conn: &mut <$db as sqlx::Database>::Connection,
            task: &svc_ports::NewTask,
        ) -> Result<Result<(), AuthorityRefusal>, sqlx::Error> {
            let Some(spend) = &task.authority_spend else { return Ok(Ok(())) };
            let decode = |e: StoreError| sqlx::Error::Decode(e.0.into());
            let sql = format!("SELECT {AUTHORITY_COLUMNS} FROM payment_authorities WHERE id = $1{}", $for_update);
            let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(spend.authority_id.as_str())
                .fetch_optional(&mut *conn)
                .await?;
            let Some(row) = row else { return Ok(Err(AuthorityRefusal::UnknownAuthority)) };
            let authority = authority_from_row(&row).map_err(decode)?;
            let start = window_start(&authority, task.created_at);
            // Read with the authority locked: spends committed before the lock are all seen.
            let spent: i64 = sqlx::query_scalar(
                "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM authority_spends \
                 WHERE authority_id = $1 AND window_start = $2 AND released_at IS NULL",
            )
            .bind(spend.authority_id.as_str())
            .bind(millis(start))
            .fetch_one(&mut *conn)
            .await?;
            let window = match check_spend(&authority, &task.account_id, spend, spent, task.created_at) {
                Ok(window) => window,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let single_use = authority.amount_limit.interval() == AuthorityInterval::SingleUse;
            let inserted = sqlx::query(
                "INSERT INTO authority_spends (task_id, authority_id, amount, currency, scope, single_use, \
                 window_start, spent_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(task.id.as_str())
            .bind(spend.authority_id.as_str())
            .bind(spend.amount)
            .bind(spend.currency.as_str())
            .bind(&spend.scope)
            .bind(single_use)
            .bind(millis(window))
            .bind(millis(task.created_at))
            .execute(&mut *conn)
            .await;
            match inserted {
                Ok(_) => Ok(Ok(())),
                // The single-use index: another live spend exists (the lock makes this a backstop).
                Err(e) if single_use && is_unique_violation(&e) => Ok(Err(AuthorityRefusal::Exhausted)),
                Err(e) => Err(e),
            }
        }

        /// Gives back a failed task's spend, inside its settlement's transaction.
        async fn release_spend_on(
            conn: &mut <$db as sqlx::Database>::Connection,
            task: &TaskId,
            at: DateTime<Utc>,
        ) -> Result<(), sqlx::Error> {
            sqlx::query("UPDATE authority_spends SET released_at = $1 WHERE task_id = $2 AND released_at IS NULL")
                .bind(millis(at))
                .bind(task.as_str())
                .execute(&mut *conn)
                .await
                .map(|_| ())
        }

        impl $store {
            async fn usage_of(&self, a: &PaymentAuthority, now: DateTime<Utc>) -> Result<AuthorityUsage, StoreError> {
                let err = |e| backend(e, "reading authority usage");
                let row = sqlx::query(
                    "SELECT CAST(COALESCE(SUM(CASE WHEN window_start = $2 THEN amount ELSE 0 END), 0) AS BIGINT) AS spent, \
                     COUNT(*) AS spends FROM authority_spends WHERE authority_id = $1 AND released_at IS NULL",
                )
                .bind(a.authority_id.as_str())
                .bind(millis(window_start(a, now)))
                .fetch_one(&self.pool)
                .await
                .map_err(err)?;
                let spent: i64 = row.try_get("spent").map_err(err)?;
                let spends: i64 = row.try_get("spends").map_err(err)?;
                Ok(AuthorityUsage::compute(a, spent, u32::try_from(spends).unwrap_or(u32::MAX), now))
            }
        }

        #[async_trait]
        impl AuthorityStore for $store {
            async fn insert_authority(&self, a: &PaymentAuthority) -> Result<(), AuthorityError> {
                let scope = serde_json::to_string(&a.scope).map_err(corrupt("authority scope"))?;
                let r = sqlx::query(
                    "INSERT INTO payment_authorities (id, account_id, principal_type, principal_id, agent_provider, \
                     scope, amount_value, amount_interval, currency, expires_at, revocation_url, receipt_required, \
                     verification_required, created_by, created_at, revoked_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind(a.authority_id.as_str())
                .bind(a.account_id.as_str())
                .bind(&a.principal.kind)
                .bind(&a.principal.id)
                .bind(&a.principal.agent_provider)
                .bind(scope)
                .bind(a.amount_limit.value())
                .bind(a.amount_limit.interval().as_str())
                .bind(a.currency.as_str())
                .bind(millis(a.expires_at))
                .bind(&a.revocation_url)
                .bind(a.receipt_required)
                .bind(a.verification_required)
                .bind(&a.created_by)
                .bind(millis(a.created_at))
                .bind(a.revoked_at.map(millis))
                .execute(self.writer())
                .await;
                match r {
                    Ok(_) => Ok(()),
                    Err(e) if is_foreign_key_violation(&e) => Err(AuthorityError::UnknownAccount),
                    Err(e) if is_unique_violation(&e) => Err(AuthorityError::Duplicate),
                    Err(e) => Err(backend(e, "storing payment authority").into()),
                }
            }

            async fn authority(
                &self,
                id: &AuthorityId,
                now: DateTime<Utc>,
            ) -> Result<Option<(PaymentAuthority, AuthorityUsage)>, StoreError> {
                let sql = format!("SELECT {AUTHORITY_COLUMNS} FROM payment_authorities WHERE id = $1");
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading payment authority"))?;
                let Some(row) = row else { return Ok(None) };
                let a = authority_from_row(&row)?;
                let usage = self.usage_of(&a, now).await?;
                Ok(Some((a, usage)))
            }

            async fn authorities(
                &self,
                account: &AccountId,
                now: DateTime<Utc>,
            ) -> Result<Vec<(PaymentAuthority, AuthorityUsage)>, StoreError> {
                let sql = format!(
                    "SELECT {AUTHORITY_COLUMNS} FROM payment_authorities WHERE account_id = $1 \
                     ORDER BY created_at DESC, id DESC"
                );
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(account.as_str())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing payment authorities"))?;
                let mut out = Vec::with_capacity(rows.len());
                for row in &rows {
                    let a = authority_from_row(row)?;
                    let usage = self.usage_of(&a, now).await?;
                    out.push((a, usage));
                }
                Ok(out)
            }

            async fn authority_spends(&self, id: &AuthorityId) -> Result<Vec<AuthoritySpendRecord>, StoreError> {
                let sql = format!(
                    "SELECT {SPEND_COLUMNS} FROM authority_spends WHERE authority_id = $1 ORDER BY spent_at, task_id"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.as_str())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing authority spends"))?
                    .iter()
                    .map(spend_from_row)
                    .collect()
            }

            async fn revoke_authority(
                &self,
                account: &AccountId,
                id: &AuthorityId,
                at: DateTime<Utc>,
            ) -> Result<PaymentAuthority, AuthorityError> {
                // COALESCE keeps the first revocation time.
                let sql = format!(
                    "UPDATE payment_authorities SET revoked_at = COALESCE(revoked_at, $1) \
                     WHERE id = $2 AND account_id = $3 RETURNING {AUTHORITY_COLUMNS}"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(millis(at))
                    .bind(id.as_str())
                    .bind(account.as_str())
                    .fetch_optional(self.writer())
                    .await
                    .map_err(|e| AuthorityError::Store(backend(e, "revoking payment authority")))?
                    .map(|r| authority_from_row(&r).map_err(AuthorityError::Store))
                    .transpose()?
                    .ok_or(AuthorityError::NotFound)
            }
        }
    };
}

pub(crate) use impl_sql_authority;

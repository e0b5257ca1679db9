//! Row conversions and the store implementation shared by both dialects.

use anyhow::{Context, anyhow};
use chrono::{DateTime, TimeZone, Utc};
use svc_ports::StoreError;

pub(crate) fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_millis(ms: i64) -> Result<DateTime<Utc>, StoreError> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .ok_or_else(|| StoreError(anyhow!("timestamp {ms} out of range")))
}

pub(crate) fn backend(e: sqlx::Error, what: &'static str) -> StoreError {
    StoreError(anyhow::Error::new(e).context(what))
}

pub(crate) fn corrupt<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError(anyhow!("corrupt {what} in store: {e}"))
}

pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation())
}

pub(crate) fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_foreign_key_violation())
}

pub(crate) fn migrate_context(
    r: Result<(), sqlx::migrate::MigrateError>,
    db: &str,
) -> anyhow::Result<()> {
    r.with_context(|| format!("applying {db} migrations"))
}

/// Implements `AccountStore` and `LedgerStore` for a store struct with a `pool` field and a
/// `begin_write` method that opens a transaction able to write at once.
macro_rules! impl_sql_stores {
    ($store:ty, $db:ty) => {
        use async_trait::async_trait;
        use chrono::{DateTime, Utc};
        use sqlx::Row;
        use svc_ports::{
            Account, AccountId, ApiKeyId, ApiKeyRecord, Balance, Email, Environment, GrantOutcome,
            KeyHash, KeyPrefix, LedgerEntry, LedgerEntryId, Scopes,
            ledger::{EntryKind, Grant},
            FetchedPage, PageCache, RobotsDecision,
            store::{AccountError, AccountStore, KeyError, LedgerError, LedgerStore, StoreError},
        };
        use $crate::common::{
            backend, corrupt, from_millis, is_foreign_key_violation, is_unique_violation, millis,
        };

        type DbRow = <$db as sqlx::Database>::Row;

        const ACCOUNT_COLUMNS: &str = "id, email, plan, environment, created_at";
        const KEY_COLUMNS: &str =
            "k.id, k.account_id, k.prefix, k.hash, k.scopes, k.label, k.created_at, k.revoked_at";
        // SQLite's RETURNING takes no table-qualified names.
        const KEY_COLUMNS_UNQUALIFIED: &str =
            "id, account_id, prefix, hash, scopes, label, created_at, revoked_at";
        const ENTRY_COLUMNS: &str =
            "id, account_id, kind, delta, balance_after, reference, memo, created_at";

        fn account_from_row(r: &DbRow, offset: &str) -> Result<Account, StoreError> {
            let col = |c: &str| format!("{offset}{c}");
            let get_s = |c: &str| -> Result<String, StoreError> {
                r.try_get::<String, _>(col(c).as_str()).map_err(|e| backend(e, "reading account"))
            };
            Ok(Account {
                id: AccountId::parse(&get_s("id")?).map_err(corrupt("account id"))?,
                email: Email::parse(&get_s("email")?).map_err(corrupt("email"))?,
                plan: get_s("plan")?.parse().map_err(corrupt("plan"))?,
                environment: get_s("environment")?.parse().map_err(corrupt("environment"))?,
                created_at: from_millis(
                    r.try_get::<i64, _>(col("created_at").as_str())
                        .map_err(|e| backend(e, "reading account"))?,
                )?,
            })
        }

        fn key_from_row(r: &DbRow) -> Result<ApiKeyRecord, StoreError> {
            let s = |c: &str| -> Result<String, StoreError> {
                r.try_get::<String, _>(c).map_err(|e| backend(e, "reading key"))
            };
            let revoked: Option<i64> = r.try_get("revoked_at").map_err(|e| backend(e, "reading key"))?;
            Ok(ApiKeyRecord {
                id: ApiKeyId::parse(&s("id")?).map_err(corrupt("key id"))?,
                account_id: AccountId::parse(&s("account_id")?).map_err(corrupt("account id"))?,
                prefix: KeyPrefix::parse(&s("prefix")?).map_err(corrupt("key prefix"))?,
                hash: KeyHash::from_hex(&s("hash")?).ok_or_else(|| corrupt("key hash")("bad hex"))?,
                scopes: Scopes::parse_list(&s("scopes")?).map_err(corrupt("scopes"))?,
                label: s("label")?,
                created_at: from_millis(r.try_get("created_at").map_err(|e| backend(e, "reading key"))?)?,
                revoked_at: revoked.map(from_millis).transpose()?,
            })
        }

        /// Stores a key on a connection or inside a transaction (`&mut *tx`).
        async fn insert_key_on(
            conn: &mut <$db as sqlx::Database>::Connection,
            key: &ApiKeyRecord,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(
                "INSERT INTO api_keys (id, account_id, prefix, hash, scopes, label, created_at, revoked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(key.id.as_str())
            .bind(key.account_id.as_str())
            .bind(key.prefix.as_str())
            .bind(key.hash.to_hex())
            .bind(key.scopes.to_list_string())
            .bind(&key.label)
            .bind(millis(key.created_at))
            .bind(key.revoked_at.map(millis))
            .execute(&mut *conn)
            .await
            .map(|_| ())
        }

        /// Writes a ledger entry inside the transaction that moved its credits.
        async fn insert_entry_on(
            conn: &mut <$db as sqlx::Database>::Connection,
            entry: &LedgerEntry,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(
                "INSERT INTO ledger_entries (id, account_id, kind, delta, balance_after, reference, memo, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(entry.id.as_str())
            .bind(entry.account_id.as_str())
            .bind(entry.kind.as_str())
            .bind(entry.delta)
            .bind(entry.balance_after)
            .bind(entry.reference.as_deref())
            .bind(&entry.memo)
            .bind(millis(entry.created_at))
            .execute(&mut *conn)
            .await
            .map(|_| ())
        }

        fn key_error(e: sqlx::Error) -> KeyError {
            if is_unique_violation(&e) {
                KeyError::Duplicate
            } else if is_foreign_key_violation(&e) {
                KeyError::UnknownAccount
            } else {
                backend(e, "storing key").into()
            }
        }

        fn entry_from_row(r: &DbRow) -> Result<LedgerEntry, StoreError> {
            let err = |e| backend(e, "reading ledger entry");
            Ok(LedgerEntry {
                id: LedgerEntryId::parse(&r.try_get::<String, _>("id").map_err(err)?)
                    .map_err(corrupt("entry id"))?,
                account_id: AccountId::parse(&r.try_get::<String, _>("account_id").map_err(err)?)
                    .map_err(corrupt("account id"))?,
                kind: r.try_get::<String, _>("kind").map_err(err)?.parse::<EntryKind>()
                    .map_err(corrupt("entry kind"))?,
                delta: r.try_get("delta").map_err(err)?,
                balance_after: r.try_get("balance_after").map_err(err)?,
                reference: r.try_get("reference").map_err(err)?,
                memo: r.try_get("memo").map_err(err)?,
                created_at: from_millis(r.try_get("created_at").map_err(err)?)?,
            })
        }

        fn page_from_row(r: &DbRow) -> Result<FetchedPage, StoreError> {
            let err = |e| backend(e, "reading cached page");
            let redirects: String = r.try_get("redirects").map_err(err)?;
            let robots: String = r.try_get("robots").map_err(err)?;
            let status: i64 = r.try_get("status").map_err(err)?;
            let truncated: i64 = r.try_get("truncated").map_err(err)?;
            Ok(FetchedPage {
                requested_url: r.try_get("requested_url").map_err(err)?,
                final_url: r.try_get("final_url").map_err(err)?,
                status: u16::try_from(status).map_err(corrupt("page status"))?,
                content_type: r.try_get("content_type").map_err(err)?,
                charset: r.try_get("charset").map_err(err)?,
                // Bytes (BYTEA on Postgres, whose TEXT cannot hold a NUL a page may contain).
                body: String::from_utf8(r.try_get::<Vec<u8>, _>("body").map_err(err)?)
                    .map_err(corrupt("cached page body"))?,
                truncated: truncated != 0,
                redirects: serde_json::from_str::<Vec<String>>(&redirects).map_err(corrupt("redirects"))?,
                robots: serde_json::from_str::<RobotsDecision>(&robots).map_err(corrupt("robots decision"))?,
                fetched_at: from_millis(r.try_get("fetched_at").map_err(err)?)?,
            })
        }

        #[async_trait]
        impl PageCache for $store {
            async fn put_page(&self, key: &str, page: &FetchedPage) -> Result<(), StoreError> {
                let redirects = serde_json::to_string(&page.redirects).map_err(corrupt("redirects"))?;
                let robots = serde_json::to_string(&page.robots).map_err(corrupt("robots decision"))?;
                sqlx::query(
                    "INSERT INTO page_cache (cache_key, requested_url, final_url, status, content_type, charset, body, \
                     truncated, redirects, robots, fetched_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                     ON CONFLICT (cache_key) DO UPDATE SET requested_url = excluded.requested_url, \
                     final_url = excluded.final_url, status = excluded.status, content_type = excluded.content_type, \
                     charset = excluded.charset, body = excluded.body, truncated = excluded.truncated, \
                     redirects = excluded.redirects, robots = excluded.robots, fetched_at = excluded.fetched_at",
                )
                .bind(key)
                .bind(&page.requested_url)
                .bind(&page.final_url)
                .bind(i64::from(page.status))
                .bind(page.content_type.as_deref())
                .bind(&page.charset)
                .bind(page.body.as_bytes())
                .bind(i64::from(page.truncated))
                .bind(redirects)
                .bind(robots)
                .bind(millis(page.fetched_at))
                .execute(self.writer())
                .await
                .map_err(|e| backend(e, "caching page"))?;
                Ok(())
            }

            async fn fresh_page(
                &self,
                key: &str,
                not_before: DateTime<Utc>,
            ) -> Result<Option<FetchedPage>, StoreError> {
                sqlx::query(
                    "SELECT requested_url, final_url, status, content_type, charset, body, truncated, redirects, \
                     robots, fetched_at FROM page_cache WHERE cache_key = $1 AND fetched_at >= $2",
                )
                .bind(key)
                .bind(millis(not_before))
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| backend(e, "reading cached page"))?
                .map(|r| page_from_row(&r))
                .transpose()
            }

            async fn purge_pages(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
                let done = sqlx::query("DELETE FROM page_cache WHERE fetched_at < $1")
                    .bind(millis(before))
                    .execute(self.writer())
                    .await
                    .map_err(|e| backend(e, "purging cached pages"))?;
                Ok(done.rows_affected())
            }
        }

        impl $store {
            async fn entry_by_reference(
                &self,
                account: &AccountId,
                reference: &str,
            ) -> Result<Option<LedgerEntry>, StoreError> {
                let sql = format!(
                    "SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE account_id = $1 AND reference = $2"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(account.as_str())
                    .bind(reference)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "looking up grant reference"))?
                    .map(|r| entry_from_row(&r))
                    .transpose()
            }

            async fn try_grant(&self, grant: &Grant) -> Result<GrantOutcome, sqlx::Error> {
                let mut tx = self.begin_write().await?;
                if let Some(reference) = &grant.reference {
                    let sql = format!(
                        "SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE account_id = $1 AND reference = $2"
                    );
                    let earlier = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(grant.account_id.as_str())
                        .bind(reference)
                        .fetch_optional(&mut *tx)
                        .await?;
                    if let Some(row) = earlier {
                        let entry = entry_from_row(&row).map_err(|e| sqlx::Error::Decode(e.0.into()))?;
                        return Ok(GrantOutcome::AlreadyApplied(entry));
                    }
                }
                let balance: Option<i64> = sqlx::query_scalar(
                    "UPDATE accounts SET spendable = spendable + $1 WHERE id = $2 RETURNING spendable",
                )
                .bind(grant.amount.get())
                .bind(grant.account_id.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(balance_after) = balance else {
                    return Err(sqlx::Error::RowNotFound);
                };
                let entry = grant.entry(balance_after);
                insert_entry_on(&mut tx, &entry).await?;
                tx.commit().await?;
                Ok(GrantOutcome::Applied(entry))
            }
        }

        #[async_trait]
        impl AccountStore for $store {
            async fn create_account(&self, account: &Account) -> Result<(), AccountError> {
                let r = sqlx::query(
                    "INSERT INTO accounts (id, email, plan, environment, created_at) VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(account.id.as_str())
                .bind(account.email.as_str())
                .bind(account.plan.as_str())
                .bind(account.environment.as_str())
                .bind(millis(account.created_at))
                .execute(self.writer())
                .await;
                match r {
                    Ok(_) => Ok(()),
                    Err(e) if is_unique_violation(&e) => Err(AccountError::EmailTaken),
                    Err(e) => Err(backend(e, "creating account").into()),
                }
            }

            async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
                let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = $1");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading account"))?
                    .map(|r| account_from_row(&r, ""))
                    .transpose()
            }

            async fn account_by_email(
                &self,
                environment: Environment,
                email: &Email,
            ) -> Result<Option<Account>, StoreError> {
                let sql = format!(
                    "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE environment = $1 AND email = $2"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(environment.as_str())
                    .bind(email.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading account by email"))?
                    .map(|r| account_from_row(&r, ""))
                    .transpose()
            }

            async fn insert_key(&self, key: &ApiKeyRecord) -> Result<(), KeyError> {
                let mut conn = self.writer().acquire().await.map_err(|e| backend(e, "inserting key"))?;
                insert_key_on(&mut conn, key).await.map_err(key_error)
            }

            async fn key_by_hash(
                &self,
                hash: &KeyHash,
            ) -> Result<Option<(ApiKeyRecord, Account)>, StoreError> {
                let sql = format!(
                    "SELECT {KEY_COLUMNS}, a.id AS a_id, a.email AS a_email, a.plan AS a_plan, \
                     a.environment AS a_environment, a.created_at AS a_created_at \
                     FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(hash.to_hex())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "looking up key"))?;
                row.map(|r| Ok((key_from_row(&r)?, account_from_row(&r, "a_")?))).transpose()
            }

            async fn keys(&self, account: Option<AccountId>) -> Result<Vec<ApiKeyRecord>, StoreError> {
                let sql = format!(
                    "SELECT {KEY_COLUMNS} FROM api_keys k WHERE ($1 IS NULL OR k.account_id = $1) \
                     ORDER BY k.created_at, k.id"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(account.as_ref().map(|a| a.as_str().to_owned()))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing keys"))?
                    .iter()
                    .map(key_from_row)
                    .collect()
            }

            async fn revoke_key(
                &self,
                prefix: &KeyPrefix,
                at: DateTime<Utc>,
            ) -> Result<ApiKeyRecord, KeyError> {
                // One statement: only the first revocation matches `revoked_at IS NULL`.
                let sql = format!(
                    "UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL \
                     RETURNING {KEY_COLUMNS_UNQUALIFIED}"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(millis(at))
                    .bind(prefix.as_str())
                    .fetch_optional(self.writer())
                    .await
                    .map_err(|e| backend(e, "revoking key"))?;
                if let Some(r) = row {
                    return Ok(key_from_row(&r)?);
                }
                let exists: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE prefix = $1")
                    .bind(prefix.as_str())
                    .fetch_one(&self.pool)
                    .await
                    .map_err(|e| backend(e, "revoking key"))?;
                Err(if exists > 0 { KeyError::AlreadyRevoked } else { KeyError::NotFound })
            }

            async fn rotate_key(
                &self,
                prefix: &KeyPrefix,
                replacement: &ApiKeyRecord,
                at: DateTime<Utc>,
            ) -> Result<ApiKeyRecord, KeyError> {
                let err = |e| backend(e, "rotating key");
                let mut tx = self.begin_write().await.map_err(err)?;
                let sql = format!(
                    "UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND account_id = $3 \
                     AND revoked_at IS NULL RETURNING {KEY_COLUMNS_UNQUALIFIED}"
                );
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(millis(at))
                    .bind(prefix.as_str())
                    .bind(replacement.account_id.as_str())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err)?;
                let Some(row) = row else {
                    let exists: i64 = sqlx::query_scalar(
                        "SELECT COUNT(*) FROM api_keys WHERE prefix = $1 AND account_id = $2",
                    )
                    .bind(prefix.as_str())
                    .bind(replacement.account_id.as_str())
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(err)?;
                    return Err(if exists > 0 { KeyError::AlreadyRevoked } else { KeyError::NotFound });
                };
                let old = key_from_row(&row)?;
                insert_key_on(&mut tx, replacement).await.map_err(key_error)?;
                tx.commit().await.map_err(err)?;
                Ok(old)
            }
        }

        #[async_trait]
        impl LedgerStore for $store {
            async fn grant(&self, grant: &Grant) -> Result<GrantOutcome, LedgerError> {
                match self.try_grant(grant).await {
                    Ok(outcome) => Ok(outcome),
                    Err(sqlx::Error::RowNotFound) => Err(LedgerError::UnknownAccount),
                    // Lost a race with the same reference on another connection: the winner's
                    // entry is the answer, and this transaction changed nothing.
                    Err(e) if is_unique_violation(&e) && grant.reference.is_some() => {
                        let reference = grant.reference.as_deref().unwrap_or_default();
                        match self.entry_by_reference(&grant.account_id, reference).await? {
                            Some(entry) => Ok(GrantOutcome::AlreadyApplied(entry)),
                            None => Err(backend(e, "applying grant").into()),
                        }
                    }
                    Err(e) => Err(backend(e, "applying grant").into()),
                }
            }

            async fn balance(&self, account: &AccountId) -> Result<Balance, LedgerError> {
                let row = sqlx::query("SELECT spendable, held, frozen FROM accounts WHERE id = $1")
                    .bind(account.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading balance"))?
                    .ok_or(LedgerError::UnknownAccount)?;
                Ok(Balance {
                    spendable: row.try_get("spendable").map_err(|e| backend(e, "reading balance"))?,
                    held: row.try_get("held").map_err(|e| backend(e, "reading balance"))?,
                    frozen: row.try_get("frozen").map_err(|e| backend(e, "reading balance"))?,
                })
            }

            async fn entries(
                &self,
                account: &AccountId,
                limit: u32,
            ) -> Result<Vec<LedgerEntry>, StoreError> {
                let sql = format!(
                    "SELECT {ENTRY_COLUMNS} FROM ledger_entries WHERE account_id = $1 ORDER BY seq DESC LIMIT $2"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(account.as_str())
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| backend(e, "listing ledger entries"))?
                    .iter()
                    .map(entry_from_row)
                    .collect()
            }
        }
    };
}

pub(crate) use impl_sql_stores;

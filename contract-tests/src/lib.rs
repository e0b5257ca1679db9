//! The store contract suite: every scenario runs, unchanged, against the in-memory store, a
//! SQLite file and a fresh Postgres database. `tests/{memory,sqlite,postgres}.rs` instantiate it.
//!
//! Postgres scenarios need `SVC_TEST_POSTGRES_URL` (a server URL whose user may create
//! databases); `scripts/test.sh` starts a throwaway server and sets it. Without it they fail
//! rather than skip, so a green run always means all three stores were checked.

pub mod actions;
pub mod activity;
pub mod authority;
pub mod billing;
pub mod billing_model;
pub mod connections;
pub mod disputes;
pub mod health;
pub mod hooks;
pub mod identity;
pub mod limits;
pub mod money_model;
pub mod postgres_races;
pub mod property;
pub mod samples;
pub mod scenarios;
pub mod sealed;
pub mod shared;
pub mod text;

use std::sync::Arc;

use svc_ports::{
    A2aTaskStore, AccountStore, AuthorityStore, BillingStore, ConnectionStore, HookStore,
    IdentityStore, KeySetStore, LedgerStore, LimitStore, MapStore, PageCache, ScanStore,
    SealedStore, StoreHealth, TaskStore, TelemetryStore,
};

pub struct Backend {
    pub name: &'static str,
    pub accounts: Arc<dyn AccountStore>,
    pub ledger: Arc<dyn LedgerStore>,
    pub pages: Arc<dyn PageCache>,
    pub identity: Arc<dyn IdentityStore>,
    pub maps: Arc<dyn MapStore>,
    pub tasks: Arc<dyn TaskStore>,
    pub telemetry: Arc<dyn TelemetryStore>,
    pub billing: Arc<dyn BillingStore>,
    pub scans: Arc<dyn ScanStore>,
    pub connections: Arc<dyn ConnectionStore>,
    pub authorities: Arc<dyn AuthorityStore>,
    pub health: Arc<dyn StoreHealth>,
    pub limits: Arc<dyn LimitStore>,
    pub a2a_tasks: Arc<dyn A2aTaskStore>,
    pub key_set: Arc<dyn KeySetStore>,
    pub hooks: Arc<dyn HookStore>,
    pub sealed: Arc<dyn SealedStore>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    /// Every port served by one store.
    fn all_in<S>(store: Arc<S>, name: &'static str, dir: Option<tempfile::TempDir>) -> Self
    where
        S: AccountStore
            + LedgerStore
            + PageCache
            + IdentityStore
            + MapStore
            + TaskStore
            + TelemetryStore
            + BillingStore
            + ScanStore
            + ConnectionStore
            + AuthorityStore
            + StoreHealth
            + LimitStore
            + A2aTaskStore
            + KeySetStore
            + HookStore
            + SealedStore
            + 'static,
    {
        Self {
            name,
            accounts: store.clone(),
            ledger: store.clone(),
            pages: store.clone(),
            identity: store.clone(),
            maps: store.clone(),
            tasks: store.clone(),
            telemetry: store.clone(),
            billing: store.clone(),
            scans: store.clone(),
            connections: store.clone(),
            authorities: store.clone(),
            health: store.clone(),
            limits: store.clone(),
            a2a_tasks: store.clone(),
            key_set: store.clone(),
            hooks: store.clone(),
            sealed: store,
            _dir: dir,
        }
    }
}

pub async fn memory() -> Backend {
    let store = Arc::new(svc_sandbox::MemoryStore::new());
    Backend::all_in(store, "memory", None)
}

pub async fn sqlite() -> Backend {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("contract.db").display());
    let store = Arc::new(svc_sql::SqliteStore::open(&url).await.expect("open SQLite"));
    Backend::all_in(store, "sqlite", Some(dir))
}

/// A new, migrated database on the test Postgres server for each scenario.
pub async fn postgres() -> Backend {
    let url = postgres_database().await;
    let store = Arc::new(
        svc_sql::PostgresStore::open(&url, 16)
            .await
            .expect("open Postgres"),
    );
    Backend::all_in(store, "postgres", None)
}

/// Creates an empty database on the test server and returns its URL.
pub async fn postgres_database() -> String {
    use sqlx::Connection;
    let server = std::env::var("SVC_TEST_POSTGRES_URL").expect(
        "SVC_TEST_POSTGRES_URL is not set: run the suite with scripts/test.sh, which starts a Postgres server",
    );
    let name = format!("svc_test_{}", ulid::Ulid::new().to_string().to_lowercase());
    let mut conn = sqlx::PgConnection::connect(&server)
        .await
        .expect("connect to the test Postgres server");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create test database");
    conn.close().await.ok();
    with_database(&server, &name)
}

/// Drops every other connection to the database at `url`, as a restarting server would;
/// answers how many it dropped (0 when the database cannot be reached).
pub async fn drop_connections(url: &str) -> u64 {
    use sqlx::Connection;
    let Ok(mut admin) = sqlx::PgConnection::connect(url).await else {
        return 0;
    };
    let dropped: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap_or_default();
    admin.close().await.ok();
    dropped.into_iter().filter(|d| *d).count() as u64
}

fn with_database(server: &str, name: &str) -> String {
    let (base, query) = match server.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (server, String::new()),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let root = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    format!("{root}/{name}{query}")
}

/// Instantiates every scenario as a test against `$backend` (an async fn returning a
/// [`Backend`]).
#[macro_export]
macro_rules! contract_suite {
    ($backend:path) => {
        $crate::contract_suite!(@each $backend;
            create_and_read_account,
            email_is_unique_per_environment,
            an_account_and_its_opening_grant_are_one_write,
            unknown_accounts_read_as_none,
            keys_are_found_by_hash_with_their_account,
            duplicate_keys_are_refused,
            keys_need_an_existing_account,
            keys_are_listed_oldest_first,
            revocation_happens_once,
            balance_starts_at_zero_and_unknown_accounts_have_none,
            grants_add_credits_and_record_entries,
            grant_references_apply_once,
            grants_to_unknown_accounts_change_nothing,
            entries_are_newest_first_and_limited,
            concurrent_grants_with_one_reference_apply_once,
            concurrent_distinct_grants_all_apply,
            timestamps_keep_millisecond_precision,
            cached_pages_round_trip_whole,
            cached_pages_honour_age_and_replacement,
            purging_removes_only_older_pages
        );
        $crate::contract_suite!(@identity $backend;
            device_grants_round_trip_and_codes_are_unique,
            device_decisions_happen_once_and_not_after_expiry,
            device_keys_are_issued_once,
            challenge_tries_are_capped,
            challenges_are_consumed_once_with_their_key,
            sessions_expire_and_end_on_sign_out,
            known_browsers_are_kept_until_they_expire,
            challenges_stop_at_the_cap_even_when_racing,
            keys_rotate_in_one_step,
            key_uses_are_recorded_and_never_go_back,
            identity_purge_removes_only_expired_records
        );
        $crate::contract_suite!(@actions $backend;
            maps_are_versioned_and_one_is_published,
            tasks_hold_then_charge_or_refund,
            a_settlement_whose_own_id_is_taken_changes_nothing,
            insufficient_credits_store_nothing,
            idempotency_keys_replay_refuse_and_conflict,
            concurrent_requests_with_one_key_hold_once,
            unsettled_tasks_are_listed_for_recovery,
            payment_verifications_are_stored_once,
            telemetry_batches_are_stored_whole_and_counted,
            scan_reports_round_trip_whole
        );
        $crate::contract_suite!(@activity $backend;
            tasks_are_listed_newest_first_a_page_at_a_time,
            usage_per_day_adds_up_to_the_ledger,
            usage_counts_what_a_lost_dispute_takes
        );
        $crate::contract_suite!(@billing $backend;
            checkouts_are_unique_per_idempotency_key,
            payments_credit_once_and_replays_change_nothing,
            events_out_of_order_end_in_the_right_balance,
            concurrent_deliveries_apply_once,
            a_checkout_is_credited_once_whatever_its_payment_ids,
            unknown_and_mismatched_events_move_nothing,
            handoffs_are_taken_once_and_not_after_expiry,
            meter_events_are_recorded_once,
            a_refund_while_actions_run_is_paid_by_those_that_fail,
            a_refund_claims_only_the_actions_in_flight_when_it_arrived,
            refunds_racing_settlements_leave_nothing_owed
        );
        $crate::contract_suite!(@disputes $backend;
            a_dispute_while_actions_run_freezes_what_those_that_fail_give_back,
            a_closed_dispute_claims_nothing_of_actions_still_in_flight,
            disputes_racing_failures_freeze_every_credit,
            two_disputes_are_served_by_one_failed_action,
            a_refund_and_another_payments_dispute_share_the_failures,
            a_refund_during_a_dispute_takes_what_the_dispute_froze_once_the_rest_is_spent,
            a_write_off_during_another_payments_dispute_is_paid_back_by_its_release,
            a_dispute_that_froze_nothing_releases_nothing_when_won,
            a_claim_ends_with_the_credits_in_flight_it_was_made_of,
            a_late_settlement_leaves_the_claims_alone,
            an_action_that_completes_shrinks_the_newest_claim_by_what_it_spent,
            claims_made_within_one_millisecond_are_served_in_payment_id_order
        );

        $crate::contract_suite!(@connections $backend;
            connections_are_stored_and_found,
            connections_finish_once,
            racing_finishes_have_one_winner,
            credentials_refresh_only_when_connected,
            connections_expire_once,
            newer_attempts_do_not_hide_a_connected_one
        );
        $crate::contract_suite!(@sealed $backend;
            sealed_values_are_read_once_and_replaced_only_while_unchanged
        );
        $crate::contract_suite!(@health $backend;
            a_migrated_store_answers_and_is_current
        );
        $crate::contract_suite!(@limits $backend;
            hits_are_allowed_up_to_the_limit_then_limited_until_the_window_ends,
            buckets_and_keys_are_independent,
            a_released_hit_is_given_back_within_its_window_only,
            purging_deletes_only_ended_windows,
            concurrent_hits_allow_exactly_the_limit
        );
        $crate::contract_suite!(@shared $backend;
            a2a_tasks_read_back_exactly_until_they_expire,
            a2a_tasks_are_never_replaced,
            a2a_purge_removes_only_expired_tasks,
            the_first_key_is_recorded_once_per_kind,
            rotated_keys_join_the_record_once,
            racing_first_starts_record_exactly_one_key
        );
        $crate::contract_suite!(@hooks $backend;
            endpoints_are_stored_listed_and_deleted_per_account,
            events_are_stored_once_per_source_with_their_deliveries,
            a_settlement_stores_its_event_only_when_it_lands,
            events_go_to_subscribed_endpoints_oldest_first,
            many_endpoints_get_the_ids_nth_spells,
            attempts_are_recorded_only_under_their_lease,
            concurrent_claims_hand_out_each_delivery_once,
            claims_keep_each_endpoint_and_account_within_its_caps,
            claims_take_answering_or_failing_endpoints_as_asked,
            an_endpoint_has_at_most_its_cap_of_replays_waiting,
            the_feed_never_steps_over_an_event_committed_after_a_newer_id,
            replays_are_new_deliveries_and_deletion_cancels,
            settled_tasks_without_their_event_are_found,
            credited_payments_without_their_event_are_found,
            expired_connections_without_their_event_are_found,
            charges_that_crossed_the_low_mark_without_their_event_are_found,
            payments_that_used_up_their_authority_without_their_event_are_found,
            sweep_marks_move_forward_only_and_per_sweep
        );
        $crate::contract_suite!(@authority $backend;
            authorities_are_stored_listed_and_revoked,
            refused_spends_store_nothing,
            replays_spend_once,
            failed_settlement_gives_the_spend_back,
            single_use_is_spent_at_most_once,
            windows_reset_on_schedule,
            concurrent_spends_stay_within_the_limit
        );

        #[test]
        fn billing_books_equal_the_model_over_random_provider_events() {
            $crate::billing_model::billing_model_property(|| Box::pin($backend()));
        }

        #[test]
        fn refunds_and_disputes_never_return_through_actions_in_flight() {
            $crate::money_model::money_model_property(|| Box::pin($backend()));
        }

        #[test]
        fn provider_events_that_arrive_together_leave_the_same_books_in_either_order() {
            $crate::money_model::money_order_property(|| Box::pin($backend()));
        }

        #[test]
        fn authority_limits_hold_over_random_spends() {
            $crate::authority::authority_property(|| Box::pin($backend()));
        }

        #[test]
        fn money_invariants_hold_over_random_executions() {
            $crate::actions::execution_property(|| Box::pin($backend()));
        }

        #[test]
        fn balance_always_equals_the_sum_of_entries() {
            $crate::scenarios::ledger_property(|| Box::pin($backend()));
        }

        #[test]
        fn text_with_nul_and_any_unicode_reads_back_unchanged() {
            $crate::text::text_property(|| Box::pin($backend()));
        }
    };
    (@actions $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::actions::$name(&backend).await;
            }
        )+
    };
    (@activity $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::activity::$name(&backend).await;
            }
        )+
    };
    (@connections $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::connections::$name(&backend).await;
            }
        )+
    };
    (@sealed $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::sealed::$name(&backend).await;
            }
        )+
    };
    (@health $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::health::$name(&backend).await;
            }
        )+
    };
    (@limits $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::limits::$name(&backend).await;
            }
        )+
    };
    (@shared $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::shared::$name(&backend).await;
            }
        )+
    };
    (@hooks $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::hooks::$name(&backend).await;
            }
        )+
    };
    (@authority $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::authority::$name(&backend).await;
            }
        )+
    };
    (@billing $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::billing::$name(&backend).await;
            }
        )+
    };
    (@disputes $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::disputes::$name(&backend).await;
            }
        )+
    };
    (@identity $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::identity::$name(&backend).await;
            }
        )+
    };
    (@each $backend:path; $($name:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $backend().await;
                $crate::scenarios::$name(&backend).await;
            }
        )+
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_names_replace_the_path() {
        assert_eq!(
            super::with_database("postgres://u@h:5/postgres", "x"),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            super::with_database("postgres://u@h:5", "x"),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            super::with_database("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}

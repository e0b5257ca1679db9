-- The tables every execution writes (accounts, tasks, ledger entries, webhook deliveries),
-- made cheaper to write without loosening a rule. Measured on the execution benchmark
-- (bench/RESULTS.md, issue 17): Postgres spent a seventh of its time re-reading CHECK
-- constraints, which the executor parses from their stored text at every statement, and
-- about a twelfth inserting index entries for columns that are still NULL.

-- Changing these columns' types rewrites the four tables under an exclusive lock, and a running
-- older instance's prepared statements that return them fail until it reconnects: stop the
-- older instances, migrate, start the new release (README, "Migrations").
--
-- 1. Single-column rules become domains. A domain's rule is parsed once per connection (the
--    type cache keeps it) and is checked only where a value is assigned, so a balance update
--    checks the two balances it sets, not the account's plan and environment as well. The
--    rules are the same as the CHECKs they replace; the rule over two columns of a task stays
--    a table CHECK.
CREATE DOMAIN svc_credits AS BIGINT CHECK (VALUE >= 0);
CREATE DOMAIN svc_count AS BIGINT CHECK (VALUE >= 0);
CREATE DOMAIN svc_http_status AS BIGINT CHECK (VALUE BETWEEN 100 AND 599);
CREATE DOMAIN svc_plan AS TEXT
    CHECK (VALUE IN ('sandbox', 'free', 'starter', 'enterprise'));
CREATE DOMAIN svc_environment AS TEXT CHECK (VALUE IN ('live', 'test'));
CREATE DOMAIN svc_task_status AS TEXT CHECK (VALUE IN ('in_flight', 'completed', 'failed'));
CREATE DOMAIN svc_ledger_kind AS TEXT
    CHECK (VALUE IN ('grant', 'hold', 'capture', 'refund', 'purchase', 'clawback', 'freeze',
                     'release', 'forfeit'));
CREATE DOMAIN svc_delivery_status AS TEXT
    CHECK (VALUE IN ('pending', 'succeeded', 'failed', 'canceled'));

ALTER TABLE accounts
    DROP CONSTRAINT accounts_plan_check,
    DROP CONSTRAINT accounts_environment_check,
    DROP CONSTRAINT accounts_spendable_check,
    DROP CONSTRAINT accounts_held_check,
    DROP CONSTRAINT accounts_frozen_check,
    ALTER COLUMN plan TYPE svc_plan,
    ALTER COLUMN environment TYPE svc_environment,
    ALTER COLUMN spendable TYPE svc_credits,
    ALTER COLUMN held TYPE svc_credits,
    ALTER COLUMN frozen TYPE svc_credits;

ALTER TABLE tasks
    DROP CONSTRAINT tasks_cost_check,
    DROP CONSTRAINT tasks_status_check,
    DROP CONSTRAINT tasks_response_status,
    ALTER COLUMN cost TYPE svc_credits,
    ALTER COLUMN status TYPE svc_task_status,
    ALTER COLUMN response_status TYPE svc_http_status;

ALTER TABLE ledger_entries
    DROP CONSTRAINT ledger_entries_kind,
    DROP CONSTRAINT ledger_entries_balance_after,
    ALTER COLUMN kind TYPE svc_ledger_kind,
    ALTER COLUMN balance_after TYPE svc_credits;

ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_status_check,
    DROP CONSTRAINT webhook_deliveries_attempts_check,
    ALTER COLUMN status TYPE svc_delivery_status,
    ALTER COLUMN attempts TYPE svc_count;

-- 2. A task's indexes on columns that are NULL (or a status that is over) for most of its
--    life only hold the rows where they are set: a begin then writes three index entries
--    instead of eight, a settlement five. Every query that uses them names the column with
--    an operator that excludes NULL, or the status, so each is still usable. Uniqueness is
--    unchanged: NULLs never conflicted.
ALTER TABLE tasks DROP CONSTRAINT tasks_account_id_idempotency_key_key;
CREATE UNIQUE INDEX tasks_by_idempotency_key ON tasks (account_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE tasks DROP CONSTRAINT tasks_artifact_id_key;
CREATE UNIQUE INDEX tasks_by_artifact_id ON tasks (artifact_id) WHERE artifact_id IS NOT NULL;
DROP INDEX tasks_verified_artifact_id;
CREATE UNIQUE INDEX tasks_verified_artifact_id ON tasks (verified_artifact_id)
    WHERE verified_artifact_id IS NOT NULL;
-- Recovery looks for tasks still in flight past a cutoff.
DROP INDEX tasks_by_status;
CREATE INDEX tasks_in_flight ON tasks (created_at) WHERE status = 'in_flight';
DROP INDEX tasks_by_account;
CREATE INDEX tasks_by_account ON tasks (account_id, settled_at) WHERE settled_at IS NOT NULL;
DROP INDEX tasks_by_settled_at;
CREATE INDEX tasks_by_settled_at ON tasks (settled_at) WHERE settled_at IS NOT NULL;

-- 3. A settled task's row (its answer and signed artifact, about 2 kB of mostly signatures
--    and hashes) passes the 2 kB mark at which Postgres tries to compress it, and pglz found
--    almost nothing to save, every time. Rows stay whole up to a page; longer ones are still
--    compressed and moved out of line.
ALTER TABLE tasks SET (toast_tuple_target = 8160);

-- Postgres as Postgres, keeping every row: times become TIMESTAMPTZ (they were BIGINT
-- milliseconds since the epoch), hashes become BYTEA (they were hex TEXT), the JSON documents
-- the store or an operator queries become JSONB, and enums and amounts get the CHECKs they
-- lacked. Documents that hold third parties' text verbatim (task answers and artifacts, which
-- are signed as exact strings; scan reports, which quote pages) stay TEXT: JSONB would reorder
-- them and refuses an escaped NUL a page may carry. Agent maps stay TEXT for the same reason:
-- a learned map quotes the labels of a site's forms, and a label may hold a NUL.
-- The JSONB documents never hold a NUL: agent events with one are refused (422) before they
-- are queued, payment facts hold only provider identifiers (printable ASCII) and fixed
-- reasons, redirects and robots decisions are serialised URLs (which escape control
-- characters); the store refuses one with a clear error rather than a failed statement.

-- Exact: whole hours as an integer, the rest (under an hour) to the millisecond. The
-- microseconds are computed without floating point rounding on far-off dates.
CREATE FUNCTION svc_ms_to_timestamptz(ms BIGINT) RETURNS TIMESTAMPTZ
    LANGUAGE SQL IMMUTABLE STRICT
    AS $$ SELECT TIMESTAMPTZ '1970-01-01 00:00:00+00'
        + make_interval(hours => (ms / 3600000)::INT, secs => (ms % 3600000) / 1000.0) $$;

-- ---- times ----------------------------------------------------------------------------------
ALTER TABLE accounts
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at);
ALTER TABLE api_keys
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN revoked_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(revoked_at);
ALTER TABLE ledger_entries
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at);
ALTER TABLE page_cache
    ALTER COLUMN fetched_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(fetched_at);
ALTER TABLE device_grants
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at),
    ALTER COLUMN last_polled_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(last_polled_at);
ALTER TABLE email_challenges
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at),
    ALTER COLUMN consumed_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(consumed_at);
ALTER TABLE web_sessions
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at);
ALTER TABLE agent_maps
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(updated_at);
ALTER TABLE tasks
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN settled_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(settled_at),
    ALTER COLUMN verified_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(verified_at);
ALTER TABLE agent_events
    ALTER COLUMN received_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(received_at);
ALTER TABLE checkouts
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at);
ALTER TABLE payment_events
    ALTER COLUMN received_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(received_at);
ALTER TABLE receipts
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at);
ALTER TABLE checkout_handoffs
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at),
    ALTER COLUMN taken_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(taken_at);
ALTER TABLE meter_events
    ALTER COLUMN occurred_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(occurred_at),
    ALTER COLUMN recorded_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(recorded_at),
    ALTER COLUMN forwarded_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(forwarded_at);
ALTER TABLE readiness_scans
    ALTER COLUMN completed_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(completed_at);
ALTER TABLE connections
    ALTER COLUMN credentials_expire_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(credentials_expire_at),
    ALTER COLUMN link_expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(link_expires_at),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(updated_at);
ALTER TABLE payment_authorities
    ALTER COLUMN expires_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(expires_at),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(created_at),
    ALTER COLUMN revoked_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(revoked_at);
ALTER TABLE authority_spends
    ALTER COLUMN window_start TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(window_start),
    ALTER COLUMN spent_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(spent_at),
    ALTER COLUMN released_at TYPE TIMESTAMPTZ USING svc_ms_to_timestamptz(released_at);

DROP FUNCTION svc_ms_to_timestamptz(BIGINT);

-- ---- hashes: SHA-256, 32 bytes -------------------------------------------------------------
ALTER TABLE api_keys
    ALTER COLUMN hash TYPE BYTEA USING decode(hash, 'hex'),
    ADD CONSTRAINT api_keys_hash_is_sha256 CHECK (octet_length(hash) = 32);
ALTER TABLE device_grants
    ALTER COLUMN device_code_hash TYPE BYTEA USING decode(device_code_hash, 'hex'),
    ADD CONSTRAINT device_grants_hash_is_sha256 CHECK (octet_length(device_code_hash) = 32);
ALTER TABLE email_challenges
    ALTER COLUMN code_hash TYPE BYTEA USING decode(code_hash, 'hex'),
    ADD CONSTRAINT email_challenges_hash_is_sha256 CHECK (octet_length(code_hash) = 32);
ALTER TABLE web_sessions
    ALTER COLUMN token_hash TYPE BYTEA USING decode(token_hash, 'hex'),
    ADD CONSTRAINT web_sessions_hash_is_sha256 CHECK (octet_length(token_hash) = 32);
ALTER TABLE checkout_handoffs
    ALTER COLUMN token_hash TYPE BYTEA USING decode(token_hash, 'hex'),
    ADD CONSTRAINT checkout_handoffs_hash_is_sha256 CHECK (octet_length(token_hash) = 32);
ALTER TABLE connections
    ALTER COLUMN oauth_state_hash TYPE BYTEA USING decode(oauth_state_hash, 'hex'),
    ADD CONSTRAINT connections_state_hash_is_sha256
        CHECK (octet_length(oauth_state_hash) = 32);

-- ---- JSON documents the store or an operator queries ---------------------------------------
ALTER TABLE agent_events ALTER COLUMN event TYPE JSONB USING event::jsonb;
ALTER TABLE payment_events ALTER COLUMN fact TYPE JSONB USING fact::jsonb;
ALTER TABLE page_cache
    ALTER COLUMN redirects TYPE JSONB USING redirects::jsonb,
    ALTER COLUMN robots TYPE JSONB USING robots::jsonb,
    ADD CONSTRAINT page_cache_redirects_array CHECK (jsonb_typeof(redirects) = 'array'),
    ADD CONSTRAINT page_cache_robots_object CHECK (jsonb_typeof(robots) = 'object');
ALTER TABLE payment_events
    ADD CONSTRAINT payment_events_fact_object CHECK (jsonb_typeof(fact) = 'object');

-- ---- enums, flags and amounts ----------------------------------------------------------------
-- 0002's CHECK (truncated IN (0, 1)) goes first: it cannot compare a boolean.
ALTER TABLE page_cache
    DROP CONSTRAINT page_cache_truncated_check,
    ALTER COLUMN truncated TYPE BOOLEAN USING truncated <> 0,
    -- What an HTTP client accepts as a status: three digits, 100 to 999.
    ADD CONSTRAINT page_cache_status_is_http CHECK (status BETWEEN 100 AND 999);
ALTER TABLE ledger_entries
    ADD CONSTRAINT ledger_entries_kind CHECK (kind IN ('grant', 'hold', 'capture', 'refund',
        'purchase', 'clawback', 'freeze', 'release', 'forfeit')),
    -- The spendable balance after the entry, which is never negative.
    ADD CONSTRAINT ledger_entries_balance_after CHECK (balance_after >= 0);
ALTER TABLE receipts
    ADD CONSTRAINT receipts_kind CHECK (kind IN ('purchase', 'refund_clawback', 'dispute_freeze',
        'dispute_release', 'dispute_forfeit', 'action_charge', 'action_refund')),
    ADD CONSTRAINT receipts_amount_positive CHECK (amount IS NULL OR amount > 0),
    ADD CONSTRAINT receipts_currency_iso CHECK (currency IS NULL OR currency ~ '^[a-z]{3}$');
ALTER TABLE checkouts
    ADD CONSTRAINT checkouts_currency_iso CHECK (currency ~ '^[a-z]{3}$'),
    ADD CONSTRAINT checkouts_plan CHECK (plan IN ('sandbox', 'free', 'starter', 'enterprise'));
ALTER TABLE payment_authorities
    ADD CONSTRAINT payment_authorities_currency_iso CHECK (currency ~ '^[a-z]{3}$');
ALTER TABLE authority_spends
    ADD CONSTRAINT authority_spends_currency_iso CHECK (currency ~ '^[a-z]{3}$');
ALTER TABLE readiness_scans
    ADD CONSTRAINT readiness_scans_score CHECK (score BETWEEN 0 AND 100),
    ADD CONSTRAINT readiness_scans_level
        CHECK (level IN ('not_ready', 'basic', 'discoverable', 'executable', 'agent_ready'));
ALTER TABLE tasks
    ADD CONSTRAINT tasks_response_status CHECK (response_status IS NULL
        OR response_status BETWEEN 100 AND 599);
ALTER TABLE meter_events ADD CONSTRAINT meter_events_value CHECK (value >= 0);

-- ---- rows that belong to rows ------------------------------------------------------------------
-- NOT VALID: enforced for every new row; rows written before this migration are kept as they
-- are (the application never wrote an orphan, but a failed validation must not stop a start).
-- A task's key_id is not one: the TaskStore contract stores a task under any key id (the key
-- is checked by the caller, and a task outlives its key's record only as a name).
ALTER TABLE agent_events
    ADD CONSTRAINT agent_events_account FOREIGN KEY (account_id) REFERENCES accounts (id) NOT VALID;
ALTER TABLE meter_events
    ADD CONSTRAINT meter_events_account FOREIGN KEY (account_id) REFERENCES accounts (id) NOT VALID;
ALTER TABLE receipts
    ADD CONSTRAINT receipts_checkout FOREIGN KEY (checkout_id) REFERENCES checkouts (id) NOT VALID;

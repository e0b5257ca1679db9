-- Write-offs that disputes' frozen credits may still pay back (ports/src/billing/liens.rs): what
-- a refund or a lost dispute could not take back while other disputes held as many credits
-- frozen. The first credits a dispute releases pay the oldest lien back (a `recovery:` receipt
-- of the payment that wrote them off); liens never add up to more than the account's frozen
-- credits, and the newest shrink first. Every payment event of the account replaces its rows.
--
-- A new table only, but an older instance would count a recovery receipt in its payment's own
-- books: stop older instances before newer ones start (README, "Migrations").
CREATE TABLE write_off_liens (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    -- The movement that wrote the credits off, and its payment and receipt kind.
    reference  TEXT NOT NULL,
    payment_id TEXT NOT NULL,
    kind       TEXT NOT NULL,
    credits    BIGINT NOT NULL CHECK (credits > 0),
    since      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, reference)
);

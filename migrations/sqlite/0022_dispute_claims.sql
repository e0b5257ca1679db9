-- What open disputes claim of the credits actions in flight hold (ports/src/billing/plan.rs,
-- `freeze_claim`): what a dispute should freeze but spendable could not cover when it opened,
-- at most what the account's actions in flight held that refunds and other claims did not.
-- Every event of the payment replaces its claim, so a closed dispute claims nothing. The
-- credits a failed action gives back (after its clawback) serve the claims oldest first
-- (`serve_claims` in ports/src/billing/mod.rs): each freeze is a row of `task_freezes`, read
-- back as a receipt of the payment's (reference `task:{id}:freeze:{payment}`), with one
-- `freeze` entry in the ledger for the task.
CREATE TABLE freeze_claims (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    payment_id TEXT NOT NULL,
    credits    INTEGER NOT NULL CHECK (credits > 0),
    -- The order claims are served in: when the claim was first made.
    since      BIGINT NOT NULL,
    PRIMARY KEY (account_id, payment_id)
);

CREATE TABLE task_freezes (
    task_id    TEXT NOT NULL REFERENCES tasks (id),
    account_id TEXT NOT NULL REFERENCES accounts (id),
    payment_id TEXT NOT NULL,
    credits    INTEGER NOT NULL CHECK (credits > 0),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (task_id, payment_id)
);
CREATE INDEX task_freezes_by_payment ON task_freezes (account_id, payment_id);

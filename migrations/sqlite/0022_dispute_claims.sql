-- What open disputes claim of actions in flight: the credits a dispute should freeze but
-- spendable could not cover, spread over the account's actions in flight oldest first, each up
-- to what refunds do not already claim of it (`tasks.freeze_claim`, for the payment
-- `tasks.freeze_payment`). A failed action's refund then freezes its share (an entry and a
-- receipt of the payment's, reference `task:{id}:freeze`); a completed one spent its credits.
-- Every event of the payment replaces its claims by what is left to freeze, so a closed
-- dispute claims nothing.
ALTER TABLE tasks ADD COLUMN freeze_claim INTEGER NOT NULL DEFAULT 0 CHECK (freeze_claim >= 0 AND freeze_claim <= cost);
ALTER TABLE tasks ADD COLUMN freeze_payment TEXT;

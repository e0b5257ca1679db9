-- Credits refunded or lost payments still claim from what actions in flight hold
-- (`spread_owed` in ports/src/ledger.rs): the claim is spread over those actions, each up to
-- its cost (`tasks.owed`); a failed action gives its cost back and a clawback entry takes its
-- share, a completed one's share is dropped (its credits were spent). What an account's
-- actions in flight owe is the sum of their shares: derived, not kept beside it.
ALTER TABLE tasks ADD COLUMN owed INTEGER NOT NULL DEFAULT 0 CHECK (owed >= 0 AND owed <= cost);

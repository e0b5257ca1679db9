-- Credits a refunded or lost payment still claims from what actions in flight hold
-- (`Balance::owed` in ports/src/ledger.rs): a failed action pays toward it from the credits it
-- gives back. Always between 0 and `held`; the stores keep the upper bound.
ALTER TABLE accounts ADD COLUMN owed INTEGER NOT NULL DEFAULT 0 CHECK (owed >= 0);

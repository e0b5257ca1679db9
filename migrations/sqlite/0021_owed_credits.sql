-- Credits refunded or lost payments still claim from what actions in flight hold
-- (`Balance::owed` in ports/src/ledger.rs): the claim is spread over those actions, each up to
-- its cost (`tasks.owed`); a failed action pays its share from the credits it gives back, a
-- completed one's share is dropped (its credits were spent). `accounts.owed` is the sum of
-- the shares of the account's actions in flight.
ALTER TABLE accounts ADD COLUMN owed INTEGER NOT NULL DEFAULT 0 CHECK (owed >= 0);
ALTER TABLE tasks ADD COLUMN owed INTEGER NOT NULL DEFAULT 0 CHECK (owed >= 0);

-- The recovery job looks for receipts of the last hour without their credits.added event
-- every few seconds, across accounts: by creation time, not a scan of every receipt.
CREATE INDEX receipts_by_creation ON receipts (created_at);

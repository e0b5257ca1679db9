-- The Web Bot Auth key joins the record of the keys the instances sharing this database use
-- (by keyid, never the key).
ALTER TABLE key_set DROP CONSTRAINT key_set_kind_check;
ALTER TABLE key_set ADD CONSTRAINT key_set_kind_check
    CHECK (kind IN ('signing', 'connection', 'web_bot_auth'));

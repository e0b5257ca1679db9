-- The Web Bot Auth key joins the record of the keys the instances sharing this database use
-- (by keyid, never the key). SQLite cannot change a CHECK in place: the table is rebuilt with
-- every row.
CREATE TABLE key_set_new (
    kind        TEXT NOT NULL CHECK (kind IN ('signing', 'connection', 'web_bot_auth')),
    fingerprint TEXT NOT NULL,
    is_first    INTEGER NOT NULL CHECK (is_first IN (0, 1)),
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (kind, fingerprint)
);
INSERT INTO key_set_new (kind, fingerprint, is_first, recorded_at)
    SELECT kind, fingerprint, is_first, recorded_at FROM key_set;
DROP TABLE key_set;
ALTER TABLE key_set_new RENAME TO key_set;
CREATE UNIQUE INDEX key_set_one_first ON key_set (kind) WHERE is_first = 1;

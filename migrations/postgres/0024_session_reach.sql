-- What a web session may do (ports/src/identity.rs, `SessionReach`): `account`, signed in with
-- an e-mailed code, or `checkout`, signed in by an agent's handoff link and held to the
-- checkout it opened. Existing sessions were all signed in by code. Older instances insert
-- without the column and get `account`, which is what they meant: safe to roll.
ALTER TABLE web_sessions
    ADD COLUMN reach TEXT NOT NULL DEFAULT 'account' CHECK (reach IN ('account', 'checkout'));

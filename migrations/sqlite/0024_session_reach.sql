-- What a web session may do (ports/src/identity.rs, `SessionReach`): `account`, signed in with
-- an e-mailed code, or `checkout`, signed in by an agent's handoff link and held to the
-- checkout it opened.
--
-- The default is the lesser reach (as on Postgres, where an older instance may still insert
-- without the column). Sessions from before are full unless a handoff link of their account
-- was taken within the minute before they began: the request that takes a link opened its
-- session then (the older release opened a full one). Times are milliseconds here.
ALTER TABLE web_sessions
    ADD COLUMN reach TEXT NOT NULL DEFAULT 'checkout' CHECK (reach IN ('account', 'checkout'));
UPDATE web_sessions SET reach = 'account'
WHERE NOT EXISTS (
    SELECT 1 FROM checkout_handoffs AS h
    WHERE h.account_id = web_sessions.account_id
      AND h.taken_at IS NOT NULL
      AND h.taken_at BETWEEN web_sessions.created_at - 60000 AND web_sessions.created_at
);

-- What a web session may do (ports/src/identity.rs, `SessionReach`): `account`, signed in with
-- an e-mailed code, or `checkout`, signed in by an agent's handoff link and held to the
-- checkout it opened.
--
-- The default is the lesser reach: an older instance still running beside this release
-- inserts without the column, and its handoff sessions must not be full ones (its code
-- sign-ins then ask for a code again on a newer instance). Sessions from before are full
-- unless a handoff link of their account was taken within the minute before they began: the
-- request that takes a link opened its session then (the older release opened a full one).
ALTER TABLE web_sessions
    ADD COLUMN reach TEXT NOT NULL DEFAULT 'checkout' CHECK (reach IN ('account', 'checkout'));
UPDATE web_sessions AS s SET reach = 'account'
WHERE NOT EXISTS (
    SELECT 1 FROM checkout_handoffs AS h
    WHERE h.account_id = s.account_id
      AND h.taken_at IS NOT NULL
      AND h.taken_at BETWEEN s.created_at - INTERVAL '1 minute' AND s.created_at
);

-- A challenge started by a browser that signed in as its address before (the browser's mark,
-- 0025). Wrong codes are counted apart for these and the others: strangers' guesses lock an
-- address's codes for a day, and without this they locked the person's own browser out too.
ALTER TABLE email_challenges ADD COLUMN known_browser BOOLEAN NOT NULL DEFAULT FALSE;

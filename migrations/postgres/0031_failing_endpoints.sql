-- When an endpoint's last attempt failed (NULL: it succeeded, or none was made yet). The
-- sender gives failing endpoints a few senders of their own, so endpoints that hang cannot
-- take the senders of those that answer.
ALTER TABLE webhook_endpoints ADD COLUMN failing_since TIMESTAMPTZ;

-- Agent traffic events (POST /telemetry/agent-event), stored after redaction.
CREATE TABLE agent_events (
    id                TEXT PRIMARY KEY,
    received_at       BIGINT NOT NULL,
    event_id          TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    agent_protocol    TEXT NOT NULL,
    discovery_surface TEXT NOT NULL,
    conversion_state  TEXT NOT NULL,
    task_type         TEXT NOT NULL,
    event             TEXT NOT NULL -- the redacted event, JSON
);
CREATE INDEX agent_events_funnel ON agent_events (discovery_surface, conversion_state);
CREATE INDEX agent_events_by_time ON agent_events (received_at);

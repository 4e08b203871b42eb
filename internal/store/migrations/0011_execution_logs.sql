-- When a worker first reported an execution RUNNING; NULL until one did.
ALTER TABLE executions ADD COLUMN started_at INTEGER;

-- The log lines workers appended to an execution, oldest first by seq (the
-- order they were recorded in). size is what the line counts against the
-- execution's cap: its message's bytes and a fixed overhead.
CREATE TABLE execution_logs (
    seq     INTEGER PRIMARY KEY,
    fire_id TEXT NOT NULL,
    at      INTEGER NOT NULL,
    level   TEXT NOT NULL CHECK (level IN ('info', 'error')),
    message TEXT NOT NULL,
    worker  TEXT NOT NULL DEFAULT '',
    size    INTEGER NOT NULL
);

CREATE INDEX execution_logs_by_fire ON execution_logs (fire_id, seq);

-- Per execution: the bytes and lines of its log kept, how many of its
-- oldest lines were dropped to keep under the cap, and when its last line
-- was recorded, which the retention counts from.
CREATE TABLE execution_log_totals (
    fire_id     TEXT PRIMARY KEY,
    bytes       INTEGER NOT NULL DEFAULT 0,
    lines       INTEGER NOT NULL DEFAULT 0,
    dropped     INTEGER NOT NULL DEFAULT 0,
    last_at     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX execution_log_totals_by_last ON execution_log_totals (last_at);

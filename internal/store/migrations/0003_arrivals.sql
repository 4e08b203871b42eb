-- Files on their way in, from the moment a watcher sees one until its batch
-- is recorded (the row is then deleted), or failed before its content could
-- be recorded (the row stays, saying why, until the same name arrives
-- again).
CREATE TABLE arrivals (
    id            TEXT PRIMARY KEY,
    file          TEXT NOT NULL,
    folder        TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('received', 'converting', 'failed')),
    node          TEXT NOT NULL DEFAULT '',
    detail        TEXT NOT NULL DEFAULT '',
    first_seen_at INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX arrivals_by_updated ON arrivals (updated_at DESC);

-- A file's page lists the fires of the tasks it created.
CREATE INDEX executions_by_batch ON executions (batch_id, coalesce(fired_at, status_at) DESC);

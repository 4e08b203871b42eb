-- The retries the engine waits to fire: a watched run whose last attempt
-- failed, with its next attempt and when it fires (record.RunState's
-- retryAt), as the run's latest record on the state topic says. A run's
-- row goes once its next attempt fires or the run ends.
CREATE TABLE pending_retries (
    run      TEXT PRIMARY KEY,
    task     TEXT NOT NULL,
    attempt  INTEGER NOT NULL,
    retry_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX pending_retries_by_task ON pending_retries (task, retry_at);

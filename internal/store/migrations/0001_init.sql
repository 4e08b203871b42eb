-- Times are UTC epoch milliseconds, as on the wire.

-- One row per dropped file, keyed by the SHA-256 of its content.
CREATE TABLE batches (
    id                TEXT PRIMARY KEY,
    file              TEXT NOT NULL,
    folder            TEXT NOT NULL DEFAULT '',
    size              INTEGER NOT NULL DEFAULT 0,
    rows              INTEGER NOT NULL DEFAULT 0,
    rejected          INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL CHECK (status IN ('injected', 'rejected', 'duplicate')),
    errors            TEXT NOT NULL DEFAULT '',
    duplicates        INTEGER NOT NULL DEFAULT 0,
    last_duplicate_at INTEGER,
    first_seen_at     INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX batches_by_updated ON batches (updated_at DESC);

-- The latest state of every task the engine has written.
CREATE TABLE tasks (
    key         TEXT PRIMARY KEY,
    host        TEXT NOT NULL,
    name        TEXT NOT NULL,
    topic       TEXT NOT NULL DEFAULT '',
    schedule    TEXT NOT NULL DEFAULT '',
    definition  TEXT NOT NULL DEFAULT '',
    anchor      INTEGER,
    next_fire   INTEGER,
    fire_count  INTEGER NOT NULL DEFAULT 0,
    last_fire   INTEGER,
    batch_id    TEXT NOT NULL DEFAULT '',
    source_file TEXT NOT NULL DEFAULT '',
    source_row  INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL CHECK (status IN ('active', 'completed', 'deleted')),
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX tasks_by_batch ON tasks (batch_id, key);
CREATE INDEX tasks_by_status_next_fire ON tasks (status, next_fire);
CREATE INDEX tasks_by_host ON tasks (host, key);

-- One row per fire, and what its worker reported.
CREATE TABLE executions (
    fire_id          TEXT PRIMARY KEY,
    host             TEXT NOT NULL DEFAULT '',
    name             TEXT NOT NULL DEFAULT '',
    topic            TEXT NOT NULL DEFAULT '',
    target_partition INTEGER NOT NULL DEFAULT 0,
    target_offset    INTEGER NOT NULL DEFAULT 0,
    scheduled_at     INTEGER,
    fired_at         INTEGER,
    batch_id         TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('FIRED', 'RUNNING', 'SUCCESS', 'FAILED')),
    status_message   TEXT NOT NULL DEFAULT '',
    status_worker    TEXT NOT NULL DEFAULT '',
    status_at        INTEGER
);

CREATE INDEX executions_by_task ON executions (host, name, scheduled_at DESC);
CREATE INDEX executions_by_recent ON executions (coalesce(fired_at, status_at) DESC);
CREATE INDEX executions_by_status ON executions (status);

-- The audit trail, in the order it was recorded.
CREATE TABLE audit (
    seq      INTEGER PRIMARY KEY,
    id       TEXT NOT NULL UNIQUE,
    at       INTEGER NOT NULL,
    actor    TEXT NOT NULL DEFAULT '',
    action   TEXT NOT NULL DEFAULT '',
    object   TEXT NOT NULL DEFAULT '',
    outcome  TEXT NOT NULL DEFAULT '',
    detail   TEXT NOT NULL DEFAULT '',
    batch_id TEXT NOT NULL DEFAULT ''
);

CREATE INDEX audit_by_at ON audit (at DESC, seq DESC);
CREATE INDEX audit_by_batch ON audit (batch_id, at);

-- Where the recorder resumes reading each partition: the offset after the
-- last record applied, written in the same transaction as that record.
CREATE TABLE topic_offsets (
    topic       TEXT NOT NULL,
    partition   INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (topic, partition)
) WITHOUT ROWID;

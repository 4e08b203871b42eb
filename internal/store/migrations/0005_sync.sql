-- Sync: a file of a sync folder replaces the tasks earlier versions of the
-- same source created. A task's source is its folder and file name, as
-- the state topic carries them.
ALTER TABLE tasks ADD COLUMN source_folder TEXT NOT NULL DEFAULT '';
CREATE INDEX tasks_by_source ON tasks (source_folder, source_file, key);
CREATE INDEX tasks_by_folder_host ON tasks (source_folder, host, key);

-- How far the engine has applied each input partition, from its
-- checkpoints on the state topic: a sync waits until the tasks here
-- reflect every command committed before it.
CREATE TABLE engine_checkpoints (
    partition    INTEGER PRIMARY KEY,
    input_offset INTEGER NOT NULL
);

-- A file whose sync would delete too much is held for an operator: its
-- batch says so, with the diff of what it would change.
CREATE TABLE batches_new (
    id                TEXT PRIMARY KEY,
    file              TEXT NOT NULL,
    folder            TEXT NOT NULL DEFAULT '',
    size              INTEGER NOT NULL DEFAULT 0,
    rows              INTEGER NOT NULL DEFAULT 0,
    rejected          INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL CHECK (status IN ('injected', 'rejected', 'duplicate', 'held')),
    errors            TEXT NOT NULL DEFAULT '',
    duplicates        INTEGER NOT NULL DEFAULT 0,
    last_duplicate_at INTEGER,
    first_seen_at     INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    -- The diff of a sync: counts, and its first entries, one per line.
    added             INTEGER,
    changed           INTEGER,
    removed           INTEGER,
    unchanged         INTEGER,
    diff              TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
INSERT INTO batches_new (id, file, folder, size, rows, rejected, status, errors, duplicates, last_duplicate_at, first_seen_at, updated_at)
    SELECT id, file, folder, size, rows, rejected, status, errors, duplicates, last_duplicate_at, first_seen_at, updated_at FROM batches;
DROP TABLE batches;
ALTER TABLE batches_new RENAME TO batches;
CREATE INDEX batches_by_updated ON batches (updated_at DESC);
CREATE INDEX batches_by_source ON batches (folder, file, updated_at DESC);

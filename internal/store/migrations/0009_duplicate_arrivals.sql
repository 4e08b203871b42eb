-- A file whose content was injected before keeps its own row in the files
-- list, as a duplicate that injected nothing, naming the batch it repeats
-- (batch_id): before, it vanished into a count on that batch, whose row
-- then read as if the new file had injected its rows. SQLite cannot
-- change a CHECK, so the table is built again.
CREATE TABLE arrivals_new (
    id            TEXT PRIMARY KEY,
    file          TEXT NOT NULL,
    folder        TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('received', 'converting', 'failed', 'duplicate')),
    node          TEXT NOT NULL DEFAULT '',
    detail        TEXT NOT NULL DEFAULT '',
    first_seen_at INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    batch_id      TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
INSERT INTO arrivals_new (id, file, folder, status, node, detail, first_seen_at, updated_at)
    SELECT id, file, folder, status, node, detail, first_seen_at, updated_at FROM arrivals;
DROP TABLE arrivals;
ALTER TABLE arrivals_new RENAME TO arrivals;
CREATE INDEX arrivals_by_updated ON arrivals (updated_at DESC);

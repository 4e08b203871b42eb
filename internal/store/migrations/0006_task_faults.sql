-- Tasks the engine holds back because the brokers refused their fires for
-- a reason of their own: retrying the refused occurrence, or paused by the
-- fault policy. Few tasks ever have one, so they are kept beside the tasks
-- rather than in a column of every task.
CREATE TABLE task_faults (
    key    TEXT PRIMARY KEY,
    -- For people: "paused by fault policy: REASON" or
    -- "fire refused (attempt N): REASON".
    fault  TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    at     INTEGER NOT NULL
) WITHOUT ROWID;

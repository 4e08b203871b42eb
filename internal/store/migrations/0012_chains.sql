-- Chains and retries: a task may follow others (its definition's after)
-- and its state says where it stands with them; a run of a task may take
-- several attempts, each an execution of its own; a chained task's fire
-- names the predecessors' runs that released it.

-- The chain state of a task that follows others (record.Chain as JSON),
-- as its latest state says; '' for any other task, and once it ended.
ALTER TABLE tasks ADD COLUMN chain TEXT NOT NULL DEFAULT '';

-- Who follows whom: the definition of the task succ names pred in its
-- after, at position (from 0). A task's rows are replaced with each of
-- its states and dropped when it ends, so they link live successors;
-- pred need not be a task the store knows. Read both ways: a task's
-- predecessors by succ, its successors by pred.
CREATE TABLE task_edges (
    succ     TEXT NOT NULL,
    pred     TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (succ, pred)
) WITHOUT ROWID;
CREATE INDEX task_edges_by_pred ON task_edges (pred, succ);

-- An execution's attempt (1 for a run's first), its run (the fire id of
-- the run's first attempt; '' on a first attempt, whose run is its own
-- fire id), and the predecessors' runs that released it (a JSON array of
-- their runs, '' for none).
ALTER TABLE executions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE executions ADD COLUMN run TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN released_by TEXT NOT NULL DEFAULT '';
CREATE INDEX executions_by_run ON executions (run, attempt) WHERE run <> '';

-- What each run released: the fires whose execution names the run among
-- the predecessors' runs that released it. Filled as those executions
-- are stored, so that "what did this run release" is one index lookup.
CREATE TABLE execution_releases (
    run     TEXT NOT NULL,
    fire_id TEXT NOT NULL,
    PRIMARY KEY (run, fire_id)
) WITHOUT ROWID;

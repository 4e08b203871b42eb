-- Every list (executions, tasks, files, audit) is filtered, sorted and
-- paged the same way: a page starts after the sort keys of the last row
-- of the one before (keyset paging), so each list's order is an index
-- that starts with what it filters on most.

-- A paused task is its own state: the definition's "active": false, kept
-- in a column of its own when the task is written rather than read from
-- the definition for every row of a list or count.
ALTER TABLE tasks ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET paused = 1 WHERE json_valid(definition) AND json_extract(definition, '$.active') = 0;

-- Tasks in the order the list shows them: due soonest first, then ended
-- tasks, most recently ended first.
DROP INDEX tasks_by_status_next_fire;
CREATE INDEX tasks_by_next ON tasks (coalesce(next_fire, 9000000000000000 - updated_at), key);
CREATE INDEX tasks_by_state_next ON tasks (status, paused, coalesce(next_fire, 9000000000000000 - updated_at), key);
CREATE INDEX tasks_by_host_next ON tasks (host, coalesce(next_fire, 9000000000000000 - updated_at), key);

-- Executions by the time shown (fired, or reported while only a worker's
-- report is known), newest or oldest first.
DROP INDEX executions_by_recent;
CREATE INDEX executions_by_time ON executions (coalesce(fired_at, status_at), fire_id);
DROP INDEX executions_by_status;
CREATE INDEX executions_by_status ON executions (status, coalesce(fired_at, status_at), fire_id);
CREATE INDEX executions_by_host ON executions (host, coalesce(fired_at, status_at), fire_id);
DROP INDEX executions_by_task;
CREATE INDEX executions_by_task ON executions (host, name, coalesce(fired_at, status_at), fire_id);
DROP INDEX executions_by_batch;
CREATE INDEX executions_by_batch ON executions (batch_id, coalesce(fired_at, status_at), fire_id);
-- The last hour's executions and failures are counted by the time shown,
-- as the lists filter them, on the indexes above.
DROP INDEX executions_by_fired;
DROP INDEX executions_failed;
-- Executions that may turn overdue: no final status, and a timeout.
CREATE INDEX executions_open ON executions (fired_at + timeout) WHERE timeout > 0 AND status IN ('FIRED', 'RUNNING');

-- The audit trail by action (a bulk action's per-task events).
CREATE INDEX audit_by_action ON audit (action, at);

-- Files by when they last changed, recorded or on their way in.
CREATE INDEX batches_by_status ON batches (status, updated_at);

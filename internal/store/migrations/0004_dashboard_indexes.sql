-- The dashboard and the executions page list the latest fires in the order
-- they are shown, and count the last hour's fires and failures: each reads
-- an index rather than every execution.
DROP INDEX executions_by_recent;
CREATE INDEX executions_by_recent ON executions (coalesce(fired_at, status_at) DESC, scheduled_at DESC, fire_id);
CREATE INDEX executions_by_fired ON executions (fired_at);
CREATE INDEX executions_failed ON executions (status_at) WHERE status = 'FAILED';
-- A file's page and a task's page list their fires in the order shown.
DROP INDEX executions_by_batch;
CREATE INDEX executions_by_batch ON executions (batch_id, coalesce(fired_at, status_at) DESC, scheduled_at DESC, fire_id);
DROP INDEX executions_by_task;
CREATE INDEX executions_by_task ON executions (host, name, scheduled_at DESC, fire_id);

-- The task's timeout at the time of the fire, in milliseconds: an execution
-- with no final status by fired_at + timeout is shown as overdue.
ALTER TABLE executions ADD COLUMN timeout INTEGER NOT NULL DEFAULT 0;

CREATE INDEX audit_by_actor ON audit (actor, at);

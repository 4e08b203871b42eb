-- What is valid but doubtful in a file's rows (a cron expression two
-- dialects read apart), one per line: the file's page shows it.
ALTER TABLE batches ADD COLUMN warnings TEXT NOT NULL DEFAULT '';

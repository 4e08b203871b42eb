-- A catch-up fire standing for more than one missed occurrence (FIRE_ONCE
-- after jobdrop was down) says how many, itself included; 0 for any other.
ALTER TABLE executions ADD COLUMN collapsed INTEGER NOT NULL DEFAULT 0;

-- A node may serve several outbox databases (README, "Several databases"); its audit log
-- stays in the control database and says which database each change was made in. Rows
-- written before this migration have none.
ALTER TABLE audit_log ADD COLUMN database text;

-- Checks the rows that were there before 0005 (0005 fixed them), under a lock that lets
-- inserts and claims go on meanwhile.
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_visible_after_finite;
ALTER TABLE outbox VALIDATE CONSTRAINT outbox_created_at_finite;

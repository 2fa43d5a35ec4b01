-- Instants a claim or a read decodes must be finite: 'infinity' and '-infinity' are legal
-- timestamptz values that a plain SQL insert could stage, but their epoch does not fit the
-- microseconds every statement reads them as, and one such row failed every claim of its
-- node (SQLSTATE 0A000). Rows staged that way before are made due now; from here on the
-- insert itself is refused, naming the constraint. NOT VALID keeps this migration to a
-- brief lock; 0006 checks the existing rows without blocking writers.
UPDATE outbox SET visible_after = now() WHERE NOT isfinite(visible_after);
UPDATE outbox SET created_at = now() WHERE NOT isfinite(created_at);
ALTER TABLE outbox ADD CONSTRAINT outbox_visible_after_finite CHECK (isfinite(visible_after)) NOT VALID;
ALTER TABLE outbox ADD CONSTRAINT outbox_created_at_finite CHECK (isfinite(created_at)) NOT VALID;

-- Schedules (README, "Schedules"): cron expressions that stage a row per firing. The node
-- owning a schedule's shard (outbox_shard(id), as rows are placed by workflow) stages each
-- due firing with the key schedule:<id>:<fire time> and moves next_fire_at past it in the
-- same transaction, so each firing is staged once across failover and restarts (the key
-- makes a repeat a no-op).
CREATE TABLE schedules (
    id            text COLLATE "C" PRIMARY KEY
                  CONSTRAINT schedules_id_shape CHECK (id ~ '^[A-Za-z0-9._-]{1,128}$'),
    cron          text NOT NULL CONSTRAINT schedules_cron_nonempty CHECK (cron <> ''),
    timezone      text NOT NULL DEFAULT 'UTC',
    namespace     text NOT NULL DEFAULT 'default' CHECK (namespace <> ''),
    task_queue    text NOT NULL DEFAULT 'default' CHECK (task_queue <> ''),
    activity_type text NOT NULL CHECK (activity_type <> ''),
    -- The firings' workflow; NULL: each firing is a workflow of its own (its key).
    workflow_id   text CHECK (workflow_id IS NULL OR workflow_id <> ''),
    input         jsonb NOT NULL DEFAULT 'null',
    catch_up      text NOT NULL DEFAULT 'one'
                  CONSTRAINT schedules_catch_up_known CHECK (catch_up IN ('none', 'one', 'all')),
    -- The earliest firing not yet staged (or skipped); NULL: it never fires again.
    next_fire_at  timestamptz CONSTRAINT schedules_next_fire_finite CHECK (isfinite(next_fire_at)),
    last_fired_at timestamptz,
    -- Why the owner could not use the row (a cron or zone written by plain SQL).
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    shard         integer GENERATED ALWAYS AS (outbox_shard(id)) STORED
);

CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

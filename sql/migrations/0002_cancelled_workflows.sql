-- Cancelled workflows are remembered, so that rows staged for them later (or left live by a
-- node that died mid-cancel) are never dispatched: claims skip them, and each node settles
-- them to 'cancelled' on the shards it owns, at boot, on takeover and every reconcile.
CREATE TABLE cancelled_workflows (
    workflow_id  text COLLATE "C" PRIMARY KEY CHECK (workflow_id <> ''),
    cancelled_at timestamptz NOT NULL DEFAULT now()
);

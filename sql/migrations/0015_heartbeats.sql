-- Heartbeats (README, "Task policy and heartbeats"): a claim's durable deadline, and what
-- the worker last reported.
--
-- The node that holds a task writes its deadline when the task may outlive the node-wide
-- stale-claim backstop (claimed_at + OUTBOXD_TASK_TIMEOUT_MS + grace): a longer timeout_ms
-- of its activity, or a heartbeat_timeout_ms; heartbeats move it on, in batched writes.
-- The backstop then honours lease_expires_at (+ grace) instead of claimed_at. A lease counts
-- only while lease_token equals the row's claim_token: one left by an earlier claim means
-- nothing, so no statement that ends a claim needs to clear it.
ALTER TABLE outbox
    ADD COLUMN lease_token bigint,
    ADD COLUMN lease_expires_at timestamptz,
    -- When a heartbeat of the row's task was last recorded, and the progress it carried
    -- (bounded by the node; kept after the task ends).
    ADD COLUMN heartbeat_at timestamptz,
    ADD COLUMN progress jsonb;

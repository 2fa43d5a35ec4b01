-- A task's life (README, "Results and trace context"): what a worker answered, and the trace
-- a row belongs to.

-- The result of the row's successful attempt: a worker's complete.result, or an HTTP
-- target's 2xx JSON body. NULL: none (a null result, a namespace that keeps none, a row not
-- done). Bounded by the node (OUTBOXD_MAX_RESULT_BYTES) before it is written.
ALTER TABLE outbox ADD COLUMN result jsonb;

-- W3C trace context of the request that staged the row (traceparent header, version 00
-- layout: version-trace_id-parent_id-flags, lowercase hex; version ff and all-zero ids are
-- invalid). Plain SQL inserts may set it; the check refuses anything else. NOT VALID: the
-- column is new, so no existing row can break it, and no scan of the table is needed.
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE outbox ADD CONSTRAINT outbox_traceparent_format CHECK (
    traceparent IS NULL OR (
        traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
        AND left(traceparent, 2) <> 'ff'
        AND substr(traceparent, 4, 32) <> repeat('0', 32)
        AND substr(traceparent, 37, 16) <> repeat('0', 16))) NOT VALID;

-- Whether the namespace keeps its rows' results (PUT /v1/namespaces/{ns} "keep_results").
ALTER TABLE namespaces ADD COLUMN keep_results boolean NOT NULL DEFAULT true;

-- Delivery controls (README, "Delivery controls"): priorities, ordered delivery per
-- workflow, concurrency and rate limits per namespace and activity type.

-- Priority: higher first within a route, 0 (the default) to 100. Plain SQL inserts may set it.
ALTER TABLE outbox ADD COLUMN priority smallint NOT NULL DEFAULT 0
    CONSTRAINT outbox_priority_range CHECK (priority BETWEEN 0 AND 100);

-- Ordered delivery: a pending row of an ordered namespace that a claim found behind an
-- earlier live row of its workflow waits (it leaves the claimable index, so that later
-- claims do not walk it again) until that row ends and the next one of its workflow is let
-- go. Only meaningful while the row is pending; every other state ignores it.
ALTER TABLE outbox ADD COLUMN waiting boolean NOT NULL DEFAULT false;

-- What claims read: pending rows that are not waiting, by route, oldest first.
CREATE INDEX outbox_ready_route_idx
    ON outbox (namespace, task_queue, visible_after, id)
    WHERE status = 'pending' AND NOT waiting;
DROP INDEX outbox_pending_route_idx;

-- Rows of a priority above 0, highest first: a claim takes them before the rest of its route,
-- however long the backlog of priority 0 ahead of them.
CREATE INDEX outbox_priority_route_idx
    ON outbox (namespace, task_queue, priority DESC, visible_after, id)
    WHERE status = 'pending' AND NOT waiting AND priority > 0;

-- The waiting rows of a workflow, in order: the next one to let go.
CREATE INDEX outbox_waiting_idx
    ON outbox (workflow_id, ordinal, id)
    WHERE status = 'pending' AND waiting;

-- Whether a row of an ordered namespace has an earlier row of its workflow pending, claimed
-- or dead-lettered: the live and dead-lettered rows of a workflow in order. It replaces the
-- pending rows' workflow index (cancel and the cancelled-workflow sweep read it the same
-- way); a row costs one more index entry when claimed and when dead-lettered. (Keeping
-- claimed rows out of it, with a separate index of ordered claims, made the head check of a
-- generic plan scan the namespace's claimed rows per candidate: 0.96 -> 0.09 of the
-- unordered rate.)
CREATE INDEX outbox_workflow_order_idx
    ON outbox (workflow_id, ordinal, id)
    WHERE status IN ('pending', 'claimed', 'failed');
DROP INDEX outbox_pending_workflow_idx;

-- A concurrency limit counts the claimed rows of its namespace and activity type through
-- the namespace's claimed-rows index (0009), the type checked on each row: an index keyed by
-- the type too cost every claim in every namespace ~2 µs a row (a wider key to insert).

ALTER TABLE namespaces
    ADD COLUMN ordering text NOT NULL DEFAULT 'none'
        CONSTRAINT namespaces_ordering_known CHECK (ordering IN ('none', 'workflow')),
    ADD COLUMN on_dead_letter text NOT NULL DEFAULT 'block'
        CONSTRAINT namespaces_on_dead_letter_known CHECK (on_dead_letter IN ('block', 'skip')),
    ADD COLUMN rate_per_second double precision
        CONSTRAINT namespaces_rate_positive CHECK (rate_per_second > 0),
    ADD COLUMN rate_burst integer
        CONSTRAINT namespaces_burst_positive CHECK (rate_burst >= 1),
    ADD COLUMN activities jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT namespaces_activities_object CHECK (jsonb_typeof(activities) = 'object');

-- Token buckets of rate limits, cluster-wide: one per namespace (activity_type '') and per
-- limited activity type. A claim of a rate-limited route locks its buckets, refills them by
-- the time since (the database's clock), takes at most the whole tokens, claims that many
-- rows at most, and debits what it claimed.
CREATE TABLE rate_buckets (
    namespace     text COLLATE "C" NOT NULL,
    activity_type text COLLATE "C" NOT NULL,
    tokens        double precision NOT NULL,
    refilled_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, activity_type)
);


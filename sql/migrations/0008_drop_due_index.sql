-- Every claim is scoped to a route (namespace, task_queue, …), and the route index
-- (outbox_pending_route_idx) serves each one. The index of due rows across routes served
-- only unscoped claims, which the node never makes, and it was a trap: a plan made while
-- the table's statistics know one route read it across every route's backlog (a claim or a
-- probe of a quiet route walked a busy route's 200,000 rows: EXPLAIN ANALYZE, 243 ms against
-- well under a millisecond on the route index). Dropping it also spares every insert, claim
-- and outcome one index write.
DROP INDEX outbox_pending_due_idx;

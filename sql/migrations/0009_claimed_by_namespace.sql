-- Claimed rows are counted per namespace: by a node's claimer when a ceiling may bind or a
-- namespace has not been counted yet, and before every claim apart (a quiet tenant's row
-- claimed beside a busy tenant's round). Counted through an index led by claimed_at, one
-- namespace's count read every claimed row of every namespace, and every dead entry a busy
-- tenant's churn leaves behind until vacuum: 12-77 ms for a quiet tenant's count beside a
-- busy tenant draining at 35,000 rows/s, against ~1 ms for the claim it guarded. Led by
-- the namespace, a count reads only that namespace's entries.
--
-- The re-arm sweeps (stale claims, orphans), which read claimed rows in claimed_at order
-- across namespaces, read this index whole instead: it holds only claimed rows (a few
-- thousand), and the orphan sweep read it whole already.
CREATE INDEX outbox_claimed_namespace_idx
    ON outbox (namespace, claimed_at, id)
    WHERE status = 'claimed';
DROP INDEX outbox_claimed_idx;

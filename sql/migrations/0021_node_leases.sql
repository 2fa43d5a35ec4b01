-- A lease is the node's, not each shard's: a node holds the shards whose owner is its
-- incarnation while its own row's lease_expires_at is in the future, by the database clock.
-- A renewal writes one row (the node's) instead of one per shard held (1,024 row versions a
-- renewal with one node), and a node that was cut off and renews before anyone took its shards
-- holds them again at once. Shard rows change only when a shard changes hands.
--
-- expires_at leaves shard_leases: a node of an earlier version fails its claims and renewals
-- against this schema (it names the column) instead of judging leases by a rule the other
-- nodes no longer keep. Upgrade every node of a fleet together with this migration.
ALTER TABLE dispatcher_nodes ADD COLUMN lease_expires_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE shard_leases DROP COLUMN expires_at;

-- The leases that hold now: for operators and tests ("who owns shard 7?").
CREATE VIEW live_shard_leases AS
SELECT l.shard, l.owner, n.node_id, l.epoch, n.lease_expires_at AS expires_at
FROM shard_leases l
JOIN dispatcher_nodes n ON n.incarnation = l.owner
WHERE n.lease_expires_at > now();

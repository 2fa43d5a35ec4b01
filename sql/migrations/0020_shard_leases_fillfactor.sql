-- Every lease is renewed every third of the lease TTL: 1,024 row versions a renewal. At the
-- default fillfactor a page rarely has room for the new versions, so renewals spread the rows
-- over ever more pages (14 -> 191 pages after 300 renewals, measured) and every renewal and
-- claim's view of the leases reads them all. With room left on every page the new versions
-- stay on their page (HOT) and pruning keeps the table at its size (17 pages after 300).
-- Pages written from now on keep the room; a VACUUM FULL compacts a table already spread.
ALTER TABLE shard_leases SET (fillfactor = 40);

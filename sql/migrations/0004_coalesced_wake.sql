-- Coalesced wake. NOTIFY takes a global lock at commit, so a NOTIFY in every application
-- transaction serialises all committers (measured: 8 writers lost ~50% of their insert
-- throughput). Only one inserting transaction at a time notifies: the first takes a
-- transaction-scoped advisory lock and NOTIFYs; transactions that overlap it skip the
-- NOTIFY and commit in parallel. Nodes answer every wake with a sweep and a short follow-up
-- sweep, which picks up rows of the transactions that committed alongside the notifier;
-- the poll interval stays the backstop.
CREATE OR REPLACE FUNCTION outbox_notify_wake() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(7955443003163394148) THEN
        PERFORM pg_notify('outbox_wake', '');
    END IF;
    RETURN NULL;
END
$$;

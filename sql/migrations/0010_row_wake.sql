-- The wake without a transition table. Migration 0007's statement-level trigger read the
-- routes a statement staged into from a transition table, which every inserting statement
-- then had to fill and query even to stage one row: the application's single-row
-- transactions lost ~15% of their rate to it (benchmark app_insert_cost_of_wake), against
-- ~5% for 0004's plain NOTIFY.
--
-- Now a row-level trigger reads the route from the row itself. Measured with pgbench (8
-- clients, single-row transactions, prepared, durable cluster; rates against no wake
-- trigger at all): 0004's plain NOTIFY -5%, an empty row trigger -4%, this one -7%, 0007
-- -12%. Variants that remember the route already woken for in a transaction-local setting,
-- so that the rows after the first of a bulk insert skip the work, cost single-row
-- transactions more than they save: -10% to -17% (a trigger WHEN clause is prepared anew
-- for every statement; a placeholder setting is read and set per transaction). The price
-- is paid by bulk inserts instead: ~2.7 µs a row (a bare 200,000-row INSERT … SELECT took
-- 1.9 s instead of 1.4 s).
--
-- BEFORE, not AFTER: an AFTER row trigger queues every row's event in memory until the
-- end of the statement. The first transaction to stage into a route takes the route's
-- advisory lock and notifies; transactions staging into the same route meanwhile skip
-- their NOTIFY (a node follows every wake with a second claim of the woken routes a few
-- milliseconds later, which picks their rows up). A transaction's later rows take the lock
-- again (it is re-entrant) and repeat the NOTIFY, which PostgreSQL folds into one per
-- transaction and payload. The payload names the route: {"routes":[["billing","default"]]};
-- a route whose names do not fit a notification sends an empty payload (nodes then look for
-- due rows everywhere). A NOTIFY of a row that then conflicts (ON CONFLICT DO NOTHING) is
-- harmless: the wake is advisory; a statement that fails sends nothing.
CREATE OR REPLACE FUNCTION outbox_notify_wake() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    IF pg_try_advisory_xact_lock(1330601323,
                                 hashtext(NEW.namespace || chr(31) || NEW.task_queue)) THEN
        payload := '{"routes":[[' || to_json(NEW.namespace)::text || ','
                   || to_json(NEW.task_queue)::text || ']]}';
        PERFORM pg_notify('outbox_wake',
                          CASE WHEN octet_length(payload) < 7900 THEN payload ELSE '' END);
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER outbox_notify_wake ON outbox;
CREATE TRIGGER outbox_notify_wake
    BEFORE INSERT ON outbox
    FOR EACH ROW
    EXECUTE FUNCTION outbox_notify_wake();

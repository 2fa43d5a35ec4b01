-- Wakes that name their routes, and namespace weights.
--
-- A node claims only for routes it knows to have due rows: a route with nothing to claim
-- costs no statement, so hundreds of idle tenants cost a busy one nothing. It learns of new
-- rows from the wake, which now names the (namespace, task_queue) pairs a statement staged
-- into, as JSON: {"routes":[["billing","default"],…]}. NOTIFY serialises committing
-- transactions, so still only one inserting transaction at a time notifies, but per route:
-- the first holds a transaction-scoped advisory lock keyed by the route's hash, and
-- transactions staging into the same route meanwhile skip the NOTIFY (a node answers every
-- wake with a follow-up claim of the woken routes a few milliseconds later, which picks
-- their rows up). Transactions of different routes notify each. A statement whose routes
-- do not fit a notification (8000 bytes) sends an empty payload instead: nodes then look
-- for due rows on every route (they also do so on the poll backstop).
CREATE OR REPLACE FUNCTION outbox_notify_wake() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    woken jsonb := '[]'::jsonb;
    route record;
    payload text;
BEGIN
    FOR route IN SELECT DISTINCT namespace, task_queue FROM inserted LOOP
        IF pg_try_advisory_xact_lock(1330601323,
                                     hashtext(route.namespace || chr(31) || route.task_queue)) THEN
            woken := woken || jsonb_build_array(jsonb_build_array(route.namespace, route.task_queue));
        END IF;
    END LOOP;
    IF jsonb_array_length(woken) > 0 THEN
        payload := jsonb_build_object('routes', woken)::text;
        PERFORM pg_notify('outbox_wake', CASE WHEN octet_length(payload) < 7900 THEN payload ELSE '' END);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER outbox_notify_wake ON outbox;
CREATE TRIGGER outbox_notify_wake
    AFTER INSERT ON outbox
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT
    EXECUTE FUNCTION outbox_notify_wake();

-- A namespace's share of each claim round follows its weight (deficit round robin among
-- the namespaces with due rows).
ALTER TABLE namespaces ADD COLUMN weight integer NOT NULL DEFAULT 1
    CONSTRAINT namespaces_weight_range CHECK (weight BETWEEN 1 AND 1000);

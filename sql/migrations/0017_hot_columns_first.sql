-- The columns that the outbox's indexes and their predicates read, first in the row.
--
-- Every UPDATE of a row compares, old against new, each column an index reads, to tell
-- whether the new version may skip the indexes (PostgreSQL's heap_update). It reads each
-- such column of both versions with heap_getattr, which, past the row's first text column
-- or NULL, walks the row from its start to reach it. The delivery controls (0012, 0014)
-- added `priority`, `waiting` and `holds_order` at the end of the row, 21st to 25th: every
-- claim and every outcome write walked 20-odd columns more for each of them, twice. In a
-- profile of the 1-node drain (perf, 4 s, whole machine) the walk (nocachegetattr, all of
-- it under heap_update) took 1.49% of the machine before the controls and 2.96% after them,
-- the largest difference in PostgreSQL; 1.45% on the rebuilt table.
--
-- So the table is rebuilt with the fixed-width columns that indexes read first, where
-- their offsets are known without a walk (id, ordinal, visible_after, priority, waiting,
-- holds_order), then the indexed text columns and the indexed nullable times, then the
-- rest. No name, default, index, trigger or grant changes, and no type or constraint but the
-- two below; columns are always named by the code, the API and the documented inserts,
-- never taken by position.
--
-- The same rebuild gives `priority` and `traceparent` the types that carry their checks:
-- domains (`outbox_priority` over smallint, `outbox_traceparent` over text) in place of the
-- table's CHECK constraints `outbox_priority_range` (0012) and `outbox_traceparent_format`
-- (0013). PostgreSQL prepares every CHECK constraint of a table anew for each INSERT or
-- UPDATE statement (it parses the stored expression and runs the planner on it), whichever
-- columns the statement writes: every claim, outcome write and application insert paid for
-- the traceparent check's regular expression and string functions. A domain's check runs
-- only where a value is written into the column (an INSERT, or an UPDATE whose SET list
-- names it; outboxd's claims and outcome writes never do), and the server keeps its
-- prepared expression between statements. Measured in a PL/pgSQL loop of 20,000 one-row
-- statements of each kind (3 to 7 takes, the means): an insert took 62.5 µs on the schema
-- before the delivery controls, 83.4 µs with both checks and 67.1 µs after this rebuild; an
-- update setting a row claimed or done 43.6, 63.9 and 47.8 µs. Clients see the base types
-- (the server describes a domain column by its base type), and a value out of bounds is
-- refused as before: SQLSTATE 23514 (check_violation), naming the same constraint. A row
-- trigger instead cost every UPDATE more (57.5 µs): PostgreSQL fetches and locks each
-- updated row again for a BEFORE UPDATE row trigger, whatever its columns.
--
-- A rebuild copies every row under an exclusive lock: on a large table the migration takes
-- a while (6.4 s for a million rows, half of them done, on a 2-vCPU machine), and nodes
-- and the application's inserts wait for it.
-- What a copy cannot carry over on its own (a view or a rule on the table, a policy, a
-- publication, a foreign key, inheritance, extended statistics, a replica identity other
-- than the default, a column added by hand) makes it stop with an error naming it and
-- change nothing: drop it, migrate, then create it again.
-- Everything else defined on the table, including indexes, constraints, defaults, triggers,
-- grants, comments and storage options added by hand, is read from the catalogs and
-- defined again on the new table.

LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE;

CREATE DOMAIN outbox_priority AS smallint
    CONSTRAINT outbox_priority_range CHECK (VALUE BETWEEN 0 AND 100);

CREATE DOMAIN outbox_traceparent AS text
    CONSTRAINT outbox_traceparent_format CHECK (
        VALUE ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
        AND left(VALUE, 2) <> 'ff'
        AND substr(VALUE, 4, 32) <> repeat('0', 32)
        AND substr(VALUE, 37, 16) <> repeat('0', 16));

DO $migration$
DECLARE
    -- The columns, in their new order. Their definitions follow in CREATE TABLE below.
    wanted constant text[] := ARRAY[
        'id', 'ordinal', 'visible_after', 'priority', 'waiting', 'holds_order',
        'dispatch_key', 'status', 'namespace', 'task_queue', 'workflow_id',
        'claimed_at', 'finished_at',
        'run_id', 'node', 'activity_type', 'input', 'attempt', 'claimed_by', 'claim_token',
        'last_error', 'created_at', 'shard', 'result', 'traceparent', 'lease_token',
        'lease_expires_at', 'heartbeat_at', 'progress'];
    copied text;  -- the columns a row is copied by (shard is generated: computed again)
    blockers text;
    replay text[];
    statement text;
    last_id bigint;
    id_called boolean;
    old_owner name;
BEGIN
    -- What a copy cannot carry over.
    SELECT string_agg(what, '; ') INTO blockers FROM (
        SELECT 'column ' || quote_ident(a.attname) || ' (not one of the outbox''s own)' AS what
        FROM pg_attribute a
        WHERE a.attrelid = 'outbox'::regclass AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> ALL (wanted)
        UNION ALL
        SELECT 'missing column ' || quote_ident(w)
        FROM unnest(wanted) AS w
        WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
                          WHERE a.attrelid = 'outbox'::regclass AND a.attname = w
                            AND NOT a.attisdropped)
        UNION ALL
        SELECT 'view or rule ' || r.ev_class::regclass::text
        FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
        WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = 'outbox'::regclass
          AND r.ev_class <> 'outbox'::regclass
        UNION ALL
        SELECT 'rule ' || quote_ident(r.rulename)
        FROM pg_rewrite r WHERE r.ev_class = 'outbox'::regclass
        UNION ALL
        SELECT 'policy ' || quote_ident(p.polname)
        FROM pg_policy p WHERE p.polrelid = 'outbox'::regclass
        UNION ALL
        SELECT 'publication ' || quote_ident(p.pubname)
        FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
        WHERE pr.prrelid = 'outbox'::regclass
        UNION ALL
        SELECT 'foreign key ' || quote_ident(c.conname) || ' of ' || c.conrelid::regclass::text
        FROM pg_constraint c
        WHERE c.contype = 'f' AND (c.confrelid = 'outbox'::regclass
                                   OR c.conrelid = 'outbox'::regclass)
        UNION ALL
        SELECT 'inheritance with ' || i.inhrelid::regclass::text || ' / '
               || i.inhparent::regclass::text
        FROM pg_inherits i
        WHERE i.inhparent = 'outbox'::regclass OR i.inhrelid = 'outbox'::regclass
        UNION ALL
        SELECT 'function or type using the row type of outbox: '
               || pg_describe_object(d.classid, d.objid, d.objsubid)
        FROM pg_depend d
        WHERE d.refclassid = 'pg_type'::regclass
          AND d.refobjid = (SELECT reltype FROM pg_class WHERE oid = 'outbox'::regclass)
          AND d.deptype = 'n'
        UNION ALL
        SELECT 'extended statistics ' || quote_ident(x.stxname)
        FROM pg_statistic_ext x WHERE x.stxrelid = 'outbox'::regclass
        UNION ALL
        SELECT 'replica identity ' || c.relreplident::text
        FROM pg_class c WHERE c.oid = 'outbox'::regclass AND c.relreplident <> 'd'
    ) found;
    IF blockers IS NOT NULL THEN
        RAISE EXCEPTION 'migration 0017 rebuilds table outbox and cannot carry over: %', blockers
            USING HINT = 'Drop these, run the migration, then create them again.';
    END IF;

    -- What is defined again on the new table, read from the catalogs, in this order.
    SELECT array_agg(s ORDER BY k, n) INTO replay FROM (
        -- defaults (the identity and the generated column are part of CREATE TABLE)
        SELECT 1 AS k, a.attnum::bigint AS n,
               format('ALTER TABLE outbox ALTER COLUMN %I SET DEFAULT %s', a.attname,
                      pg_get_expr(d.adbin, d.adrelid)) AS s
        FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = 'outbox'::regclass AND a.attgenerated = '' AND a.attidentity = ''
        UNION ALL
        -- primary key, unique and check constraints, NOT VALID kept (but the two that the
        -- domains above take over)
        SELECT 2, c.oid::bigint,
               format('ALTER TABLE outbox ADD CONSTRAINT %I %s', c.conname,
                      pg_get_constraintdef(c.oid))
        FROM pg_constraint c
        WHERE c.conrelid = 'outbox'::regclass
          AND c.conname NOT IN ('outbox_priority_range', 'outbox_traceparent_format')
        UNION ALL
        -- indexes not behind a constraint (their definitions name the table, not its oid)
        SELECT 3, i.indexrelid::bigint, pg_get_indexdef(i.indexrelid)
        FROM pg_index i
        WHERE i.indrelid = 'outbox'::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid
                                                          AND c.conrelid = 'outbox'::regclass)
        UNION ALL
        SELECT 4, t.oid::bigint, pg_get_triggerdef(t.oid)
        FROM pg_trigger t WHERE t.tgrelid = 'outbox'::regclass AND NOT t.tgisinternal
        UNION ALL
        -- grants to others than the owner, with their grant option
        SELECT 5, row_number() OVER (),
               format('GRANT %s ON outbox TO %s%s', g.privilege_type,
                      CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                           ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                      CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
        FROM pg_class c, aclexplode(c.relacl) g
        WHERE c.oid = 'outbox'::regclass AND g.grantee <> c.relowner
        UNION ALL
        SELECT 6, 0, format('ALTER TABLE outbox SET (%s)', array_to_string(c.reloptions, ', '))
        FROM pg_class c WHERE c.oid = 'outbox'::regclass AND c.reloptions IS NOT NULL
        UNION ALL
        SELECT 7, 0, format('COMMENT ON TABLE outbox IS %L', obj_description('outbox'::regclass,
                                                                             'pg_class'))
        WHERE obj_description('outbox'::regclass, 'pg_class') IS NOT NULL
        UNION ALL
        SELECT 7, a.attnum, format('COMMENT ON COLUMN outbox.%I IS %L', a.attname,
                                   col_description(a.attrelid, a.attnum))
        FROM pg_attribute a
        WHERE a.attrelid = 'outbox'::regclass AND a.attnum > 0
          AND col_description(a.attrelid, a.attnum) IS NOT NULL
        UNION ALL
        SELECT 8, a.attnum, format('ALTER TABLE outbox ALTER COLUMN %I SET STATISTICS %s',
                                   a.attname, a.attstattarget)
        FROM pg_attribute a
        WHERE a.attrelid = 'outbox'::regclass AND a.attnum > 0 AND a.attstattarget >= 0
          AND NOT a.attisdropped
    ) defs;

    EXECUTE format('SELECT last_value, is_called FROM %s', pg_get_serial_sequence('outbox', 'id'))
        INTO last_id, id_called;
    SELECT c.relowner::regrole::name INTO old_owner FROM pg_class c
    WHERE c.oid = 'outbox'::regclass;

    CREATE TABLE outbox_0017 (
        id               bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
        ordinal          bigint NOT NULL,
        visible_after    timestamptz NOT NULL,
        priority         outbox_priority NOT NULL,
        waiting          boolean NOT NULL,
        holds_order      boolean NOT NULL,
        dispatch_key     text COLLATE "C" NOT NULL,
        status           text NOT NULL,
        namespace        text COLLATE "C" NOT NULL,
        task_queue       text COLLATE "C" NOT NULL,
        workflow_id      text COLLATE "C" NOT NULL,
        claimed_at       timestamptz,
        finished_at      timestamptz,
        run_id           text,
        node             text COLLATE "C",
        activity_type    text COLLATE "C" NOT NULL,
        input            jsonb NOT NULL,
        attempt          integer NOT NULL,
        claimed_by       text COLLATE "C",
        claim_token      bigint,
        last_error       text,
        created_at       timestamptz NOT NULL,
        shard            integer GENERATED ALWAYS AS (outbox_shard(workflow_id)) STORED,
        result           jsonb,
        traceparent      outbox_traceparent,
        lease_token      bigint,
        lease_expires_at timestamptz,
        heartbeat_at     timestamptz,
        progress         jsonb
    );
    SELECT string_agg(quote_ident(w), ', ' ORDER BY n) INTO copied
    FROM unnest(wanted) WITH ORDINALITY AS u(w, n) WHERE w <> 'shard';
    EXECUTE format('INSERT INTO outbox_0017 (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM outbox',
                   copied, copied);
    -- Ids go on from where they were, never reused.
    PERFORM setval(pg_get_serial_sequence('outbox_0017', 'id'), last_id, id_called);

    DROP TABLE outbox;
    ALTER TABLE outbox_0017 RENAME TO outbox;
    ALTER SEQUENCE outbox_0017_id_seq RENAME TO outbox_id_seq;
    EXECUTE format('ALTER TABLE outbox OWNER TO %I', old_owner);
    FOREACH statement IN ARRAY coalesce(replay, '{}') LOOP
        EXECUTE statement;
    END LOOP;
END
$migration$;

-- The new table has no statistics yet; the planner should not guess until autovacuum runs.
ANALYZE outbox;

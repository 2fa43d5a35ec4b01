-- The outbox table and everything a claim needs.
--
-- Applications insert into `outbox` directly, inside their own transactions, so the
-- column names, defaults and checks below are a public contract (design §2).

-- Shard of a workflow: 0..1023, stable for the life of the database. IMMUTABLE so it can
-- back a stored generated column; hashtextextended is itself immutable.
CREATE FUNCTION outbox_shard(workflow_id text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (hashtextextended(workflow_id, 0) & 1023)::integer;

-- Claim fence: every claim statement draws one token and stamps it on the rows it claims,
-- so an outcome for an earlier claim of a re-armed row matches nothing.
CREATE SEQUENCE outbox_claim_token_seq AS bigint CACHE 64;

-- Identifiers compare as bytes (COLLATE "C"): under a libc locale every text comparison
-- would be a strcoll() call, and each claim and outcome re-inserts dispatch_key into its
-- unique index. Nothing depends on linguistic order; the column types stay text.
CREATE TABLE outbox (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dispatch_key  text COLLATE "C" NOT NULL,
    workflow_id   text COLLATE "C" NOT NULL,
    ordinal       bigint      NOT NULL,
    run_id        text,
    namespace     text COLLATE "C" NOT NULL DEFAULT 'default',
    task_queue    text COLLATE "C" NOT NULL DEFAULT 'default',
    node          text COLLATE "C",
    activity_type text COLLATE "C" NOT NULL,
    input         jsonb       NOT NULL DEFAULT 'null',
    status        text        NOT NULL DEFAULT 'pending',
    attempt       integer     NOT NULL DEFAULT 0,
    visible_after timestamptz NOT NULL DEFAULT now(),
    claimed_at    timestamptz,
    claimed_by    text COLLATE "C",
    claim_token   bigint,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    shard         integer     GENERATED ALWAYS AS (outbox_shard(workflow_id)) STORED,

    CONSTRAINT outbox_dispatch_key_unique UNIQUE (dispatch_key),
    CONSTRAINT outbox_dispatch_key_nonempty CHECK (dispatch_key <> ''),
    CONSTRAINT outbox_workflow_id_nonempty CHECK (workflow_id <> ''),
    CONSTRAINT outbox_ordinal_nonnegative CHECK (ordinal >= 0),
    CONSTRAINT outbox_namespace_nonempty CHECK (namespace <> ''),
    CONSTRAINT outbox_task_queue_nonempty CHECK (task_queue <> ''),
    CONSTRAINT outbox_node_nonempty CHECK (node IS NULL OR node <> ''),
    CONSTRAINT outbox_activity_type_nonempty CHECK (activity_type <> ''),
    CONSTRAINT outbox_status_known
        CHECK (status IN ('pending', 'claimed', 'done', 'failed', 'cancelled')),
    CONSTRAINT outbox_attempt_nonnegative CHECK (attempt >= 0),
    -- claimed_at / claimed_by / claim_token are set exactly while a row is claimed.
    CONSTRAINT outbox_claim_fields_iff_claimed CHECK (
        (status = 'claimed') = (claimed_at IS NOT NULL AND claimed_by IS NOT NULL
                                AND claim_token IS NOT NULL)
        AND (status = 'claimed' OR (claimed_at IS NULL AND claimed_by IS NULL
                                    AND claim_token IS NULL))
    )
);

-- Fill dispatch_key when the writer leaves it NULL. Runs before the NOT NULL check and
-- before the generated shard column is computed.
CREATE FUNCTION outbox_fill_dispatch_key() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.dispatch_key IS NULL THEN
        NEW.dispatch_key := NEW.workflow_id || ':' || NEW.ordinal;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER outbox_fill_dispatch_key
    BEFORE INSERT ON outbox
    FOR EACH ROW WHEN (NEW.dispatch_key IS NULL)
    EXECUTE FUNCTION outbox_fill_dispatch_key();

-- Advisory wake: one notification per inserting statement, not per row. Nodes LISTEN and
-- sweep at once; the poll interval stays the backstop.
CREATE FUNCTION outbox_notify_wake() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_wake', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify_wake
    AFTER INSERT ON outbox
    FOR EACH STATEMENT
    EXECUTE FUNCTION outbox_notify_wake();

-- Claims: due pending rows of one route, oldest first. Partial, so finished rows never
-- enter it and cannot slow a claim however much history accumulates.
CREATE INDEX outbox_pending_route_idx
    ON outbox (namespace, task_queue, visible_after, id)
    WHERE status = 'pending';

-- Unscoped claims and the due-route probe.
CREATE INDEX outbox_pending_due_idx
    ON outbox (visible_after, id)
    WHERE status = 'pending';

-- Stale-claim reconciliation, orphan re-arm and claimed counts.
CREATE INDEX outbox_claimed_idx
    ON outbox (claimed_at, id)
    WHERE status = 'claimed';

-- Cancel and unsettled-workflow enumeration.
CREATE INDEX outbox_live_workflow_idx
    ON outbox (workflow_id)
    WHERE status IN ('pending', 'claimed');

-- Dead-letter listing.
CREATE INDEX outbox_failed_idx
    ON outbox (namespace, finished_at, id)
    WHERE status = 'failed';

-- Retention sweep of finished rows.
CREATE INDEX outbox_finished_idx
    ON outbox (finished_at)
    WHERE status IN ('done', 'failed', 'cancelled');

-- Cluster membership: one row per live node; heartbeat judged by the database clock.
CREATE TABLE dispatcher_nodes (
    node_id       text        PRIMARY KEY CHECK (node_id <> ''),
    incarnation   text        NOT NULL UNIQUE CHECK (incarnation <> ''),
    advertise_url text        NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    draining      boolean     NOT NULL DEFAULT false
);

-- Shard ownership: one lease row per shard. The owner is a node incarnation; the epoch
-- grows on every change of owner; a lease is valid while expires_at > now().
CREATE TABLE shard_leases (
    shard      integer     PRIMARY KEY CHECK (shard BETWEEN 0 AND 1023),
    owner      text,
    epoch      bigint      NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL DEFAULT '-infinity'
);

INSERT INTO shard_leases (shard) SELECT generate_series(0, 1023);

-- Tenant settings. A namespace without a row uses the platform defaults.
CREATE TABLE namespaces (
    namespace       text        PRIMARY KEY CHECK (namespace <> ''),
    max_in_flight   integer     CHECK (max_in_flight IS NULL OR max_in_flight > 0),
    placement_mode  text        NOT NULL DEFAULT 'unplaced'
        CHECK (placement_mode IN ('unplaced', 'prefer', 'pinned')),
    placement_nodes text[]      NOT NULL DEFAULT '{}',
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT namespaces_placement_has_nodes
        CHECK (placement_mode = 'unplaced' OR cardinality(placement_nodes) > 0)
);

-- Paused workflows: their rows stay pending and are skipped by every claim.
CREATE TABLE paused_workflows (
    workflow_id text COLLATE "C" PRIMARY KEY CHECK (workflow_id <> ''),
    paused_at   timestamptz NOT NULL DEFAULT now()
);

-- HTTP push targets (README, "HTTP push"): endpoints that receive tasks as HTTP POSTs. A
-- target is a route (namespace, task queue, activity types) served by every node for the
-- rows on its own shards, with a cluster-wide bound on concurrent requests. Set through
-- PUT /v1/http-targets/{name}; nodes read the table every namespace cache TTL and check
-- every row they read again (a row written by plain SQL is refused and logged, never used).
--
-- last_error / last_error_at / last_success_at are written back by the nodes that deliver
-- (at most once per refresh each): what GET /v1/http-targets shows as the target's recent
-- state.
CREATE TABLE http_targets (
    name            text COLLATE "C" PRIMARY KEY,
    namespace       text COLLATE "C" NOT NULL,
    task_queue      text COLLATE "C" NOT NULL,
    activity_types  text[] NOT NULL,
    url             text NOT NULL,
    max_in_flight   integer NOT NULL,
    timeout_ms      integer NOT NULL,
    signing_secret  text,
    headers         jsonb NOT NULL DEFAULT '{}',
    ca_file         text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    last_error_at   timestamptz,
    last_success_at timestamptz,
    CONSTRAINT http_targets_name_shape CHECK (name ~ '^[A-Za-z0-9._-]{1,128}$'),
    CONSTRAINT http_targets_max_in_flight_range CHECK (max_in_flight BETWEEN 1 AND 10000),
    CONSTRAINT http_targets_timeout_range CHECK (timeout_ms BETWEEN 1 AND 3600000),
    CONSTRAINT http_targets_headers_object CHECK (jsonb_typeof(headers) = 'object')
);

-- Targets of every kind (README, "Targets"): HTTP push endpoints, NATS JetStream subjects,
-- AMQP exchanges. The HTTP targets' table takes them all: `kind` says whose rules apply, and
-- `options` holds the kind's own settings (a subject template, an exchange, the body) as an
-- object of strings. `credentials` holds the kind's secrets (a password, a token, an NKey
-- seed), each encrypted like the signing secret when the nodes have OUTBOXD_SECRETS_KEY. The
-- kind's name is only checked for shape here: a node refuses a kind it does not know, and a
-- new kind needs no migration.
--
-- `http_targets` stays, as the view of the HTTP targets, so that SQL written against it
-- (reading, or inserting as before) keeps working.
ALTER TABLE http_targets RENAME TO targets;
ALTER TABLE targets
    ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT 'http',
    ADD COLUMN options jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN credentials jsonb NOT NULL DEFAULT '{}',
    ADD CONSTRAINT targets_kind_shape CHECK (kind ~ '^[a-z][a-z0-9_]{0,31}$'),
    ADD CONSTRAINT targets_options_object CHECK (jsonb_typeof(options) = 'object'),
    ADD CONSTRAINT targets_credentials_object CHECK (jsonb_typeof(credentials) = 'object');

CREATE VIEW http_targets AS
    SELECT name, namespace, task_queue, activity_types, url, max_in_flight, timeout_ms,
           signing_secret, headers, ca_file, created_at, updated_at, last_error, last_error_at,
           last_success_at
    FROM targets WHERE kind = 'http'
    WITH CHECK OPTION;

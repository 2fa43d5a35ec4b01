-- Access control (README, "Security"): managed credentials and the audit log. They live in
-- the control database (the first one a node serves).
--
-- A credential's secret is 32 random bytes shown once at creation; only its SHA-256 is
-- kept. A secret that carries 256 bits of entropy needs no slow hash: no dictionary can
-- guess it, and a stolen table gives nothing that opens a node.
CREATE TABLE credentials (
    id            text COLLATE "C" PRIMARY KEY,
    name          text NOT NULL
                  CONSTRAINT credentials_name_shape CHECK (name ~ '^[A-Za-z0-9._-]{1,128}$'),
    -- Lower-case hex.
    secret_sha256 text COLLATE "C" NOT NULL UNIQUE
                  CONSTRAINT credentials_hash_shape CHECK (secret_sha256 ~ '^[0-9a-f]{64}$'),
    -- '*' alone: every namespace.
    namespaces    text[] NOT NULL CONSTRAINT credentials_namespaces_nonempty
                  CHECK (cardinality(namespaces) BETWEEN 1 AND 1000),
    roles         text[] NOT NULL CONSTRAINT credentials_roles_known
                  CHECK (cardinality(roles) >= 1 AND roles <@ ARRAY['worker', 'producer',
                         'reader', 'read_payloads', 'operator', 'admin']),
    -- Node labels a worker credential may claim on; NULL: any node.
    nodes         text[],
    expires_at    timestamptz CONSTRAINT credentials_expiry_finite CHECK (isfinite(expires_at)),
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    text NOT NULL
);

-- Every change made through the API: who (a credential's id, never a secret), when, which
-- route and what changed. Read newest first in pages by id.
CREATE TABLE audit_log (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    credential_id text NOT NULL,
    method        text NOT NULL,
    route         text NOT NULL,
    namespace     text,
    change        jsonb NOT NULL DEFAULT '{}'
);

-- Every node reads the credentials again each settings TTL: this version, bumped by any
-- change to the table (the API's, or plain SQL's), lets it read one row instead of all of
-- them when nothing changed.
CREATE TABLE credentials_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL
);
INSERT INTO credentials_version (version) VALUES (0);

CREATE FUNCTION credentials_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE credentials_version SET version = version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER credentials_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON credentials
    FOR EACH STATEMENT EXECUTE FUNCTION credentials_changed();

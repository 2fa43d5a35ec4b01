#!/usr/bin/env bash
# An init script of the postgres image (mounted into /docker-entrypoint-initdb.d by
# docker-compose.yml): creates the databases EXTRA_DATABASES names (comma or space
# separated), owned by POSTGRES_USER, beside the image's own POSTGRES_DB. The image runs it
# once, on the first start with an empty data directory, before the server listens on TCP
# (so the service's health check passes only once they exist). The outboxd nodes migrate
# every database they serve on their own: nothing here knows the schema.
set -euo pipefail
for db in ${EXTRA_DATABASES//,/ }; do
  echo "create-databases: creating database $db (owner $POSTGRES_USER)"
  psql -X -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v db="$db" -v owner="$POSTGRES_USER" <<'SQL'
CREATE DATABASE :"db" OWNER :"owner";
SQL
done

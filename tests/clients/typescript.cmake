# The TypeScript client (clients/typescript): `npm ci` and `npm run build` once (the test
# clients.typescript.setup, a fixture every other test here requires), then its `node --test`
# files: the unit and vector files alone, every other one against a cluster of its own (with_cluster.py:
# a fresh database, real nodes). Node.js and npm come from scripts/install-deps.
set(OUTBOXD_TS_DIR ${PROJECT_SOURCE_DIR}/clients/typescript)
find_program(OUTBOXD_NODE NAMES node nodejs)
find_program(OUTBOXD_NPM NAMES npm)
if(NOT OUTBOXD_NODE OR NOT OUTBOXD_NPM)
  message(WARNING "clients.typescript: node or npm not found; the TypeScript client's tests are not registered")
  return()
endif()

add_test(NAME clients.typescript.setup
  COMMAND sh -c "\"$1\" ci --no-audit --no-fund && \"$1\" run build" sh ${OUTBOXD_NPM}
  WORKING_DIRECTORY ${OUTBOXD_TS_DIR})
set_tests_properties(clients.typescript.setup PROPERTIES FIXTURES_SETUP clients.typescript
  TIMEOUT 300 LABELS "clients;typescript")

# Credit split, backoff, frame encoding, and the protocol against a scripted fake node; the
# credit and cluster vectors shared with the other clients (tests/vectors).
add_test(NAME clients.typescript.unit
  COMMAND ${OUTBOXD_NODE} --test test/unit.test.mjs test/vectors.test.mjs
  WORKING_DIRECTORY ${OUTBOXD_TS_DIR})
set_tests_properties(clients.typescript.unit PROPERTIES FIXTURES_REQUIRED clients.typescript
  TIMEOUT 120 LABELS "clients;typescript")

#   outboxd_typescript_test(<file stem> NODES k [TOKENS])
function(outboxd_typescript_test stem)
  outboxd_cluster_test(NAME clients.typescript.${stem} ${ARGN} TIMEOUT 180 LABELS typescript
    COMMAND ${OUTBOXD_NODE} --test ${OUTBOXD_TS_DIR}/test/${stem}.test.mjs)
  # Replaces the property the function set: the database fixture stays.
  set_tests_properties(clients.typescript.${stem} PROPERTIES
    FIXTURES_REQUIRED "pg;clients.typescript" WORKING_DIRECTORY ${OUTBOXD_TS_DIR})
endfunction()

outboxd_typescript_test(stage NODES 1)     # staged/duplicates, defaults, rollback
outboxd_typescript_test(worker NODES 1)    # fields, results, retry, dead letter, heartbeats, cancel, stop
outboxd_typescript_test(tokens NODES 1 TOKENS)
outboxd_typescript_test(tls NODES 1)       # its own TLS node beside the harness's
outboxd_typescript_test(cluster NODES 2)   # discovery and draining over two nodes
outboxd_typescript_test(failover NODES 3)  # kill -9 of a node mid-run
outboxd_typescript_test(credit_window NODES 3)  # maxInFlight 8 over 3 nodes: never more than 8 handlers at once
set_property(TEST clients.typescript.credit_window APPEND PROPERTY ENVIRONMENT OUTBOXD_TEST_NODES_EXPENDABLE=1)
# An HTTP target's Standard Webhooks headers, checked by the specification's npm verifier.
outboxd_typescript_test(standard_webhooks NODES 1 NODE_ENV OUTBOXD_HTTP_ALLOWED_HOSTS=127.0.0.1
  OUTBOXD_QUOTA_CACHE_TTL_MS=200 OUTBOXD_BACKOFF_BASE_MS=50)

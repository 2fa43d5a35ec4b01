# The web console (src/http/ui): a headless Chromium (Debian's /usr/bin/chromium) driven by
# puppeteer-core logs in, goes through every view and checks each action in the database, on
# nodes of one database (clients.console.browser) and of two (clients.console.databases: the
# database switcher, listings over every database, calls kept to the chosen one).
# `npm ci` installs the pinned puppeteer-core from tests/console/package-lock.json first.
find_program(OUTBOXD_NPM npm)
add_test(NAME clients.console.npm_ci
  COMMAND ${OUTBOXD_NPM} ci --no-audit --no-fund
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/../console)
set_tests_properties(clients.console.npm_ci PROPERTIES FIXTURES_SETUP console_npm TIMEOUT 300
  LABELS "clients")

outboxd_cluster_test(NAME clients.console.browser NODES 2 TOKENS TIMEOUT 180
  COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/../console/console.test.mjs)
set_property(TEST clients.console.browser APPEND PROPERTY FIXTURES_REQUIRED console_npm)

# with_cluster.py reads OUTBOXD_TEST_DATABASES (outboxd_cluster_test passes no such option).
outboxd_cluster_test(NAME clients.console.databases NODES 2 TOKENS TIMEOUT 180
  COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/../console/databases.test.mjs)
set_property(TEST clients.console.databases APPEND PROPERTY FIXTURES_REQUIRED console_npm)
set_property(TEST clients.console.databases APPEND PROPERTY ENVIRONMENT
  OUTBOXD_TEST_DATABASES=orders,shipping)

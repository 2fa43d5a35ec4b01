# outboxd ctl against two real nodes with tokens.
outboxd_cluster_test(NAME clients.ctl NODES 2 TOKENS TIMEOUT 180
  COMMAND ${OUTBOXD_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/ctl_test.py)

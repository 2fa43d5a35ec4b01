# The Python client (clients/python, import name outboxd). Tests live in clients/python/tests;
# each registration below runs one of its modules, against a cluster of its own where it
# needs real nodes (tests/clients/with_cluster.py).
set(OUTBOXD_PY_TESTS ${PROJECT_SOURCE_DIR}/clients/python/tests)

# No node, no database: the pure parts, the vectors shared with the other clients
# (tests/vectors), and the worker against scripted in-process nodes.
add_test(NAME clients.python.unit
  COMMAND ${OUTBOXD_PYTHON} -m unittest -v test_units test_vectors test_fake_node
  WORKING_DIRECTORY ${OUTBOXD_PY_TESTS})
set_tests_properties(clients.python.unit PROPERTIES TIMEOUT 60 LABELS clients)

function(outboxd_python_test name module nodes)
  outboxd_cluster_test(NAME clients.python.${name} NODES ${nodes} TIMEOUT 120 ${ARGN}
    COMMAND ${OUTBOXD_PYTHON} -m unittest discover -v -s ${OUTBOXD_PY_TESTS} -p ${module}.py)
endfunction()

# stage(): staged/duplicates in the caller's transaction, rollback, defaults, refusals.
outboxd_python_test(stage test_stage 1)
# Worker over 2 nodes: drain and results, retry, dead letters, heartbeats, cancel, SIGTERM.
outboxd_python_test(worker test_worker 2)
# The worker token opens the socket; a wrong, missing or admin token does not.
outboxd_python_test(tokens test_tokens 1 TOKENS)
# wss:// with a CA file over 2 nodes; an unknown CA is refused.
outboxd_python_test(tls test_tls 2)
set_property(TEST clients.python.tls APPEND PROPERTY ENVIRONMENT OUTBOXD_TEST_TLS=1)
# A node's drain frame: its tasks finish through its draining connection.
outboxd_python_test(node_drain test_node_drain 2)
# kill -9 of one of 3 nodes mid-run, then of the seed: every row still finishes.
outboxd_python_test(node_failover test_node_failover 3)
# max_in_flight 8 over 3 nodes, two of them held still until the seed's tasks are out:
# never more than 8 handlers at once.
outboxd_python_test(credit_window test_credit_window 3)
set_property(TEST clients.python.node_drain clients.python.node_failover
  clients.python.credit_window APPEND PROPERTY ENVIRONMENT OUTBOXD_TEST_NODES_EXPENDABLE=1)
# pip install ./clients/python into a venv offline, then the installed no-op worker drains.
outboxd_python_test(install test_install 1)

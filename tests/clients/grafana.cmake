# The Grafana dashboard (deploy/grafana/outboxd.json): every panel's queries return data from
# a real Prometheus scraping 2 loaded nodes (needs Debian's `prometheus`).
outboxd_cluster_test(NAME clients.grafana.panels NODES 2 TIMEOUT 180
  COMMAND ${OUTBOXD_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/grafana_dashboard_test.py)

# The Grafana dashboard (deploy/grafana/outboxd.json): every panel's queries return data from
# a real Prometheus scraping 2 loaded nodes (needs Debian's `prometheus`).
# The test's outboxd-receiver listens on 127.0.0.1, which targets reach only when the
# allow-list holds it.
outboxd_cluster_test(NAME clients.grafana.panels NODES 2 TIMEOUT 180
  NODE_ENV OUTBOXD_HTTP_ALLOWED_HOSTS=127.0.0.1
  COMMAND ${OUTBOXD_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/grafana_dashboard_test.py)

#!/usr/bin/env bash
# CI's run of the benchmark (CTest `bench.quick`): `scripts/bench --smoke` on the binaries of
# the build under test must run to the end and report every headline number. It checks that
# the benchmark works, never what it measures. Usage: bench/smoke_test.sh BIN_DIR
set -euo pipefail
bin_dir=${1:?usage: bench/smoke_test.sh BIN_DIR}
cd "$(dirname "$0")/.."

report=$(mktemp)
trap 'rm -f "$report"' EXIT
OUTBOXD_BENCH_BIN_DIR=$bin_dir scripts/bench --smoke | tee "$report"

last=$(tail -n 1 "$report")
missing=()
for key in e2e_rows_per_s_1node e2e_rows_per_s_3nodes sql_floor_rows_per_s sql_limit_rows_per_s \
           ratio_to_floor latency_p50_ms latency_p99_ms latency_max_ms node_cpu_s_per_10k \
           pg_cpu_s_per_10k app_insert_cost_of_wake clean_rows_per_s history_rows_per_s \
           old_snapshot_rows_per_s idle_routes_ratio tenants_100_ratio fairness_max_dev \
           quiet_tenant_p99_ms http_push_rows_per_s http_push_ratio_to_ws http_push_latency_p50_ms \
           http_push_latency_p99_ms ordered_ratio ordered_serial_rows_per_s rate_limit_err \
           priority_p99_ms concurrency_limit_max_seen result_cost nats_limit_rows_per_s \
           nats_ratio_to_limit amqp_limit_rows_per_s amqp_ratio_to_limit; do
  # A number may be negative: in a run this short, noise can make the wake cost one.
  [[ $last =~ \"$key\":-?[0-9] ]] || missing+=("$key")
done
# The clients' numbers (null only where a runtime is missing, which install-deps rules out).
for key in ts_worker_rows_per_s graphile_batched_jobs_per_s ts_vs_graphile py_worker_rows_per_s; do
  [[ $last =~ \"$key\":-?[0-9] ]] || missing+=("$key")
done
# null until the node takes namespace weights (the report then says why in weighted_note).
[[ $last =~ \"weighted_share_err\":([0-9]|null) ]] || missing+=(weighted_share_err)
if ((${#missing[@]} > 0)); then
  echo "bench smoke test: the report's last line lacks a number for: ${missing[*]}" >&2
  exit 1
fi
echo "bench smoke test: every headline number reported"

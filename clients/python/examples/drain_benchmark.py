#!/usr/bin/python3
"""How fast one worker drains a backlog through one node: starts the worker command, waits
until the node counts it connected, stages N `noop` rows in one transaction with
outboxd.stage, and times from the commit until every row is done (polling the table every
50 ms). Prints one JSON line: rows, seconds, rows_per_s, and the worker's CPU seconds per
10,000 rows.

Run under tests/clients/with_cluster.py (it reads OUTBOXD_TEST_NODES and
OUTBOXD_TEST_DATABASE_URL); `{url}` in the worker command is the node's worker URL:

  tests/clients/with_cluster.py --bin build/bin --nodes 1 -- \\
    clients/python/examples/drain_benchmark.py --rows 20000 -- \\
    python3 -m outboxd.bench --url {url} --activity-types noop --max-in-flight 256
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import psycopg

import outboxd

NAMESPACE = "default"


def workers_connected(node: str) -> int:
    with urllib.request.urlopen(node + "/metrics", timeout=5) as response:
        text = response.read().decode()
    match = re.search(r"^outboxd_workers_connected(?:\{[^}]*\})? (\d+)", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    node = os.environ["OUTBOXD_TEST_NODES"].split(",")[0]
    url = "ws://" + node.split("://", 1)[1] + "/v1/workers"
    database = os.environ["OUTBOXD_TEST_DATABASE_URL"]

    worker = subprocess.Popen([part.replace("{url}", url) for part in command],
                              stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while workers_connected(node) < 1:
            if time.monotonic() > deadline or worker.poll() is not None:
                raise SystemExit("the worker did not connect")
            time.sleep(0.1)
        rows = [outboxd.OutboxRow(f"bench-{i}", 0, "noop") for i in range(args.rows)]
        with psycopg.connect(database, autocommit=True) as conn:
            cpu_before = cpu_seconds(worker.pid)
            started = time.monotonic()
            with conn.transaction():
                staged = outboxd.stage(conn.cursor(), rows)
            committed = time.monotonic()
            while True:
                done = conn.execute("SELECT count(*) FROM outbox WHERE status = 'done' "
                                    "AND namespace = %s", (NAMESPACE,)).fetchone()
                if done is not None and done[0] >= args.rows:
                    break
                time.sleep(0.05)
            finished = time.monotonic()
            cpu = cpu_seconds(worker.pid) - cpu_before
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    seconds = finished - committed
    print(json.dumps({"rows": staged.staged, "stage_s": round(committed - started, 3),
                      "drain_s": round(seconds, 3), "rows_per_s": round(args.rows / seconds),
                      "worker_cpu_s_per_10k_rows": round(cpu * 10000 / args.rows, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""An example outboxd worker with the Python client.

Activities:
  echo   completes with {"echo": <input>}
  sleep  waits input.ms milliseconds, heartbeating when the activity has a heartbeat timeout
         (progress {"slept_ms": …}) and stopping early on a cancel
  charge fails for good ("card declined") when input.decline is true, else completes with a
         receipt; keyed on dispatch_key, as an idempotent effect would be

Usage:
  examples/worker.py --url ws://127.0.0.1:8080/v1/workers [--namespaces default]
                     [--max-in-flight 16] [--token T | $OUTBOXD_WORKER_TOKEN] [--ca-file F]

SIGTERM or SIGINT stops it: tasks in flight finish (up to --grace seconds), then it exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any

import outboxd


async def echo(task: outboxd.Task, context: outboxd.Context) -> Any:
    return {"echo": task.input}


async def sleep(task: outboxd.Task, context: outboxd.Context) -> Any:
    total_ms = int((task.input or {}).get("ms", 1000))
    # A quarter of the heartbeat timeout, at most every second.
    beat_s = min(task.heartbeat_timeout_ms / 4000, 1.0) if task.heartbeat_timeout_ms else 1.0
    slept_ms = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    while slept_ms < total_ms and not context.cancelled:
        step = min(beat_s, (total_ms - slept_ms) / 1000)
        try:
            await asyncio.wait_for(context.wait_cancelled(), step)
        except asyncio.TimeoutError:
            pass
        slept_ms = int((loop.time() - start) * 1000)
        if task.heartbeat_timeout_ms:
            context.heartbeat({"slept_ms": slept_ms})
    if context.cancelled:
        return {"cancelled_after_ms": slept_ms}
    return {"slept_ms": slept_ms}


async def charge(task: outboxd.Task, context: outboxd.Context) -> Any:
    if (task.input or {}).get("decline"):
        raise outboxd.NonRetryableError("card declined")
    return {"receipt": "r-" + task.dispatch_key, "attempt": task.attempt}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", action="append", required=True)
    parser.add_argument("--namespaces", default="default")
    parser.add_argument("--task-queue", default="default")
    parser.add_argument("--max-in-flight", type=int, default=16)
    parser.add_argument("--worker-id", default=f"py-example-{os.getpid()}")
    parser.add_argument("--token", default=os.environ.get("OUTBOXD_WORKER_TOKEN"))
    parser.add_argument("--ca-file")
    parser.add_argument("--grace", type=float, default=30.0,
                        help="seconds in-flight tasks get to finish on SIGTERM")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = outboxd.WorkerOptions(
        urls=args.url, worker_id=args.worker_id, namespaces=args.namespaces.split(","),
        task_queue=args.task_queue, max_in_flight=args.max_in_flight, token=args.token,
        ca_file=args.ca_file, stop_grace=args.grace)
    worker = outboxd.Worker(options, {"echo": echo, "sleep": sleep, "charge": charge})
    asyncio.run(worker.run())
    stats = worker.stats()
    logging.info("done: %d completed, %d failed", stats.tasks_completed, stats.tasks_failed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

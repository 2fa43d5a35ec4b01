"""A no-op worker for benchmarks: answers every task of the given activity types with
complete (result null) until SIGTERM or SIGINT, then prints its counters as one JSON line.

    python3 -m outboxd.bench --url ws://127.0.0.1:8080/v1/workers --namespaces default \\
        --activity-types noop --max-in-flight 256 [--worker-id X] [--token T] [--ca-file F]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import sys
from typing import Any, List, Optional

from .options import WorkerOptions
from .task import Context, Task
from .worker import Worker


async def _noop(task: Task, context: Context) -> Any:
    return None


def _names(text: str) -> List[str]:
    return [name for name in text.split(",") if name]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m outboxd.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", action="append", required=True,
                        help="a node's worker URL (repeatable; the rest are learned)")
    parser.add_argument("--namespaces", type=_names, default=["default"])
    parser.add_argument("--task-queue", default="default")
    parser.add_argument("--activity-types", type=_names, default=["noop"])
    parser.add_argument("--max-in-flight", type=int, default=256)
    parser.add_argument("--worker-id", default=f"py-noop-{os.getpid()}")
    parser.add_argument("--token", default=os.environ.get("OUTBOXD_WORKER_TOKEN"),
                        help="worker token (default: $OUTBOXD_WORKER_TOKEN)")
    parser.add_argument("--ca-file", help="PEM CA file for wss:// nodes")
    parser.add_argument("--no-batch", action="store_true", help="one frame per message")
    parser.add_argument("--log-level", default="warning")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        worker = Worker(WorkerOptions(
            urls=args.url, worker_id=args.worker_id, namespaces=args.namespaces,
            task_queue=args.task_queue, max_in_flight=args.max_in_flight, token=args.token,
            ca_file=args.ca_file, batch_frames=not args.no_batch),
            {activity_type: _noop for activity_type in args.activity_types})
    except ValueError as error:
        print(f"outboxd.bench: {error}", file=sys.stderr)
        return 2
    asyncio.run(worker.run())
    print(json.dumps(dataclasses.asdict(worker.stats())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

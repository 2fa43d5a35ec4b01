"""What the Python client's tests share: the cluster that tests/clients/with_cluster.py
started (its environment), HTTP and SQL helpers, and a worker running in the background.

Importing this module puts clients/python/src first on sys.path, so the tests exercise the
tree, not an installed copy (test_install installs one on purpose, into a venv).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Sequence

CLIENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC_DIR = os.path.join(CLIENT_DIR, "src")
if SRC_DIR not in sys.path:
    sys.path.insert(0, SRC_DIR)

import outboxd  # noqa: E402  (after the path is set)
import psycopg  # noqa: E402


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the test under tests/clients/with_cluster.py")
    return value


def nodes() -> List[str]:
    """Base URLs of the nodes, http:// or https://, in order."""
    return env("OUTBOXD_TEST_NODES").split(",")


def node_pids() -> List[int]:
    return [int(pid) for pid in env("OUTBOXD_TEST_NODE_PIDS").split(",")]


def database_url() -> str:
    return env("OUTBOXD_TEST_DATABASE_URL")


def worker_url(index: int = 0) -> str:
    base = nodes()[index]
    return ("wss://" + base[len("https://"):] if base.startswith("https://")
            else "ws://" + base[len("http://"):]) + "/v1/workers"


def ca_file() -> Optional[str]:
    return os.environ.get("OUTBOXD_TEST_CA_FILE")


def nodes_expendable() -> bool:
    """Whether a test may stop or kill nodes (OUTBOXD_TEST_NODES_EXPENDABLE=1): only when
    it has the cluster to itself, as its CTest registration gives it; in a run of the whole
    directory against one cluster, such tests skip themselves."""
    return os.environ.get("OUTBOXD_TEST_NODES_EXPENDABLE") == "1"


def node_alive(pid: int) -> bool:
    """Whether the node process runs (a zombie, not yet reaped by with_cluster, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def worker_token() -> Optional[str]:
    return os.environ.get("OUTBOXD_TEST_WORKER_TOKEN")


def api(method: str, path: str, body: Any = None, *, node: int = 0,
        token: Optional[str] = None) -> Any:
    """One admin API request; returns the decoded JSON answer (None for 404)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(nodes()[node] + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    token = token or os.environ.get("OUTBOXD_TEST_ADMIN_TOKEN")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    context = ssl.create_default_context(cafile=ca_file()) if ca_file() else None
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise AssertionError(f"{method} {path}: {error.code} {error.read()!r}") from None


def set_activity_policy(namespace: str, activities: Dict[str, Any]) -> None:
    """PUT /v1/namespaces/{ns} activities, then wait out the nodes' namespace cache (the
    harness nodes keep the default OUTBOXD_QUOTA_CACHE_TTL_MS of 1 s)."""
    api("PUT", f"/v1/namespaces/{namespace}", {"activities": activities})
    time.sleep(1.2)


def await_shards_spread(timeout: float = 30) -> None:
    """Waits until every node holds shards and together they hold all 1024 (nodes that
    started last take their range over within a lease period or two)."""
    deadline = time.monotonic() + timeout
    while True:
        listed = api("GET", "/v1/cluster")["nodes"]
        owned = [sum(last - first + 1 for first, last in node["shards"]) for node in listed]
        if len(listed) == len(nodes()) and all(owned) and sum(owned) == 1024:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"shards not spread over the nodes: {listed}")
        time.sleep(0.2)


def sql(query: str, params: Sequence[Any] = ()) -> List[tuple]:
    with psycopg.connect(database_url(), autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def stage(rows: Sequence[outboxd.OutboxRow]) -> outboxd.StageResult:
    with psycopg.connect(database_url()) as conn:
        with conn.transaction():
            return outboxd.stage(conn.cursor(), rows)


def statuses(namespace: str) -> Dict[str, int]:
    return dict(sql("SELECT status, count(*) FROM outbox WHERE namespace = %s GROUP BY status",
                    (namespace,)))


def options(**overrides: Any) -> outboxd.WorkerOptions:
    """Worker options for this cluster: seeded with node 0, its token and CA."""
    settings: Dict[str, Any] = dict(urls=worker_url(0), worker_id="py-test", token=worker_token(),
                                    ca_file=ca_file(), reconnect_max=1.0, stop_grace=10.0)
    settings.update(overrides)
    return outboxd.WorkerOptions(**settings)


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str,
                     interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)


async def wait_for_rows(namespace: str, expected: Dict[str, int], timeout: float) -> None:
    """Polls the table (off the event loop) until the namespace's rows have ``expected``
    statuses."""
    deadline = time.monotonic() + timeout
    while True:
        now = await asyncio.to_thread(statuses, namespace)
        if now == expected:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"rows of {namespace}: {now}, expected {expected}")
        await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def running(worker: outboxd.Worker, nodes_connected: int = 1,
                  timeout: float = 15.0) -> AsyncIterator[outboxd.Worker]:
    """Runs ``worker`` in the background until the block ends, then stops it and checks
    that run() returned."""
    runner = asyncio.get_running_loop().create_task(worker.run(handle_signals=False))
    try:
        await wait_until(lambda: worker.stats().connected_nodes >= nodes_connected or
                         runner.done(), timeout, f"{nodes_connected} node connection(s)")
        if runner.done():
            runner.result()
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(runner, 30)


def spawn_python(args: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """A Python process that imports this tree's outboxd."""
    child_env = dict(os.environ, PYTHONPATH=SRC_DIR)
    return subprocess.Popen([sys.executable, *args], env=child_env, **kwargs)


def terminate(process: subprocess.Popen, timeout: float = 30) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"{process.args!r} did not stop within {timeout} s") from None

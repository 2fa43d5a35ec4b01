"""outboxd.Worker against 2 real nodes: drains, results, retries and dead letters,
heartbeats, cancels, and a SIGTERM of a worker process. Each test has namespaces of its own."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import unittest
from typing import Any, Dict, List, Tuple

import support
from support import api, running, set_activity_policy, sql, stage, wait_for_rows, wait_until

import outboxd

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class WorkerTest(unittest.IsolatedAsyncioTestCase):
    async def test_drains_over_two_nodes_and_stores_results(self) -> None:
        ns = "w-drain"
        seen: List[Tuple[str, Any, Any, int, int]] = []

        async def double(task: outboxd.Task, context: outboxd.Context) -> Any:
            seen.append((task.dispatch_key, context.node_id, task.traceparent, task.attempt,
                         task.priority))
            return {"key": task.dispatch_key, "double": task.input["n"] * 2}

        worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=64),
                                {"double": double})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(support.await_shards_spread)
            rows = [outboxd.OutboxRow(f"drain-{i}", 0, "double", {"n": i}, namespace=ns)
                    for i in range(600)]
            rows.append(outboxd.OutboxRow("drain-traced", 0, "double", {"n": 1}, namespace=ns,
                                          priority=5, traceparent=TRACEPARENT))
            self.assertEqual(await asyncio.to_thread(stage, rows), (601, 0))
            await wait_for_rows(ns, {"done": 601}, timeout=30)
            stats = worker.stats()
        self.assertEqual(stats.connected_nodes, 2)
        self.assertEqual(stats.tasks_completed, 601)
        self.assertEqual(stats.tasks_failed, 0)
        self.assertEqual(len({key for key, *_ in seen}), 601)
        self.assertEqual({node for _, node, *_ in seen}, {"node-1", "node-2"})
        self.assertIn(("drain-traced:0", TRACEPARENT, 1, 5),
                      {(key, trace, attempt, priority) for key, _, trace, attempt, priority in seen})
        wrong = sql("SELECT dispatch_key FROM outbox WHERE namespace = %s AND "
                    "(result->>'key' IS DISTINCT FROM dispatch_key OR "
                    " (result->>'double')::int <> 2 * (input->>'n')::int)", (ns,))
        self.assertEqual(wrong, [])
        row = api("GET", "/v1/outbox/drain-7:0")
        self.assertEqual((row["status"], row["result"]), ("done", {"key": "drain-7:0", "double": 14}))
        traced = api("GET", "/v1/outbox/drain-traced:0")
        self.assertEqual(traced["traceparent"], TRACEPARENT)

    async def test_retryable_failure_is_retried(self) -> None:
        ns = "w-retry"
        await asyncio.to_thread(set_activity_policy, ns, {"flaky": {
            "max_attempts": 3, "backoff": {"base_ms": 50, "multiplier": 1, "max_ms": 50}}})
        attempts: List[int] = []

        async def flaky(task: outboxd.Task, context: outboxd.Context) -> Any:
            attempts.append(task.attempt)
            if task.attempt == 1:
                raise ConnectionError("the payment provider timed out")
            return "ok"

        worker = outboxd.Worker(support.options(namespaces=[ns]), {"flaky": flaky})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(stage, [outboxd.OutboxRow("retry-1", 0, "flaky",
                                                              namespace=ns)])
            await wait_for_rows(ns, {"done": 1}, timeout=20)
        self.assertEqual(attempts, [1, 2])
        self.assertEqual(sql("SELECT attempt, result FROM outbox WHERE namespace = %s", (ns,)),
                         [(1, "ok")])

    async def test_non_retryable_failures_dead_letter(self) -> None:
        ns = "w-dead"
        await asyncio.to_thread(set_activity_policy, ns, {"*": {
            "max_attempts": 2, "backoff": {"base_ms": 50, "multiplier": 1, "max_ms": 50}}})
        calls: Dict[str, int] = {}

        async def decline(task: outboxd.Task, context: outboxd.Context) -> Any:
            calls[task.dispatch_key] = calls.get(task.dispatch_key, 0) + 1
            raise outboxd.NonRetryableError("card declined")

        async def broken(task: outboxd.Task, context: outboxd.Context) -> Any:
            calls[task.dispatch_key] = calls.get(task.dispatch_key, 0) + 1
            raise ValueError("always broken")

        async def huge(task: outboxd.Task, context: outboxd.Context) -> Any:
            calls[task.dispatch_key] = calls.get(task.dispatch_key, 0) + 1
            return "x" * 70000  # more than the node's default 64 KiB of result

        worker = outboxd.Worker(support.options(namespaces=[ns]),
                                {"decline": decline, "broken": broken, "huge": huge})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(stage, [
                outboxd.OutboxRow("dead-decline", 0, "decline", namespace=ns),
                outboxd.OutboxRow("dead-broken", 0, "broken", namespace=ns),
                outboxd.OutboxRow("dead-huge", 0, "huge", namespace=ns)])
            await wait_for_rows(ns, {"failed": 3}, timeout=20)
            await asyncio.sleep(0.5)  # no delivery follows a dead letter
        self.assertEqual(calls, {"dead-decline:0": 1, "dead-broken:0": 2, "dead-huge:0": 1})
        letters = api("GET", f"/v1/dead-letters?namespace={ns}")["dead_letters"]
        errors = {letter["dispatch_key"]: letter["last_error"] for letter in letters}
        self.assertIn("card declined", errors["dead-decline:0"])
        self.assertIn("ValueError: always broken", errors["dead-broken:0"])
        self.assertIn("worker produced a result that is 70002 bytes", errors["dead-huge:0"])

    async def test_heartbeats_keep_a_task_alive(self) -> None:
        ns = "w-heartbeat"
        policy = {"heartbeat_timeout_ms": 400,
                  "backoff": {"base_ms": 50, "multiplier": 1, "max_ms": 50}}
        await asyncio.to_thread(set_activity_policy, ns, {"beating": policy, "silent": policy})
        seen: Dict[str, List[Tuple[int, Any, Any]]] = {"beating": [], "silent": []}

        async def beating(task: outboxd.Task, context: outboxd.Context) -> Any:
            seen["beating"].append((task.attempt, task.timeout_ms, task.heartbeat_timeout_ms))
            for beat in range(20):  # 2 s, five times the heartbeat timeout
                context.heartbeat({"beat": beat})
                await asyncio.sleep(0.1)
            return "alive"

        async def silent(task: outboxd.Task, context: outboxd.Context) -> Any:
            seen["silent"].append((task.attempt, task.timeout_ms, task.heartbeat_timeout_ms))
            if task.attempt == 1:
                await asyncio.sleep(1.5)  # timed out meanwhile: this answer changes nothing
                return "late"
            return "on time"

        worker = outboxd.Worker(support.options(namespaces=[ns]),
                                {"beating": beating, "silent": silent})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(stage, [
                outboxd.OutboxRow("hb-beating", 0, "beating", namespace=ns),
                outboxd.OutboxRow("hb-silent", 0, "silent", namespace=ns)])
            await wait_for_rows(ns, {"done": 2}, timeout=20)
            await wait_until(lambda: worker.stats().tasks_in_flight == 0, 5, "the late answer")
        self.assertEqual(seen["beating"], [(1, 0, 400)])
        self.assertEqual([attempt for attempt, *_ in seen["silent"]], [1, 2])
        beating_row = api("GET", "/v1/outbox/hb-beating:0")
        self.assertEqual(beating_row["result"], "alive")
        self.assertIsNotNone(beating_row["heartbeat_at"])
        self.assertIn("beat", beating_row["progress"])
        self.assertEqual(api("GET", "/v1/outbox/hb-silent:0")["result"], "on time")

    async def test_workflow_cancel_reaches_the_handler(self) -> None:
        ns = "w-cancel"
        started: List[str] = []
        told: Dict[str, Tuple[bool, Any]] = {}

        async def wait(task: outboxd.Task, context: outboxd.Context) -> Any:
            started.append(task.dispatch_key)
            await asyncio.wait_for(context.cancel_event.wait(), 20)
            told[task.dispatch_key] = (context.cancelled, context.cancel_reason)
            return "stopped"  # a later answer to a cancelled task: harmless

        worker = outboxd.Worker(support.options(namespaces=[ns]), {"wait": wait})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(stage, [outboxd.OutboxRow("wf-cancel", i, "wait",
                                                              namespace=ns) for i in range(3)])
            await wait_until(lambda: len(started) == 3, 15, "3 tasks running")
            answer = await asyncio.to_thread(api, "POST", "/v1/workflows/wf-cancel/cancel")
            self.assertEqual(sorted(answer["cancelled"]), [f"wf-cancel:{i}" for i in range(3)])
            await wait_until(lambda: len(told) == 3, 10, "3 handlers told of the cancel")
            await wait_until(lambda: worker.stats().tasks_in_flight == 0, 5, "answers")
            await asyncio.sleep(0.3)  # the answers reached the nodes
            stats = worker.stats()
        self.assertTrue(all(cancelled and reason for cancelled, reason in told.values()))
        self.assertEqual(stats.tasks_cancelled, 3)
        self.assertEqual(await asyncio.to_thread(support.statuses, ns), {"cancelled": 3})

    async def test_sigterm_lets_the_worker_finish_its_tasks(self) -> None:
        ns = "w-sigterm"
        script = os.path.join(support.CLIENT_DIR, "examples", "worker.py")
        process = support.spawn_python(
            [script, "--url", support.worker_url(0), "--namespaces", ns, "--max-in-flight", "8",
             "--log-level", "warning"], stdin=subprocess.DEVNULL)
        try:
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"term-{i}", 0, "sleep",
                                                              {"ms": 1500}, namespace=ns)
                                            for i in range(4)])
            await wait_for_rows(ns, {"claimed": 4}, timeout=20)
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            # Staged after the signal: the stopping worker takes none of it.
            await asyncio.to_thread(stage, [outboxd.OutboxRow("term-late", 0, "sleep",
                                                              {"ms": 10}, namespace=ns)])
            status = await asyncio.to_thread(process.wait, 15)
            took = time.monotonic() - signalled
        finally:
            support.terminate(process)
        self.assertEqual(status, 0)
        self.assertLess(took, 10)
        # The worker exits once its answers are on the wire; the node records them in its next
        # outcome batch (the protocol has no acknowledgement).
        await wait_for_rows(ns, {"done": 4, "pending": 1}, timeout=10)
        rows = sql("SELECT dispatch_key, status, attempt, (result->>'slept_ms')::int "
                   "FROM outbox WHERE namespace = %s ORDER BY dispatch_key", (ns,))
        finished = [row for row in rows if row[0] != "term-late:0"]
        self.assertEqual([row[1:3] for row in finished], [("done", 0)] * 4)
        self.assertTrue(all(row[3] >= 1400 for row in finished), rows)
        self.assertEqual([row[1] for row in rows if row[0] == "term-late:0"], ["pending"])


if __name__ == "__main__":
    unittest.main()

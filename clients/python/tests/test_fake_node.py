"""The worker against scripted nodes in this process (websockets servers on 127.0.0.1): the
exact frames it sends for hello, batched answers, refused results, cancels, drains,
reconnects, cluster lists and the credit split, and a stop past its grace. No outboxd and
no database needed."""

from __future__ import annotations

import asyncio
import json
import random
import unittest
from typing import Any, List, Optional

import support  # noqa: F401  (sets the path)
import websockets

import outboxd

TIMEOUT = 10


class FakeNode:
    """Records every frame a worker sends, per connection; the test answers by hand."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.frames: "asyncio.Queue[tuple[int, str]]" = asyncio.Queue()
        self.connections: List[Any] = []
        self.server: Any = None
        self.url = ""
        self.texts: List[str] = []  # every frame read by next(), as sent
        self.batches = 0  # how many of them were batch frames
        self._pending: List[dict] = []

    async def start(self) -> None:
        # A free port below the ephemeral range (this machine's rule for ports we pick).
        for _ in range(100):
            port = random.randint(20000, 32767)
            try:
                self.server = await websockets.serve(self._serve, "127.0.0.1", port)
                break
            except OSError:
                continue
        else:
            raise RuntimeError("no free port in 20000..32767")
        self.url = f"ws://127.0.0.1:{port}/v1/workers"

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, ws: Any) -> None:
        self.connections.append(ws)
        number = len(self.connections)
        try:
            async for text in ws:
                await self.frames.put((number, text))
        except websockets.exceptions.ConnectionClosed:
            pass

    async def next(self) -> dict:
        """The next message the worker sent (members of a batch one by one)."""
        while not self._pending:
            _, text = await asyncio.wait_for(self.frames.get(), TIMEOUT)
            self.texts.append(text)
            frame = json.loads(text)
            if frame["type"] == "batch":
                self.batches += 1
                self._pending = frame["frames"]
            else:
                self._pending = [frame]
        return self._pending.pop(0)

    async def send(self, frame: Any, connection: int = -1) -> None:
        await self.connections[connection].send(json.dumps(frame))

    async def welcome(self, cluster: Optional[List["FakeNode"]] = None, **extra: Any) -> None:
        nodes = cluster or [self]
        await self.send({"type": "welcome", "node_id": self.node_id, "session_id": "s",
                         "cluster": [{"node_id": n.node_id, "url": n.url} for n in nodes],
                         "batch": True, "max_frame_bytes": 1 << 20, "max_result_bytes": 65536,
                         **extra})


def task(task_id: str, activity_type: str = "noop", **fields: Any) -> dict:
    frame = {"type": "task", "task_id": task_id, "dispatch_key": f"k-{task_id}",
             "workflow_id": "wf", "ordinal": 0, "run_id": None, "namespace": "default",
             "task_queue": "default", "node": None, "activity_type": activity_type,
             "input": None, "attempt": 1, "timeout_ms": 30000, "priority": 0}
    frame.update(fields)
    return frame


class FakeNodeTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.nodes: List[FakeNode] = []
        self.cancelled: List[str] = []
        self.release = asyncio.Event()

    async def asyncTearDown(self) -> None:
        for node in self.nodes:
            await node.stop()

    async def node(self, node_id: str) -> FakeNode:
        node = FakeNode(node_id)
        await node.start()
        self.nodes.append(node)
        return node

    def worker(self, seed: FakeNode, **options: Any) -> outboxd.Worker:
        async def noop(task: outboxd.Task, context: outboxd.Context) -> Any:
            return {"n": task.input}

        async def big(task: outboxd.Task, context: outboxd.Context) -> Any:
            return "x" * 200

        async def database(task: outboxd.Task, context: outboxd.Context) -> Any:
            return task.database

        async def hold(task: outboxd.Task, context: outboxd.Context) -> Any:
            waits = [asyncio.ensure_future(context.wait_cancelled()),
                     asyncio.ensure_future(self.release.wait())]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waits:
                waiter.cancel()
            if context.cancelled:
                self.cancelled.append(task.task_id)
            return "held"

        settings = dict(urls=seed.url, worker_id="fake-test", max_in_flight=64,
                        reconnect_min=0.05, reconnect_max=0.2, rebalance_interval=0)
        settings.update(options)
        return outboxd.Worker(outboxd.WorkerOptions(**settings),
                              {"noop": noop, "big": big, "hold": hold, "database": database})

    async def test_protocol_of_one_connection(self) -> None:
        node = await self.node("fake-1")
        worker = self.worker(node)
        async with support.running(worker):
            hello = await node.next()
            self.assertEqual(hello, {"type": "hello", "worker_id": "fake-test",
                                     "namespaces": ["default"], "task_queue": "default",
                                     "node": None,
                                     "activity_types": ["noop", "big", "hold", "database"],
                                     "max_in_flight": 64, "batch": True,
                                     "max_frame_bytes": 1 << 20})
            await node.welcome(max_frame_bytes=2048, max_result_bytes=100)

            # Answers that are ready together leave together, within the node's frame bound.
            await node.send({"type": "batch", "frames": [task(f"{i}.1", input=i)
                                                         for i in range(30)]})
            answers = {}
            while len(answers) < 30:
                answer = await node.next()
                answers[answer["task_id"]] = answer
            self.assertGreater(node.batches, 0)
            self.assertTrue(all(len(text.encode()) <= 2048 for text in node.texts))
            self.assertEqual(answers["7.1"], {"type": "complete", "task_id": "7.1",
                                              "result": {"n": 7}})

            # The handler sees the task's database; a node that names none means the default.
            await node.send(task("d1.1", "database", database="orders"))
            self.assertEqual((await node.next())["result"], "orders")
            await node.send(task("d2.1", "database"))
            self.assertEqual((await node.next())["result"], "default")

            # A result over the welcome's max_result_bytes fails the task for good.
            await node.send(task("big.1", "big"))
            refused = await node.next()
            self.assertEqual((refused["type"], refused["task_id"], refused["retryable"]),
                             ("fail", "big.1", False))
            # A result the node refused anyway (measured differently) is failed the same way.
            await node.send({"type": "error", "code": "result_refused",
                             "message": "result of task '77.1' is 70000 bytes, more than the "
                                        "node keeps (65536); the task is still outstanding"})
            failed = await node.next()
            self.assertEqual((failed["type"], failed["task_id"], failed["retryable"]),
                             ("fail", "77.1", False))

            # A cancel sets the handler's flag; its answer follows.
            await node.send(task("h.1", "hold"))
            await support.wait_until(lambda: worker.stats().tasks_in_flight == 1, TIMEOUT,
                                     "the held task")
            await node.send({"type": "cancel", "task_id": "h.1", "reason": "workflow cancelled"})
            self.assertEqual(await node.next(), {"type": "complete", "task_id": "h.1",
                                                 "result": "held"})
            self.assertEqual(self.cancelled, ["h.1"])

            # Drain, then the node goes: a seed is dialled again and says hello again.
            await node.send({"type": "drain"})
            await support.wait_until(lambda: worker.stats().drains == 1, TIMEOUT, "drain")
            await node.connections[0].close()
            self.assertEqual((await node.next())["type"], "hello")
            self.assertEqual(len(node.connections), 2)
            stats = worker.stats()
        self.assertEqual(stats.tasks_cancelled, 1)
        self.assertGreaterEqual(stats.reconnects, 1)
        self.assertEqual(stats.tasks_completed, 33)

    async def test_credit_follows_the_cluster_list(self) -> None:
        a, b = await self.node("a"), await self.node("b")
        worker = self.worker(a)
        async with support.running(worker):
            self.assertEqual((await a.next())["max_in_flight"], 64)
            await a.welcome(cluster=[a, b])  # the worker learns b and splits its credit
            hello_b = await b.next()
            self.assertEqual((hello_b["type"], hello_b["max_in_flight"]), ("hello", 32))
            self.assertEqual(await a.next(), {"type": "credit", "max_in_flight": 32})
            await b.welcome(cluster=[a, b])
            await support.wait_until(lambda: worker.stats().connected_nodes == 2, TIMEOUT, "b")
            # b leaves the list: its connection is closed and a gets the whole window.
            await a.send({"type": "cluster", "nodes": [{"node_id": "a", "url": a.url}]})
            self.assertEqual(await a.next(), {"type": "credit", "max_in_flight": 64})
            await support.wait_until(lambda: worker.connected_urls() == [a.url], TIMEOUT,
                                     "b dropped")

    async def test_stop_past_its_grace_fails_what_is_left(self) -> None:
        node = await self.node("fake-1")
        worker = self.worker(node, stop_grace=0.3)
        runner = asyncio.get_running_loop().create_task(worker.run(handle_signals=False))
        await node.next()
        await node.welcome()
        await node.send(task("h.1", "hold"))
        await support.wait_until(lambda: worker.stats().tasks_in_flight == 1, TIMEOUT, "held")
        worker.stop()
        self.assertEqual(await node.next(), {"type": "credit", "max_in_flight": 0})
        # Sent before the credit 0 arrived: handed straight back.
        await node.send(task("late.1", "noop"))
        self.assertEqual(await node.next(), {"type": "fail", "task_id": "late.1",
                                             "error": "worker stopping", "retryable": True})
        self.assertEqual(await node.next(), {"type": "fail", "task_id": "h.1",
                                             "error": "worker stopping", "retryable": True})
        await asyncio.wait_for(runner, TIMEOUT)
        self.assertEqual(worker.stats().tasks_failed, 2)


if __name__ == "__main__":
    unittest.main()

"""A node's drain frame (the node got SIGTERM) while the worker holds tasks of it: the worker
takes nothing more from that node, finishes and answers what it holds there, and goes on
with the other node. Needs 2 nodes it may stop (OUTBOXD_TEST_NODES_EXPENDABLE=1)."""

from __future__ import annotations

import asyncio
import os
import signal
import unittest
from typing import List, Tuple

import support
from support import running, sql, stage, wait_for_rows, wait_until

import outboxd


class NodeDrainTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        if not support.nodes_expendable() or len(support.nodes()) < 2:
            self.skipTest("needs 2 nodes it may stop (OUTBOXD_TEST_NODES_EXPENDABLE=1)")

    async def test_drain_finishes_the_tasks_of_the_draining_node(self) -> None:
        ns = "drain"
        seen: List[Tuple[str, str, int]] = []
        release = asyncio.Event()

        async def hold(task: outboxd.Task, context: outboxd.Context) -> str:
            seen.append((task.dispatch_key, context.node_id, task.attempt))
            if task.input.get("hold"):
                await release.wait()
            return context.node_id

        worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=64),
                                {"hold": hold})
        async with running(worker, nodes_connected=2):
            await asyncio.to_thread(support.await_shards_spread)
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"drain-{i}", 0, "hold",
                                                              {"hold": True}, namespace=ns)
                                            for i in range(40)])
            await wait_until(lambda: len(seen) == 40, 20, "40 tasks held")
            held_on_2 = sum(1 for _, node, _ in seen if node == "node-2")
            self.assertGreater(held_on_2, 0)
            pid = support.node_pids()[1]
            os.kill(pid, signal.SIGTERM)
            await wait_until(lambda: worker.stats().drains == 1, 10, "the drain frame")
            release.set()
            await wait_for_rows(ns, {"done": 40}, timeout=20)
            await wait_until(lambda: not support.node_alive(pid), 20, "node-2 to exit")
            # Work staged now is taken through node-1 alone, which takes over the shards.
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"after-{i}", 0, "hold", {},
                                                              namespace=ns) for i in range(40)])
            await wait_for_rows(ns, {"done": 80}, timeout=30)
            stats = worker.stats()
        keys = [key for key, _, _ in seen]
        self.assertEqual(len(keys), len(set(keys)), "a task was delivered twice")
        self.assertTrue(all(attempt == 1 for _, _, attempt in seen))
        self.assertEqual({node for key, node, _ in seen if key.startswith("after-")}, {"node-1"})
        # Every held task of node-2 was answered through its draining connection.
        answered_by = dict(sql("SELECT dispatch_key, result #>> '{}' FROM outbox "
                               "WHERE namespace = %s AND dispatch_key LIKE 'drain-%%'", (ns,)))
        self.assertEqual(sum(1 for node in answered_by.values() if node == "node-2"), held_on_2)
        # The drained learned node is not dialled again.
        self.assertEqual((stats.connected_nodes, stats.reconnects), (1, 0))
        self.assertEqual(stats.answers_dropped, 0)


if __name__ == "__main__":
    unittest.main()

"""kill -9 of a node while a worker drains a backlog over 3 nodes: the worker finishes every
row through the other two (the killed node's claims are re-armed once its lease lapses, and
its shards taken over). Needs 3 nodes it may kill (OUTBOXD_TEST_NODES_EXPENDABLE=1)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import unittest
from typing import Dict, List

import support
from support import running, sql, stage, wait_for_rows, wait_until

import outboxd

ROWS = 2000


class NodeFailoverTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        if not support.nodes_expendable() or len(support.nodes()) < 3:
            self.skipTest("needs 3 nodes it may kill (OUTBOXD_TEST_NODES_EXPENDABLE=1)")

    async def test_a_killed_node_loses_no_row(self) -> None:
        ns = "failover"
        deliveries: Dict[str, List[int]] = {}
        by_node: Dict[str, int] = {}

        async def work(task: outboxd.Task, context: outboxd.Context) -> int:
            deliveries.setdefault(task.dispatch_key, []).append(task.attempt)
            by_node[context.node_id] = by_node.get(context.node_id, 0) + 1
            await asyncio.sleep(0.05)
            return task.attempt

        worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=30),
                                {"work": work})
        async with running(worker, nodes_connected=3):
            await asyncio.to_thread(support.await_shards_spread)
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"fo-{i}", 0, "work",
                                                              namespace=ns)
                                            for i in range(ROWS)])
            await wait_until(lambda: worker.stats().tasks_completed >= ROWS // 5, 30,
                             "a fifth of the rows done")
            self.assertEqual(set(by_node), {"node-1", "node-2", "node-3"})
            victim = support.node_pids()[1]
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            done_at_kill = worker.stats().tasks_completed
            self.assertLess(done_at_kill, ROWS, "the backlog ended before the kill")
            await wait_for_rows(ns, {"done": ROWS}, timeout=60)
            recovered_in = time.monotonic() - killed_at
            await wait_until(lambda: worker.stats().connected_nodes == 2, 20,
                             "the killed node dropped from the worker's links")
        self.assertEqual(len(deliveries), ROWS)
        redelivered = [key for key, attempts in deliveries.items() if len(attempts) > 1]
        # Only tasks that were out at the killed node come again (at most its credit share).
        self.assertLessEqual(len(redelivered), 30)
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = %s AND "
                             "status = 'done' AND result IS NOT NULL", (ns,)), [(ROWS,)])
        print(f"\nfailover: {done_at_kill} rows done at the kill, all {ROWS} "
              f"{recovered_in:.1f} s later; {len(redelivered)} redelivered", flush=True)


if __name__ == "__main__":
    unittest.main()

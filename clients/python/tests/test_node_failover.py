"""kill -9 of a node while a worker drains a backlog over 3 nodes: the worker finishes every
row through the other two (the killed node's claims are re-armed once its lease lapses, and
its shards taken over); then kill -9 of its seed, and every row finishes through the last
node, which it learned of. Needs 3 nodes it may kill (OUTBOXD_TEST_NODES_EXPENDABLE=1)."""

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

    async def test_killed_nodes_lose_no_row(self) -> None:
        ns = "failover"
        deliveries: Dict[str, List[int]] = {}
        by_node: Dict[str, int] = {}

        async def work(task: outboxd.Task, context: outboxd.Context) -> int:
            deliveries.setdefault(task.dispatch_key, []).append(task.attempt)
            node = context.node_id or "?"
            by_node[node] = by_node.get(node, 0) + 1
            await asyncio.sleep(0.05)
            return task.attempt

        async def kill_mid_run(batch: str, index: int, expected_done: int) -> str:
            """Stages ROWS rows, kills node `index` once a fifth of them are done and waits
            until the namespace has `expected_done` rows done."""
            base = worker.stats().tasks_completed
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"{batch}-{i}", 0, "work",
                                                              namespace=ns)
                                            for i in range(ROWS)])
            await wait_until(lambda: worker.stats().tasks_completed >= base + ROWS // 5, 30,
                             "a fifth of the rows done")
            os.kill(support.node_pids()[index], signal.SIGKILL)
            killed_at = time.monotonic()
            done_at_kill = worker.stats().tasks_completed - base
            self.assertLess(done_at_kill, ROWS, "the backlog ended before the kill")
            await wait_for_rows(ns, {"done": expected_done}, timeout=60)
            return (f"node-{index + 1} killed with {done_at_kill} of {ROWS} rows done, all "
                    f"done {time.monotonic() - killed_at:.1f} s later")

        worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=30),
                                {"work": work})
        async with running(worker, nodes_connected=3):
            await asyncio.to_thread(support.await_shards_spread)
            # A learned node first: it leaves the cluster lists and the worker's links.
            first = await kill_mid_run("a", 1, ROWS)
            self.assertEqual(set(by_node), {"node-1", "node-2", "node-3"})
            await wait_until(lambda: worker.stats().connected_nodes == 2, 20,
                             "the killed node dropped from the worker's links")
            # Then the seed: the worker goes on through the node it learned of.
            second = await kill_mid_run("b", 0, 2 * ROWS)
            self.assertEqual(worker.connected_urls(), [support.worker_url(2)])
        self.assertEqual(len(deliveries), 2 * ROWS)
        redelivered = [key for key, attempts in deliveries.items() if len(attempts) > 1]
        # Only tasks that were out at a killed node come again (at most the whole window).
        self.assertLessEqual(len(redelivered), 2 * 30)
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = %s AND "
                             "status = 'done' AND result IS NOT NULL", (ns,)), [(2 * ROWS,)])
        print(f"\nfailover: {first}; {second}; {len(redelivered)} redelivered", flush=True)

if __name__ == "__main__":
    unittest.main()

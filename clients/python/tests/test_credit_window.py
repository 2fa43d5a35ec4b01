"""The credit window as a user meets it, over 3 real nodes: a worker with max_in_flight 8,
seeded with node-1, starts on a backlog while node-2 and node-3 are held still (SIGSTOP,
well within their lease), so its connections to them open only once the seed holds a full
window of tasks; they then have tasks of their own to send at once. The worker must never
run more than 8 handlers at once. Three rounds, each a new worker on a new backlog. Needs 3
nodes it may pause (OUTBOXD_TEST_NODES_EXPENDABLE=1)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import unittest
from typing import Dict, List

import support
from support import stage, wait_for_rows, wait_until

import outboxd

WINDOW = 8
ROWS = 300
ROUNDS = 3


class CreditWindowTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        if not support.nodes_expendable() or len(support.nodes()) < 3:
            self.skipTest("needs 3 nodes it may pause (OUTBOXD_TEST_NODES_EXPENDABLE=1)")

    async def test_a_worker_never_runs_more_than_its_window(self) -> None:
        rng = random.Random(8)
        peaks: List[int] = []
        for round_number in range(ROUNDS):
            ns = f"window-{round_number}"
            running = 0
            peak = 0
            by_node: Dict[str, int] = {}

            async def work(task: outboxd.Task, context: outboxd.Context) -> None:
                nonlocal running, peak
                running += 1
                peak = max(peak, running)
                node = context.node_id or "?"
                by_node[node] = by_node.get(node, 0) + 1
                try:
                    await asyncio.sleep(rng.uniform(0.05, 0.25))
                finally:
                    running -= 1

            await asyncio.to_thread(support.await_shards_spread)
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"{ns}-{i}", 0, "work",
                                                              namespace=ns)
                                            for i in range(ROWS)])
            worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=WINDOW),
                                    {"work": work})
            paused = support.node_pids()[1:]
            for pid in paused:
                os.kill(pid, signal.SIGSTOP)
            try:
                async with support.running(worker):
                    await wait_until(lambda: running == WINDOW, 1.2, "the seed's full window")
                    for pid in paused:
                        os.kill(pid, signal.SIGCONT)
                    await wait_until(lambda: worker.stats().connected_nodes == 3, 20,
                                     "the worker on all three nodes")
                    await wait_for_rows(ns, {"done": ROWS}, timeout=60)
                    stats = worker.stats()
            finally:
                for pid in paused:
                    os.kill(pid, signal.SIGCONT)
            peaks.append(peak)
            self.assertEqual(stats.tasks_completed, ROWS)
            # The rows are spread over the nodes' shards: every node served some.
            self.assertEqual(len(by_node), 3, by_node)
        print(f"\nmost handlers running at once, per round (window {WINDOW}): {peaks}",
              flush=True)
        self.assertLessEqual(max(peaks), WINDOW, f"peaks {peaks}")


if __name__ == "__main__":
    unittest.main()

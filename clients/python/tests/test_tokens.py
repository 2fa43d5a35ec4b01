"""Worker tokens, on a cluster started with --tokens (with_cluster.py)."""

from __future__ import annotations

import asyncio
import unittest

import support
from support import running, stage, wait_for_rows, wait_until

import outboxd


async def echo(task: outboxd.Task, context: outboxd.Context) -> str:
    return task.dispatch_key


class TokenTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        if not support.worker_token():
            self.skipTest("the cluster has no tokens (with_cluster.py --tokens)")

    async def test_the_worker_token_opens_the_socket(self) -> None:
        ns = "sec-token"
        worker = outboxd.Worker(support.options(namespaces=[ns]), {"echo": echo})
        async with running(worker):
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"tok-{i}", 0, "echo", namespace=ns)
                                            for i in range(20)])
            await wait_for_rows(ns, {"done": 20}, timeout=20)

    async def test_a_wrong_or_missing_token_is_refused(self) -> None:
        ns = "sec-refused"
        for token in ("not-the-token", None):
            with self.subTest(token=token):
                worker = outboxd.Worker(support.options(namespaces=[ns], token=token,
                                                        reconnect_min=0.05, reconnect_max=0.1),
                                        {"echo": echo})
                runner = asyncio.get_running_loop().create_task(worker.run(handle_signals=False))
                try:
                    await wait_until(lambda: worker.stats().reconnects >= 3, 10, "retries")
                    self.assertEqual(worker.stats().connected_nodes, 0)
                finally:
                    worker.stop()
                    await asyncio.wait_for(runner, 10)
        # The admin token is admin of every namespace, which includes being a worker.
        admin = support.env("OUTBOXD_TEST_ADMIN_TOKEN")
        worker = outboxd.Worker(support.options(namespaces=[ns], token=admin), {"echo": echo})
        runner = asyncio.get_running_loop().create_task(worker.run(handle_signals=False))
        try:
            await wait_until(lambda: worker.stats().connected_nodes == 1, 10, "connected")
        finally:
            worker.stop()
            await asyncio.wait_for(runner, 10)


if __name__ == "__main__":
    unittest.main()

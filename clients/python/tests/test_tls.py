"""wss:// with a CA file, on a cluster that serves TLS (with_cluster.py --tls)."""

from __future__ import annotations

import asyncio
import os
import unittest

import support
from support import running, stage, wait_for_rows, wait_until

import outboxd


async def echo(task: outboxd.Task, context: outboxd.Context) -> str:
    return task.dispatch_key


class TlsTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        if not support.ca_file():
            if os.environ.get("OUTBOXD_TEST_TLS") == "1":
                self.fail("OUTBOXD_TEST_TLS=1 but with_cluster.py exported no CA file")
            self.skipTest("the cluster does not serve TLS (with_cluster.py --tls)")

    async def test_wss_with_a_ca_file_over_every_node(self) -> None:
        ns = "sec-tls"
        self.assertTrue(support.worker_url(0).startswith("wss://"))
        nodes_seen = set()

        async def where(task: outboxd.Task, context: outboxd.Context) -> str:
            nodes_seen.add(context.node_id)
            return task.dispatch_key

        worker = outboxd.Worker(support.options(namespaces=[ns], max_in_flight=32),
                                {"echo": where})
        count = len(support.nodes())
        async with running(worker, nodes_connected=count):
            self.assertTrue(all(url.startswith("wss://") for url in worker.connected_urls()))
            await asyncio.to_thread(stage, [outboxd.OutboxRow(f"tls-{i}", 0, "echo",
                                                              namespace=ns) for i in range(200)])
            await wait_for_rows(ns, {"done": 200}, timeout=30)
        self.assertEqual(len(nodes_seen), count)

    async def test_an_unknown_ca_is_refused(self) -> None:
        # The system trust store does not know the throwaway CA.
        worker = outboxd.Worker(support.options(ca_file=None, reconnect_min=0.05,
                                                reconnect_max=0.1), {"echo": echo})
        runner = asyncio.get_running_loop().create_task(worker.run(handle_signals=False))
        try:
            await wait_until(lambda: worker.stats().reconnects >= 2, 10, "retries")
            self.assertEqual(worker.stats().connected_nodes, 0)
        finally:
            worker.stop()
            await asyncio.wait_for(runner, 10)

    def test_a_bad_ca_file_is_refused_up_front(self) -> None:
        with self.assertRaisesRegex(ValueError, "ca_file"):
            outboxd.Worker(support.options(ca_file="/nonexistent/ca.pem"), {"echo": echo})


if __name__ == "__main__":
    unittest.main()

"""The client's pure parts, without a node or a database: credit split, cluster plan,
backoff, frame encoding and batching, task frames, result checks, row validation, options."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import unittest
from typing import Any, List

import support  # noqa: F401  (sets the path)

import outboxd
from outboxd import protocol
from outboxd.backoff import RetryBackoff
from outboxd.cluster import KnownNode, NodeInfo, parse_nodes, plan_cluster
from outboxd.credit import (ConnectionLoad, IntervalLoad, LoadMeter, next_demand,
                            split_credits)
from outboxd.session import Session
from outboxd.staging import StageError, rows_document


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def task_frame(**overrides: Any) -> dict:
    frame = {"type": "task", "task_id": "1.1", "dispatch_key": "wf:0", "workflow_id": "wf",
             "ordinal": 0, "run_id": None, "namespace": "default", "task_queue": "default",
             "node": None, "activity_type": "noop", "input": {"a": 1}, "attempt": 1,
             "timeout_ms": 30000, "priority": 0}
    frame.update(overrides)
    return frame


def shares(total: int, loads: List[ConnectionLoad], **elsewhere: int) -> List[int]:
    return split_credits(total, loads, **elsewhere).shares


class CreditTest(unittest.TestCase):
    def test_even_split(self) -> None:
        self.assertEqual(shares(256, [ConnectionLoad()] * 3), [86, 85, 85])
        self.assertEqual(shares(2, [ConnectionLoad()] * 3), [1, 1, 1])  # 1 each, past the total
        self.assertEqual(shares(16, []), [])

    def test_backlog_takes_the_credit_of_an_idle_connection(self) -> None:
        # Both at 128; the first kept full, the second idle: the window moves over time, as
        # the second's node comes to apply its lowered credit (reserved falls back to it).
        credits = [128, 128]
        demands = [128.0, 128.0]
        for _ in range(10):
            loads = [IntervalLoad(credits[0], 500, 1.0, credits[0]),
                     IntervalLoad(credits[1], 0, 0.0, 0.0)]
            demands = [next_demand(demands[i], loads[i], 256) for i in range(2)]
            credits = shares(256, [ConnectionLoad(credits[0], demands[0], credits[0]),
                                   ConnectionLoad(credits[1], demands[1], credits[1])])
            self.assertLessEqual(sum(credits), 256)
        self.assertGreater(credits[0], 240)
        self.assertGreaterEqual(credits[1], 1)

    def test_raises_wait_for_room(self) -> None:
        # The second connection still holds 100 tasks of its old credit: the first may grow
        # only into what is free.
        self.assertEqual(
            shares(200, [ConnectionLoad(100, 200, 100), ConnectionLoad(100, 1, 100)]), [100, 1])
        self.assertEqual(shares(200, [ConnectionLoad(100, 200, 100), ConnectionLoad(1, 1, 0)]),
                         [199, 1])
        # A lowered credit frees nothing until the node can have seen it (reserved says so).
        split = split_credits(10, [ConnectionLoad(10, 10, 10), ConnectionLoad(0, 5, 0)])
        self.assertEqual((split.shares, split.waiting), ([5, 0], True))
        split = split_credits(10, [ConnectionLoad(5, 10, 5), ConnectionLoad(0, 5, 0)])
        self.assertEqual((split.shares, split.waiting), ([5, 5], False))
        # Connections outside the split (draining) take their part of the window.
        self.assertEqual(shares(10, [ConnectionLoad(5, 10, 5)], reserved_elsewhere=3,
                                holding_elsewhere=1), [7])

    def test_hysteresis_keeps_small_changes(self) -> None:
        self.assertEqual(shares(100, [ConnectionLoad(50, 51, 50), ConnectionLoad(50, 49, 50)]),
                         [50, 50])

    def test_meter(self) -> None:
        meter = LoadMeter(0.0)
        meter.advance(1.0, 4, 4)  # full for a second
        meter.received += 10
        load = meter.take(2.0, 0, 4)  # empty for the next
        self.assertEqual((load.credit, load.received), (4, 10))
        self.assertAlmostEqual(load.full_fraction, 0.5)
        self.assertAlmostEqual(load.mean_in_flight, 2.0)
        self.assertEqual(next_demand(0, load, 100), 8.0)  # a backlog asks for twice its credit
        idle = IntervalLoad(credit=8, received=1, full_fraction=0, mean_in_flight=1)
        self.assertEqual(next_demand(8.0, idle, 100), 4.75)  # decays by half towards 1.5


class ClusterPlanTest(unittest.TestCase):
    def test_connects_new_nodes_and_drops_unlisted_non_seeds(self) -> None:
        known = [KnownNode("ws://a/v1/workers", "a", seed=True, connected=True),
                 KnownNode("ws://b/v1/workers", "b", connected=True),
                 KnownNode("ws://c/v1/workers", "c", connected=False)]
        plan = plan_cluster(known, [NodeInfo("a", "ws://a/v1/workers"),
                                    NodeInfo("b", "ws://b/v1/workers"),
                                    NodeInfo("d", "ws://d/v1/workers"),
                                    NodeInfo("d", "ws://d/v1/workers")])
        self.assertEqual(plan.connect, [NodeInfo("d", "ws://d/v1/workers")])
        self.assertEqual(plan.drop, ["ws://c/v1/workers"])

    def test_a_seed_known_by_node_id_is_not_dialled_twice(self) -> None:
        known = [KnownNode("ws://localhost:1/v1/workers", "a", seed=True, connected=True)]
        plan = plan_cluster(known, [NodeInfo("a", "ws://127.0.0.1:1/v1/workers")])
        self.assertEqual((plan.connect, plan.drop), ([], []))

    def test_an_empty_list_changes_nothing(self) -> None:
        plan = plan_cluster([KnownNode("ws://b/v1/workers", "b")], [])
        self.assertEqual((plan.connect, plan.drop), ([], []))

    def test_parse_nodes_skips_junk(self) -> None:
        self.assertEqual(parse_nodes([{"node_id": "a", "url": "ws://a"}, 3, {"node_id": 1}]),
                         [NodeInfo("a", "ws://a")])
        self.assertEqual(parse_nodes(None), [])


class BackoffTest(unittest.TestCase):
    def test_grows_with_jitter_within_bounds_and_resets(self) -> None:
        backoff = RetryBackoff(0.1, 5.0, random.Random(7))
        delays = [backoff.next() for _ in range(12)]
        for n, delay in enumerate(delays):
            ceiling = min(0.1 * 2 ** n, 5.0)
            self.assertGreaterEqual(delay, max(ceiling / 2, 0.1) - 1e-9)
            self.assertLessEqual(delay, ceiling)
        backoff.reset()
        self.assertLessEqual(backoff.next(), 0.1)


class ProtocolTest(unittest.TestCase):
    def test_encoders_make_the_documented_frames(self) -> None:
        self.assertEqual(json.loads(protocol.encode_complete("1.2", protocol.dumps({"ü": 1}))),
                         {"type": "complete", "task_id": "1.2", "result": {"ü": 1}})
        fail = json.loads(protocol.encode_fail("1.2", "é" * 5000, False))
        self.assertEqual((fail["type"], fail["retryable"]), ("fail", False))
        self.assertLessEqual(len(fail["error"].encode()), protocol.MAX_ERROR_BYTES)
        self.assertEqual(json.loads(protocol.encode_fail("x", "bad \ud800 text", True))["error"],
                         "bad ? text")
        self.assertEqual(json.loads(protocol.encode_heartbeat("1.2", None)),
                         {"type": "heartbeat", "task_id": "1.2"})
        hello = json.loads(protocol.encode_hello(
            worker_id="w", namespaces=["a"], task_queue="q", node=None, activity_types=["t"],
            max_in_flight=3, batch=True, max_frame_bytes=4096))
        self.assertEqual((hello["batch"], hello["max_frame_bytes"], hello["max_in_flight"]),
                         (True, 4096, 3))

    def test_node_messages(self) -> None:
        members = [task_frame(task_id="1.1"), task_frame(task_id="2.1")]
        self.assertEqual(protocol.node_messages(json.dumps({"type": "batch", "frames": members})),
                         members)
        self.assertEqual(protocol.node_messages('{"type":"drain"}'), [{"type": "drain"}])
        for bad in ("nope", "[1]", '{"type":1}', '{"type":"batch","frames":[]}',
                    '{"type":"batch","frames":[1]}'):
            with self.subTest(frame=bad), self.assertRaises(protocol.FrameError):
                protocol.node_messages(bad)

    def test_task_frames(self) -> None:
        task = outboxd.Task.from_frame(task_frame(
            traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            heartbeat_timeout_ms=500, priority=9))
        self.assertEqual((task.trace_id, task.heartbeat_timeout_ms, task.priority),
                         ("4bf92f3577b34da6a3ce929d0e0e4736", 500, 9))
        # The database the row is in; nodes from before several databases leave it out.
        self.assertEqual(outboxd.Task.from_frame(task_frame(database="orders")).database,
                         "orders")
        self.assertEqual(outboxd.Task.from_frame(task_frame()).database, "default")
        self.assertEqual(outboxd.Task.from_frame(task_frame(database=None)).database, "default")
        # The delivery count; nodes from before it leave it out (0: unknown).
        self.assertEqual(outboxd.Task.from_frame(task_frame(delivery=3)).delivery, 3)
        for unknown in ({}, {"delivery": None}, {"delivery": True}, {"delivery": -1},
                        {"delivery": "2"}):
            with self.subTest(frame=unknown):
                self.assertEqual(outboxd.Task.from_frame(task_frame(**unknown)).delivery, 0)
        frame = task_frame()
        del frame["dispatch_key"]
        with self.assertRaisesRegex(Exception, "dispatch_key"):
            outboxd.Task.from_frame(frame)


class FakeWebSocket:
    def __init__(self) -> None:
        self.sent: List[str] = []

    async def send(self, text: str) -> None:
        self.sent.append(text)
        await asyncio.sleep(0)

    async def close(self) -> None:
        pass


class SessionTest(unittest.IsolatedAsyncioTestCase):
    async def test_batches_what_queued_up_within_the_bound(self) -> None:
        ws = FakeWebSocket()
        session = Session(ws, "ws://fake")  # type: ignore[arg-type]
        session.batch_bytes = 1024
        frames = [protocol.encode_complete(f"{i}.1", protocol.dumps("r" * (i % 50)))
                  for i in range(200)]
        for frame in frames:
            session.send(frame)
        self.assertTrue(await session.flush(5))
        members: List[str] = []
        for text in ws.sent:
            self.assertLessEqual(len(text.encode()), 1024)
            decoded = json.loads(text)
            members += ([json.dumps(m) for m in decoded["frames"]] if decoded["type"] == "batch"
                        else [json.dumps(decoded)])
        self.assertEqual(members, [json.dumps(json.loads(f)) for f in frames])
        self.assertLess(len(ws.sent), 40)
        await session.close(1)

    async def test_one_frame_per_write_until_the_node_reads_batches(self) -> None:
        ws = FakeWebSocket()
        session = Session(ws, "ws://fake")  # type: ignore[arg-type]
        for i in range(5):
            session.send(protocol.encode_credit(i))
        self.assertTrue(await session.flush(5))
        self.assertEqual(ws.sent, [protocol.encode_credit(i) for i in range(5)])
        await session.close(1)


class ResultCheckTest(unittest.IsolatedAsyncioTestCase):
    async def test_results_the_node_could_not_keep_fail_for_good(self) -> None:
        worker = outboxd.Worker(outboxd.WorkerOptions(urls="ws://127.0.0.1:9/v1/workers"))
        session = Session(FakeWebSocket(), "ws://fake")  # type: ignore[arg-type]
        session.max_result_bytes = 100
        cases = {"x" * 99: "is 101 bytes", float("nan"): "is not JSON", object(): "is not JSON",
                 "a\x00": "U+0000", "\udc80": "is not JSON"}
        for result, why in cases.items():
            with self.subTest(why=why):
                frame, completed = worker._complete_frame("1.1", result, session)
                decoded = json.loads(frame)
                self.assertFalse(completed)
                self.assertEqual((decoded["type"], decoded["retryable"]), ("fail", False))
                self.assertIn(why, decoded["error"])
        frame, completed = worker._complete_frame("1.1", {"ok": "\\u0000 as text"}, session)
        self.assertTrue(completed)
        self.assertEqual(json.loads(frame)["result"], {"ok": "\\u0000 as text"})
        await session.close(1)

    async def test_heartbeat_progress_that_cannot_go_is_left_out(self) -> None:
        ws = FakeWebSocket()
        session = Session(ws, "ws://fake")  # type: ignore[arg-type]
        context = outboxd.Context("1.1", session)
        session.in_flight["1.1"] = context
        context.heartbeat({"done": 40})
        context.heartbeat("x" * 9000)
        context.answered = True
        context.heartbeat()  # answered: nothing
        self.assertTrue(await session.flush(5))
        self.assertEqual([json.loads(t) for t in ws.sent],
                         [{"type": "heartbeat", "task_id": "1.1", "progress": {"done": 40}},
                          {"type": "heartbeat", "task_id": "1.1"}])
        await session.close(1)


class StageValidationTest(unittest.TestCase):
    def test_rows_document(self) -> None:
        document, count = rows_document([
            outboxd.OutboxRow("w", 1, "a"),
            {"workflow_id": "w", "ordinal": 2, "activity_type": "a", "input": [1, "ü"],
             "visible_after": dt.timedelta(seconds=5), "priority": 3},
            outboxd.OutboxRow("w", 3, "a", visible_after=dt.datetime(
                2030, 1, 1, tzinfo=dt.timezone.utc), namespace="n", traceparent=TRACEPARENT)])
        self.assertEqual(count, 3)
        self.assertEqual(json.loads(document), [
            {"workflow_id": "w", "ordinal": 1, "activity_type": "a", "input": None},
            {"workflow_id": "w", "ordinal": 2, "activity_type": "a", "input": [1, "ü"],
             "visible_in_s": 5.0, "priority": 3},
            {"workflow_id": "w", "ordinal": 3, "activity_type": "a", "input": None,
             "namespace": "n", "visible_at": "2030-01-01T00:00:00+00:00",
             "traceparent": TRACEPARENT}])
        self.assertEqual(rows_document([]), ("[]", 0))

    def test_nesting_bound(self) -> None:
        def nested(levels: int) -> Any:
            value: Any = 1
            for _ in range(levels):
                value = [value]
            return value

        rows_document([outboxd.OutboxRow("w", 0, "a", nested(protocol.MAX_INPUT_NESTING))])
        with self.assertRaisesRegex(StageError, "nests deeper"):
            rows_document([outboxd.OutboxRow("w", 0, "a", nested(protocol.MAX_INPUT_NESTING + 1))])

    def test_bounds(self) -> None:
        for row, message in [
            (outboxd.OutboxRow("w", 2**63, "a"), "ordinal"),
            (outboxd.OutboxRow("w", True, "a"), "ordinal"),  # type: ignore[arg-type]
            (outboxd.OutboxRow("w", 0, "a", node=""), "node: must not be empty"),
            (outboxd.OutboxRow("w" * 1025, 0, "a"), "at most 1024 bytes"),
            (outboxd.OutboxRow("w", 0, "a", traceparent="ff-" + "1" * 32 + "-" + "1" * 16 +
                               "-01"), "version ff"),
            (outboxd.OutboxRow("w", 0, "a", traceparent="00-" + "0" * 32 + "-" + "1" * 16 +
                               "-01"), "all zeros"),
            ("not a row", r"rows\[0\]: must be an OutboxRow"),
        ]:
            with self.subTest(message=message), self.assertRaisesRegex(StageError, message):
                rows_document([row])  # type: ignore[list-item]


class OptionsTest(unittest.TestCase):
    def test_options_that_cannot_work_are_refused(self) -> None:
        good = {"urls": "ws://127.0.0.1:8080/v1/workers"}
        for bad, message in [({"urls": []}, "urls"), ({"urls": "http://x/v1"}, "urls"),
                             ({"max_in_flight": 0}, "max_in_flight"),
                             ({"max_in_flight": 10001}, "max_in_flight"),
                             ({"worker_id": "a\x00"}, "worker_id"),
                             ({"namespaces": "default"}, "namespaces"),
                             ({"token": ""}, "token"), ({"max_frame_bytes": 100}, "max_frame")]:
            with self.subTest(message=message), self.assertRaisesRegex(ValueError, message):
                outboxd.Worker(outboxd.WorkerOptions(**{**good, **bad}))

    def test_handlers_must_be_async(self) -> None:
        worker = outboxd.Worker(outboxd.WorkerOptions(urls="ws://127.0.0.1:8080/v1/workers"))
        with self.assertRaises(TypeError):
            worker.register("sync", lambda task, context: None)  # type: ignore[arg-type,return-value]

    def test_a_tls_seeded_worker_never_follows_plain_ws(self) -> None:
        worker = outboxd.Worker(outboxd.WorkerOptions(urls="wss://127.0.0.1:8443/v1/workers"))
        self.assertIsNone(worker._add_link("ws://10.0.0.2:8080/v1/workers", seed=False))


if __name__ == "__main__":
    unittest.main()

"""outboxd.stage against a real PostgreSQL migrated by real nodes (one node suffices)."""

from __future__ import annotations

import asyncio
import datetime as dt
import unittest

import support  # noqa: F401  (sets the path)

import outboxd
import psycopg
from support import database_url, sql

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class StageTest(unittest.TestCase):
    def test_staged_and_duplicates_in_one_transaction(self) -> None:
        rows = [outboxd.OutboxRow("stage-a", i, "noop", {"i": i}, namespace="stage-a")
                for i in range(500)]
        with psycopg.connect(database_url()) as conn:
            with conn.transaction():
                conn.execute("CREATE TABLE IF NOT EXISTS orders (id int PRIMARY KEY)")
                conn.execute("INSERT INTO orders VALUES (42)")
                first = outboxd.stage(conn.cursor(), rows)
                # Inside the same transaction: every row again, plus one new one.
                again = outboxd.stage(conn.cursor(), rows[:10] + [
                    outboxd.OutboxRow("stage-a", 500, "noop", namespace="stage-a")])
        self.assertEqual(first, outboxd.StageResult(staged=500, duplicates=0))
        self.assertEqual(again, outboxd.StageResult(staged=1, duplicates=10))
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = 'stage-a'"), [(501,)])
        self.assertEqual(sql("SELECT count(*) FROM orders WHERE id = 42"), [(1,)])
        # Repeated within one batch: the second is a duplicate.
        with psycopg.connect(database_url()) as conn:
            row = outboxd.OutboxRow("stage-a", 900, "noop", namespace="stage-a")
            self.assertEqual(outboxd.stage(conn.cursor(), [row, row]), (1, 1))

    def test_rollback_stages_nothing(self) -> None:
        with psycopg.connect(database_url()) as conn:
            with self.assertRaises(RuntimeError):
                with conn.transaction():
                    result = outboxd.stage(conn.cursor(), [
                        outboxd.OutboxRow("stage-rb", i, "noop", namespace="stage-rb")
                        for i in range(20)])
                    self.assertEqual(result.staged, 20)
                    raise RuntimeError("the business write failed")
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = 'stage-rb'"), [(0,)])

    def test_defaults_and_every_field(self) -> None:
        soon = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
        with psycopg.connect(database_url()) as conn:
            with conn.transaction():
                result = outboxd.stage(conn.cursor(), [
                    {"workflow_id": "stage-d", "ordinal": 0, "activity_type": "noop"},
                    outboxd.OutboxRow("stage-f", 3, "charge", {"amount": 9.5, "ü": [1, None]},
                                      namespace="stage-f", task_queue="q", node="eu-1",
                                      run_id="run-1", dispatch_key="custom-key",
                                      visible_after=soon, priority=7, traceparent=TRACEPARENT),
                    outboxd.OutboxRow("stage-f", 4, "charge", namespace="stage-f",
                                      visible_after=dt.timedelta(minutes=10)),
                ])
        self.assertEqual(result, (3, 0))
        defaults = sql("SELECT dispatch_key, namespace, task_queue, node, input, priority, "
                       "traceparent, visible_after <= now(), status FROM outbox "
                       "WHERE workflow_id = 'stage-d'")
        self.assertEqual(defaults, [("stage-d:0", "default", "default", None, None, 0, None,
                                     True, "pending")])
        full = sql("SELECT dispatch_key, task_queue, node, run_id, input, priority, traceparent, "
                   "visible_after FROM outbox WHERE workflow_id = 'stage-f' AND ordinal = 3")
        self.assertEqual(full, [("custom-key", "q", "eu-1", "run-1",
                                 {"amount": 9.5, "ü": [1, None]}, 7, TRACEPARENT, soon)])
        # A delay counts from the database's clock.
        delayed = sql("SELECT visible_after - now() BETWEEN interval '9 minutes' AND "
                      "interval '11 minutes' FROM outbox WHERE dispatch_key = 'stage-f:4'")
        self.assertEqual(delayed, [(True,)])

    def test_bad_rows_are_refused_before_anything_is_sent(self) -> None:
        cases = [
            ({"workflow_id": "w", "activity_type": "noop"}, "rows[1].ordinal: is required"),
            ({"workflow_id": "", "ordinal": 0, "activity_type": "a"}, "rows[1].workflow_id"),
            ({"workflow_id": "w", "ordinal": -1, "activity_type": "a"}, "rows[1].ordinal"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a", "priority": 101},
             "rows[1].priority"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a", "traceparent": "00-x"},
             "rows[1].traceparent"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a", "input": float("nan")},
             "rows[1].input"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a", "input": "a\x00b"},
             "U+0000"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a",
              "visible_after": dt.datetime(2030, 1, 1)}, "timezone-aware"),
            ({"workflow_id": "w", "ordinal": 0, "activity_type": "a", "colour": "red"},
             "unknown field 'colour'"),
        ]
        with psycopg.connect(database_url()) as conn:
            for bad, message in cases:
                with self.subTest(message=message):
                    good = outboxd.OutboxRow("stage-bad", 0, "noop", namespace="stage-bad")
                    with self.assertRaises(outboxd.StageError) as caught:
                        outboxd.stage(conn.cursor(), [good, bad])
                    self.assertIn(message, str(caught.exception))
            conn.rollback()
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = 'stage-bad'"), [(0,)])

    def test_async_cursor(self) -> None:
        async def scenario() -> outboxd.StageResult:
            async with await psycopg.AsyncConnection.connect(database_url()) as conn:
                async with conn.transaction():
                    return await outboxd.astage(conn.cursor(), [
                        outboxd.OutboxRow("stage-async", i, "noop", namespace="stage-async")
                        for i in range(3)])

        self.assertEqual(asyncio.run(scenario()), (3, 0))
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = 'stage-async'"),
                         [(3,)])

    def test_no_rows(self) -> None:
        with psycopg.connect(database_url()) as conn:
            self.assertEqual(outboxd.stage(conn.cursor(), []), (0, 0))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""`outboxd ctl` against real nodes (run under with_cluster.py --nodes 2 --tokens): every
command, tables and --json, the token from the environment, errors and exit codes."""
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.request

BIN = os.environ["OUTBOXD_TEST_BIN_DIR"]
NODES = os.environ["OUTBOXD_TEST_NODES"].split(",")
TOKEN = os.environ["OUTBOXD_TEST_ADMIN_TOKEN"]
DATABASE = os.environ["OUTBOXD_TEST_DATABASE_URL"]


def ctl(*args, token=TOKEN, url=NODES[0]):
    env = dict(os.environ, OUTBOXD_URL=url)
    env.pop("OUTBOXD_ADMIN_TOKEN", None)
    if token is not None:
        env["OUTBOXD_ADMIN_TOKEN"] = token
    done = subprocess.run([os.path.join(BIN, "outboxd"), "ctl", *args], env=env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def sql(query):
    done = subprocess.run(["psql", "-X", "-qAt", DATABASE, "-c", query], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def api(method, path, body=None):
    request = urllib.request.Request(NODES[0] + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def wait_for(predicate, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


class CtlTest(unittest.TestCase):
    def ok(self, *args):
        code, out, err = ctl(*args)
        self.assertEqual(code, 0, f"ctl {' '.join(args)}: {err}")
        return out

    def test_status_lists_every_node_and_the_shards(self):
        self.assertTrue(wait_for(lambda: "1024 of 1024" in ctl("status")[1]))
        out = self.ok("status")
        self.assertIn("node-1", out)
        self.assertIn("node-2", out)
        self.assertRegex(out.splitlines()[0], r"^NODE\s+URL\s+STATE\s+SHARDS\s+RANGES$")
        cluster = json.loads(self.ok("--json", "status"))
        self.assertEqual(sorted(n["node_id"] for n in cluster["nodes"]), ["node-1", "node-2"])
        # Any node answers for the whole cluster.
        self.assertEqual(json.loads(ctl("--json", "status", url=NODES[1])[1]), cluster)

    def test_errors_say_what_is_wrong_with_distinct_exit_codes(self):
        code, _, err = ctl("namespace", "list", token=None)
        self.assertEqual(code, 1)
        self.assertIn("bearer token is required (HTTP 401, unauthorized)", err)
        self.assertEqual(ctl("namespace", "list", token="wrong")[0], 1)
        code, _, err = ctl("row", "show", "no-such-key")
        self.assertEqual(code, 1)
        self.assertIn("HTTP 404", err)
        code, _, err = ctl("status", url="http://127.0.0.1:1")
        self.assertEqual(code, 3)
        self.assertIn("cannot reach 127.0.0.1:1", err)
        code, _, err = ctl("status", url="127.0.0.1:8080")
        self.assertEqual(code, 3)
        self.assertIn("--url must start with http:// or https://", err)
        self.assertEqual(ctl("namespace")[0], 2)
        self.assertEqual(ctl("no-such-command")[0], 2)
        code, _, err = ctl("namespace", "set", "x", "--body", "{oops")
        self.assertEqual(code, 2)
        self.assertIn("not valid JSON", err)
        code, _, err = ctl("dead-letters", "purge")
        self.assertEqual(code, 2)
        self.assertIn("--all", err)

    def test_namespace_set_changes_only_the_fields_named(self):
        self.ok("namespace", "set", "billing", "--weight", "3", "--max-in-flight", "7")
        self.ok("namespace", "set", "billing", "--keep-results", "false",
                "--body", '{"rate_limit":{"per_second":50,"burst":10}}')
        settings = json.loads(self.ok("--json", "namespace", "get", "billing"))
        self.assertEqual(settings["weight"], 3)
        self.assertEqual(settings["max_in_flight"], 7)
        self.assertIs(settings["keep_results"], False)
        self.assertEqual(settings["rate_limit"], {"per_second": 50, "burst": 10})
        self.assertEqual(sql("SELECT weight, max_in_flight, keep_results FROM namespaces "
                             "WHERE namespace = 'billing'"), "3|7|f")
        table = self.ok("namespace", "get", "billing")
        self.assertRegex(table, r"weight\s+3")
        code, _, err = ctl("namespace", "set", "billing", "--weight", "0")
        self.assertEqual(code, 1)
        self.assertIn("'weight' must be an integer between 1 and 1000", err)
        self.assertEqual(sql("SELECT weight FROM namespaces WHERE namespace = 'billing'"), "3")

    def test_namespace_list_counts_rows_as_the_database_does(self):
        api("POST", "/v1/outbox", {"rows": [
            {"workflow_id": f"inv-{i}", "ordinal": 0, "activity_type": "bill",
             "namespace": "invoices"} for i in range(5)]})
        listed = json.loads(self.ok("--json", "namespace", "list"))
        invoices = [n for n in listed["namespaces"] if n["namespace"] == "invoices"][0]
        self.assertEqual(invoices["pending"], int(sql(
            "SELECT count(*) FROM outbox WHERE namespace = 'invoices' AND status = 'pending'")))
        table = self.ok("namespace", "list")
        self.assertRegex(table, r"invoices\s+5\s+0\s+0")

    def test_dead_letters_list_requeue_and_purge(self):
        # Genuine dead letters: the example worker refuses p = 2 as a non-retryable failure.
        rows = [{"workflow_id": f"dl-{i}", "ordinal": 0, "activity_type": "fail-sometimes",
                 "namespace": "letters", "input": {"p": 2}} for i in range(3)]
        api("POST", "/v1/outbox", {"rows": rows})
        worker = subprocess.Popen(
            [os.path.join(BIN, "outboxd-worker"), "--url", NODES[0].replace("http", "ws") +
             "/v1/workers", "--namespaces", "letters", "--activity-types", "fail-sometimes",
             "--token", os.environ["OUTBOXD_TEST_WORKER_TOKEN"]],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(wait_for(lambda: sql(
                "SELECT count(*) FROM outbox WHERE namespace = 'letters' AND status = 'failed'")
                == "3"))
        finally:
            worker.terminate()
            worker.wait(timeout=30)
        out = self.ok("dead-letters", "list", "--namespace", "letters", "--limit", "2")
        self.assertIn("input.p must be within 0..1", out)
        self.assertEqual(len(out.strip().splitlines()), 4)  # header, 2 letters, the cursor
        cursor = out.strip().splitlines()[-1].split("--after ")[1]
        rest = json.loads(self.ok("--json", "dead-letters", "list", "--namespace", "letters",
                                  "--after", cursor))
        self.assertEqual(len(rest["dead_letters"]), 1)

        self.assertEqual(self.ok("dead-letters", "requeue", "dl-0:0"), "requeued dl-0:0\n")
        self.assertEqual(sql("SELECT status, attempt FROM outbox WHERE dispatch_key = 'dl-0:0'"),
                         "pending|0")
        self.assertEqual(self.ok("dead-letters", "requeue", "--namespace", "letters",
                                 "--error", "input.p", "--limit", "1"), "requeued 1\n")
        self.assertEqual(self.ok("dead-letters", "purge", "--namespace", "letters"), "purged 1\n")
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE namespace = 'letters'"), "2")
        code, _, err = ctl("dead-letters", "requeue", "dl-0:0")
        self.assertEqual(code, 1)
        self.assertIn("HTTP 404", err)

    def test_workflow_show_pause_resume_cancel_and_row_show(self):
        api("POST", "/v1/outbox", {"rows": [
            {"workflow_id": "order/42 x", "ordinal": i, "activity_type": "ship",
             "namespace": "orders", "input": {"n": i}} for i in range(3)]})
        self.assertEqual(self.ok("workflow", "pause", "order/42 x"), "workflow order/42 x paused\n")
        self.assertEqual(sql("SELECT count(*) FROM paused_workflows WHERE workflow_id = 'order/42 x'"),
                         "1")
        self.assertIn("(it already was)", self.ok("workflow", "pause", "order/42 x"))
        shown = self.ok("workflow", "show", "order/42 x")
        self.assertIn("workflow order/42 x (paused)", shown)
        self.assertEqual(len(shown.strip().splitlines()), 5)  # title, header, 3 rows
        self.ok("workflow", "resume", "order/42 x")
        self.assertEqual(sql("SELECT count(*) FROM paused_workflows"), "0")
        row = json.loads(self.ok("--json", "row", "show", "order/42 x:1"))
        self.assertEqual(row["input"], {"n": 1})
        self.assertRegex(self.ok("row", "show", "order/42 x:1"), r"status\s+pending")
        out = self.ok("workflow", "cancel", "order/42 x")
        self.assertIn("cancelled 3 rows", out)
        self.assertEqual(sql("SELECT count(*) FROM outbox WHERE workflow_id = 'order/42 x' "
                             "AND status = 'cancelled'"), "3")
        every = self.ok("workflow", "show", "--all", "order/42 x")
        self.assertIn("(cancelled)", every)
        self.assertEqual(every.count("cancelled"), 4)
        self.assertEqual(self.ok("workflow", "uncancel", "order/42 x"),
                         "workflow order/42 x uncancelled: rows staged from now on run\n")
        self.assertEqual(sql("SELECT count(*) FROM cancelled_workflows"), "0")
        self.assertEqual(self.ok("workflow", "uncancel", "order/42 x"),
                         "workflow order/42 x was not cancelled\n")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)

#!/usr/bin/env python3
"""Every panel of the Grafana dashboard (deploy/grafana/outboxd.json) draws something from
a real cluster. Runs under with_cluster.py (2 nodes):

  1. checks the dashboard's shape: a datasource variable every target uses, a database
     variable from label_values(outboxd_database_up, database) (multi, with All), a namespace
     variable from label_values, unique panel ids, the contract metrics all on a panel, and
     every selector of a metric labelled by database filtering by `database=~"$database"`;
  2. starts Debian's Prometheus (1 s scrapes, its own temporary storage) on both nodes;
  3. loads the cluster: two outboxd-worker processes, an outboxd-receiver behind an HTTP
     target, rows staged over the API in three namespaces (some failing, retried and then
     dead-lettered, one workflow cancelled) and a few bad WebSocket frames;
  4. runs every target's PromQL, with the template variables substituted as Grafana would
     ($database and $namespace as All and as one value), as a range query over the last 30 s,
     until each returns a series with a finite value (and a panel grouped by outcome, error
     code, HTTP code class or instance a series for each one the load produced), the
     namespace variable lists the three namespaces and the database variable the node's
     database; fails naming the panels that never do;
  5. checks that every outboxd_* name a query uses is a family the loaded nodes export
     (their /metrics `# TYPE` lines), so a misspelt name cannot hide behind an `or`, and that
     every family the nodes export with a `database` label is filtered by $database.

Prometheus, the workers, the receiver and the loader are stopped whatever happens.
"""
import asyncio
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
DASHBOARD = os.path.join(HERE, "..", "..", "deploy", "grafana", "outboxd.json")
NODES = os.environ["OUTBOXD_TEST_NODES"].split(",")
BIN = os.environ["OUTBOXD_TEST_BIN_DIR"]

# The metrics the dashboard must show (README, "Metrics").
CONTRACT_METRICS = [
    "outboxd_outcomes_total", "outboxd_dispatch_latency_seconds_bucket",
    "outboxd_outbox_inflight_rows", "outboxd_outbox_claimed_rows", "outboxd_tasks_outstanding",
    "outboxd_owned_shards", "outboxd_cluster_nodes_live", "outboxd_workers_connected",
    "outboxd_protocol_errors_total", "outboxd_outcome_write_failures_total",
]
# The metrics outboxd labels by database (each database's own figures): a query of one of
# them must keep to the databases the `database` variable selects. The nodes' own /metrics
# add any other family they export with the label.
DATABASE_METRICS = {
    "outboxd_outbox_inflight_rows", "outboxd_outbox_claimed_rows", "outboxd_tasks_outstanding",
    "outboxd_rows_claimed_total", "outboxd_outcomes_total", "outboxd_dispatch_latency_seconds",
    "outboxd_claim_seconds", "outboxd_claims_apart_total", "outboxd_owned_shards",
    "outboxd_cluster_nodes_live", "outboxd_outcome_write_failures_total",
    "outboxd_rows_released_total", "outboxd_rows_rearmed_total",
    "outboxd_db_lane_rejected_total", "outboxd_outcomes_refused_total",
    "outboxd_outcomes_abandoned_total", "outboxd_claim_route_errors_total",
    "outboxd_ordered_blocked_workflows", "outboxd_heartbeats_total",
    "outboxd_lease_statements_total", "outboxd_lease_rows_total",
    "outboxd_maintenance_runs_total", "outboxd_database_up", "outboxd_http_requests_total",
    "outboxd_http_request_seconds", "outboxd_http_inflight",
}
DATABASE_FILTER = 'database=~"$database"'
# The database with_cluster.py gives a node of one database.
DATABASE = "default"
# Grafana's interval variables, as it would set them for a 30 s range at a 2 s step over a
# 1 s scrape interval ($__rate_interval: at least four scrapes).
STEP_S = 2
RANGE_S = 30
BUILTINS = {"__rate_interval": "10s", "__interval": f"{STEP_S}s", "__interval_ms": str(STEP_S * 1000),
            "__range": f"{RANGE_S}s", "__range_s": str(RANGE_S), "__range_ms": str(RANGE_S * 1000)}
NAMESPACES = ("default", "tenant-b", "webhooks")
# What the load makes happen, as the values of a label a panel groups by (`by (label)`): a
# panel that groups by one of these must show at least these values (namespace All).
EXPECTED_LABEL_VALUES = {
    "outcome": {"done", "retry", "failed", "cancelled"},
    "code": {"bad_json", "unknown_type", "unknown_task"},
    "code_class": {"2xx", "5xx"},
    "instance": {urllib.parse.urlparse(n).netloc for n in NODES},
}
QUERY_DEADLINE_S = 75
# Direct connections only: a proxy in the environment must not see 127.0.0.1 traffic.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fail(message):
    print(f"grafana_dashboard_test: FAIL: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def log(message):
    print(f"grafana_dashboard_test: {message}", flush=True)


def request(method, url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with HTTP.open(req, timeout=timeout) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def free_port():
    """A free 127.0.0.1 port below 32768 (the ephemeral range starts above)."""
    for _ in range(200):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    fail("no free port below 32768")


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.2)
    fail(f"{what} not within {seconds} s")


# ---- 1. The dashboard's shape -------------------------------------------------------------

def panels_of(dashboard):
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # a collapsed row keeps its panels inside


def family(name):
    return re.sub(r"_(bucket|sum|count)$", "", name)


def unfiltered(dashboard, labelled):
    """Failures for the selectors of a family in `labelled` that do not keep to $database."""
    failures = []
    for panel in panels_of(dashboard):
        for target in panel.get("targets", []):
            for match in re.finditer(r"\b(outboxd_[a-z0-9_]+)\b(\{[^}]*\})?", target["expr"]):
                if family(match.group(1)) in labelled and DATABASE_FILTER not in (match.group(2) or ""):
                    failures.append((panel["title"], target["refId"], target["expr"],
                                     f"{match.group(1)} is labelled by database: filter it by "
                                     f"{DATABASE_FILTER}"))
    return failures


def check_shape(dashboard):
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 39:
        fail(f"schemaVersion {dashboard.get('schemaVersion')!r}: want a current Grafana's (39+)")
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        fail("no `datasource` variable of type datasource over Prometheus data sources")
    db = variables.get("database")
    if (not db or db.get("type") != "query" or db.get("query", {}).get("query")
            != "label_values(outboxd_database_up, database)"
            or not db.get("multi") or not db.get("includeAll")):
        fail("no `database` query variable label_values(outboxd_database_up, database), "
             "multi-select with All")
    ns = variables.get("namespace")
    definition = json.dumps(ns.get("query")) if ns else ""
    if not ns or ns.get("type") != "query" or "label_values(" not in definition:
        fail("no `namespace` query variable from label_values")
    ids, exprs = set(), []
    for panel in panels_of(dashboard):
        if panel["id"] in ids:
            fail(f"panel id {panel['id']} used twice")
        ids.add(panel["id"])
        if panel["type"] == "row":
            continue
        if not panel.get("targets"):
            fail(f"panel '{panel['title']}' has no targets")
        for target in panel["targets"]:
            if target.get("datasource", {}).get("uid") != "${datasource}":
                fail(f"panel '{panel['title']}' target {target['refId']} does not use ${{datasource}}")
            exprs.append(target["expr"])
    for metric in CONTRACT_METRICS:
        if not any(re.search(rf"\b{metric}\b", e) for e in exprs):
            fail(f"no panel shows {metric}")
    if not any(re.search(r"\boutboxd_database_up\b", e) for e in exprs):
        fail("no panel shows outboxd_database_up")
    for title, ref, expr, why in unfiltered(dashboard, DATABASE_METRICS):
        fail(f"panel '{title}' query {ref}: {why}\n    {expr}")
    return variables


def unexported_names(dashboard, variables):
    """Failures for the outboxd_* names in queries that no node declares a family of, and for
    the queries of a family the nodes label by database that do not keep to $database."""
    families, labelled = set(), set()
    for node in NODES:
        with HTTP.open(node + "/metrics", timeout=10) as r:
            text = r.read().decode()
        families |= set(re.findall(r"^# TYPE (\S+) \S+$", text, re.M))
        labelled |= {family(name) for name in
                     re.findall(r'^(outboxd_[a-z0-9_]+)\{[^}\n]*\bdatabase="', text, re.M)}

    def known(name):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        return name in families or base in families

    queries = [(p["title"], t["expr"]) for p in panels_of(dashboard) for t in p.get("targets", [])]
    for name in ("database", "namespace"):
        queries.append((f"variable {name}", json.dumps(variables[name]["query"])))
    failures = [(title, "-", expr, f"{name} is not a family the nodes export")
                for title, expr in queries
                for name in re.findall(r"\boutboxd_[a-z0-9_]+", expr) if not known(name)]
    if not labelled:
        failures.append(("-", "-", "-", "the nodes export no family labelled by database"))
    failures += unfiltered(dashboard, labelled)
    if not failures:
        log(f"{len(queries)} queries name only exported families ({len(families)} on the nodes); "
            f"those of the {len(labelled)} labelled by database keep to $database")
    return failures


# ---- 3. Prometheus ------------------------------------------------------------------------

class Prometheus:
    def __init__(self, workdir):
        if not shutil.which("prometheus"):
            fail("Debian's `prometheus` is not installed (scripts/install-deps installs it)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        targets = [urllib.parse.urlparse(n).netloc for n in NODES]
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: outboxd\n    static_configs:\n"
                    f"      - targets: {json.dumps(targets)}\n")
        self.log_path = os.path.join(workdir, "prometheus.log")
        with open(self.log_path, "wb") as log_file:
            self.process = subprocess.Popen(
                ["prometheus", f"--config.file={config}",
                 f"--storage.tsdb.path={os.path.join(workdir, 'tsdb')}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def await_ready(self):
        def ready():
            if self.process.poll() is not None:
                fail(f"prometheus exited:\n{self.log_tail()}")
            with HTTP.open(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        wait_for(ready, 30, "prometheus ready")

        def scraping():
            active = request("GET", self.url + "/api/v1/targets")["data"]["activeTargets"]
            return len(active) == len(NODES) and all(t["health"] == "up" for t in active)
        wait_for(scraping, 20, "prometheus scraping every node")

    def query_range(self, expr):
        end = time.time()
        params = urllib.parse.urlencode({"query": expr, "start": f"{end - RANGE_S:.3f}",
                                         "end": f"{end:.3f}", "step": f"{STEP_S}s"})
        try:
            return request("GET", f"{self.url}/api/v1/query_range?{params}")
        except urllib.error.HTTPError as error:  # a bad query: 400 with the reason
            return json.loads(error.read() or b"{}") or {"status": "error", "error": str(error)}

    def label_values(self, label, match):
        params = urllib.parse.urlencode({"match[]": match})
        return request("GET", f"{self.url}/api/v1/label/{label}/values?{params}")["data"]

    def log_tail(self):
        with open(self.log_path, errors="replace") as f:
            return "\n".join(f.read().splitlines()[-20:])

    def stop(self):
        stop_process(self.process)


def stop_process(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ---- 4. Load -------------------------------------------------------------------------------

def ws_url(node):
    return node.replace("http://", "ws://") + "/v1/workers"


async def bad_frames(node):
    """A frame that is not JSON before hello (answered, then closed), then after a hello an
    unknown type and a complete for a task the connection does not hold (answered, the
    session goes on). Returns the error codes the node sent."""
    codes = []
    async with websockets.connect(ws_url(node), open_timeout=10, close_timeout=2) as ws:
        await ws.send("{this is not json")
        codes.append(json.loads(await asyncio.wait_for(ws.recv(), 10)).get("code"))
    async with websockets.connect(ws_url(node), open_timeout=10, close_timeout=2) as ws:
        await ws.send(json.dumps({"type": "hello", "worker_id": "grafana-test-bad",
                                  "activity_types": ["grafana-test-nothing"]}))
        welcome = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if welcome.get("type") != "welcome":
            fail(f"hello answered {welcome}")
        for frame in ({"type": "grafana-test-bogus"}, {"type": "complete", "task_id": "1.1"}):
            await ws.send(json.dumps(frame))
            codes.append(json.loads(await asyncio.wait_for(ws.recv(), 10)).get("code"))
    return codes


class Loader(threading.Thread):
    """Stages a batch of rows every half second, on the nodes in turn, until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.staged = 0
        self.error = None

    def batch(self, n):
        rows = []
        for k in range(40):
            wf = f"graf-{n}-{k}"
            kind = k % 8
            if kind < 2:
                row = {"namespace": "default", "activity_type": "echo", "input": {"k": k}}
            elif kind < 4:
                row = {"namespace": "tenant-b", "activity_type": "sleep",
                       "input": {"ms": 5 + (k * 7) % 40}}
            elif kind == 4:
                row = {"namespace": "default", "activity_type": "fail-sometimes", "input": {"p": 0.5}}
            elif kind == 5:  # fails every attempt: dead-lettered after the policy's 2
                row = {"namespace": "default", "activity_type": "fail-sometimes", "input": {"p": 1.0}}
            else:
                row = {"namespace": "webhooks", "activity_type": "notify", "input": {"k": k}}
            rows.append(dict(row, workflow_id=wf, ordinal=0))
        return {"rows": rows}

    def run(self):
        n = 0
        while not self.stopping.is_set():
            try:
                result = request("POST", NODES[n % len(NODES)] + "/v1/outbox", self.batch(n))
                self.staged += result["staged"]
            except (OSError, ValueError) as error:
                self.error = f"staging batch {n}: {error}"
                return
            n += 1
            self.stopping.wait(0.5)


def start_load(workdir, procs):
    # Failing activities of `default` retry quickly and give up after two attempts.
    request("PUT", NODES[0] + "/v1/namespaces/default", {"activities": {"fail-sometimes": {
        "max_attempts": 2, "backoff": {"base_ms": 50, "multiplier": 2, "max_ms": 200}}}})

    receiver_port = free_port()
    receiver_log = open(os.path.join(workdir, "receiver.log"), "wb")
    procs.append(subprocess.Popen(
        [os.path.join(BIN, "outboxd-receiver"), "--listen", f"127.0.0.1:{receiver_port}",
         "--fail-rate", "0.1", "--fail-status", "503", "--delay-ms", "2"],
        stdout=receiver_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
    receiver_log.close()
    wait_for(lambda: HTTP.open(f"http://127.0.0.1:{receiver_port}/stats", timeout=2).status == 200,
             20, "outboxd-receiver")
    request("PUT", NODES[0] + "/v1/http-targets/grafana-hook", {
        "namespace": "webhooks", "activity_types": ["notify"], "max_in_flight": 8,
        "url": f"http://127.0.0.1:{receiver_port}/hook"})

    urls = ",".join(ws_url(n) for n in NODES)
    for k in (1, 2):
        worker_log = open(os.path.join(workdir, f"worker-{k}.log"), "wb")
        procs.append(subprocess.Popen(
            [os.path.join(BIN, "outboxd-worker"), "--url", urls, "--worker-id", f"grafana-w{k}",
             "--namespaces", "default,tenant-b", "--max-in-flight", "32", "--log-level", "warn"],
            stdout=worker_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        worker_log.close()

    codes = []
    for node in NODES:
        codes += asyncio.run(bad_frames(node))
    if codes != ["bad_json", "unknown_type", "unknown_task"] * len(NODES):
        fail(f"bad frames answered {codes}")

    # A workflow cancelled while its row waits: a `cancelled` outcome.
    request("POST", NODES[1 % len(NODES)] + "/v1/outbox", {"rows": [{
        "workflow_id": "graf-cancelled", "ordinal": 0, "activity_type": "echo",
        "namespace": "default", "visible_after": "2100-01-01T00:00:00Z"}]})
    request("POST", NODES[0] + "/v1/workflows/graf-cancelled/cancel")

    loader = Loader()
    loader.start()
    return loader


# ---- 5. The panels' queries ---------------------------------------------------------------

def substitute(expr, values):
    """Grafana's variable syntaxes: $name, ${name}, ${name:format}, [[name]]."""
    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in values:
            fail(f"query uses unknown variable {name!r}: {expr}")
        return values[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", value, expr)


def queries(dashboard, chosen):
    """Every target's query with the variables as `chosen` ({name: value}) sets them; for a
    choice other than All, only the queries that use a variable it sets otherwise."""
    narrowed = [name for name, value in chosen.items() if value != ".*"]
    for panel in panels_of(dashboard):
        for target in panel.get("targets", []):
            if narrowed and not any(f"${name}" in target["expr"] for name in narrowed):
                continue  # the same query as under All
            values = dict(BUILTINS, **chosen)
            yield panel["title"], target["refId"], substitute(target["expr"], values)


def verdict(expr, answer):
    """None when the answer has a series with a finite value and, for a panel grouped by a
    label of EXPECTED_LABEL_VALUES, every value the load produced; else why not."""
    if answer.get("status") != "success":
        return f"error: {answer.get('error', answer)}"
    series = answer["data"]["result"]
    if not series:
        return "no series"
    if not any(math.isfinite(float(v)) for s in series for _, v in s["values"]):
        return f"{len(series)} series, no finite value"
    if 'namespace=~"default"' in expr:
        return None  # the `cancelled` row is in `default`, the HTTP target's rows are not
    for group in re.findall(r"\bby \(([^)]*)\)", expr):
        for label in (l.strip() for l in group.split(",")):
            want = EXPECTED_LABEL_VALUES.get(label, set())
            missing = want - {s["metric"].get(label) for s in series}
            if missing:
                return f"no series for {label} {sorted(missing)} yet"
    return None


def variable_verdict(prometheus, variable, wanted):
    """None when label_values(selector, label), with the variables it uses as All, lists every
    value of `wanted`."""
    match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["query"]["query"].strip())
    if not match:
        return f"not label_values(selector, label): {variable['query']['query']}"
    selector = substitute(match.group(1), {"database": ".*", "namespace": ".*"})
    values = prometheus.label_values(match.group(2), selector)
    missing = sorted(set(wanted) - set(values))
    return f"values {values}, missing {missing}" if missing else None


def run_queries(prometheus, dashboard, variables):
    """Every check, again every 2 s until all pass or the deadline: (checks, failures)."""
    checks = (list(queries(dashboard, {"database": ".*", "namespace": ".*"}))
              + list(queries(dashboard, {"database": DATABASE, "namespace": "default"})))
    deadline = time.monotonic() + QUERY_DEADLINE_S
    while True:
        failures = []
        for title, ref, expr in checks:
            why = verdict(expr, prometheus.query_range(expr))
            if why:
                failures.append((title, ref, expr, why))
        for name, wanted in (("database", [DATABASE]), ("namespace", NAMESPACES)):
            variable = variables[name]
            why = variable_verdict(prometheus, variable, wanted)
            if why:
                failures.append((f"variable {name}", "-", variable["query"]["query"], why))
        if not failures or time.monotonic() > deadline:
            return checks, failures
        time.sleep(2)


def main():
    with open(DASHBOARD, encoding="utf-8") as f:
        dashboard = json.load(f)
    variables = check_shape(dashboard)

    workdir = tempfile.mkdtemp(prefix="outboxd-grafana-")
    procs, loader, prometheus = [], None, None
    started = time.monotonic()
    try:
        prometheus = Prometheus(workdir)
        prometheus.await_ready()
        loader = start_load(workdir, procs)
        checks, failures = run_queries(prometheus, dashboard, variables)
        if loader.error:
            fail(loader.error)
        failures += unexported_names(dashboard, variables)  # labelled ones appear on first use
        for title, ref, expr, why in failures:
            print(f"grafana_dashboard_test: panel '{title}' query {ref}: {why}\n    {expr}",
                  file=sys.stderr)
        if failures:
            fail(f"{len(failures)} problems in {len(checks)} queries")
        panels = {title for title, _, _ in checks}
        for title, ref, expr in checks:
            log(f"ok: '{title}' {ref}: {expr}")
        log(f"ok: {len(checks)} queries of {len(panels)} panels returned data "
            f"(database and namespace All and 'default'; {loader.staged} rows staged, "
            f"{time.monotonic() - started:.0f} s)")
    finally:
        if loader:
            loader.stopping.set()
            loader.join(timeout=10)
        for process in reversed(procs):
            stop_process(process)
        if prometheus:
            prometheus.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

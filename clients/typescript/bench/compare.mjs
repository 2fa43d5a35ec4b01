#!/usr/bin/env node
// outboxd (through the TypeScript client) against Graphile Worker, on the same PostgreSQL
// server, the same number of no-op rows / jobs.
//
//   node bench/compare.mjs --database-url URL --node-url http://127.0.0.1:PORT
//        [--rows 50000] [--max-in-flight 1024] [--workers 1] [--repeat 1]
//        [--cpp-worker PATH] [--skip-graphile] [--graphile-arg=--concurrency=32 ...]
//
//   --database-url URL   the database the outboxd node uses (rows are staged there); Graphile
//                        runs in a fresh database on the same server (created, then dropped)
//   --node-url URL       the node's HTTP address (its /metrics is polled; the worker connects
//                        to ws://…/v1/workers). Nothing else may serve its 'noop' activity.
//   --rows N             rows per run and jobs per Graphile run (default 50000)
//   --max-in-flight N    each worker's credit window (default 1024)
//   --workers K          noop-worker processes (default 1)
//   --repeat R           runs of each, interleaved; medians reported (default 1)
//   --cpp-worker PATH    also drain the same rows with the C++ SDK's outboxd-worker
//                        (--activity-types noop), for reference
//   --skip-graphile      outboxd only
//   --graphile-arg A     passed to graphile.mjs (repeatable)
//
// Each outboxd run: stage N rows of activity `noop` (each its own workflow, one INSERT …
// SELECT generate_series), VACUUM ANALYZE outbox, CHECKPOINT; then start the clock, launch the
// worker process(es) (bench/noop-worker.mjs, out of process), poll the node's
// outboxd_outcomes_total{outcome="done"} every 100 ms until the N are done, and stop the
// clock at the last row's finished_at (the database's clock, same host). Worker CPU is
// utime+stime from /proc/PID/stat, read just before SIGTERM (so it includes start-up).
//
// stdout: a line per run, then one JSON line: {"ts_worker_rows_per_s", "graphile_batched_jobs_per_s",
// "ratio", "ts_worker_cpu_s_per_10k", …}.

import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import pg from "pg";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    "database-url": { type: "string" },
    "node-url": { type: "string" },
    rows: { type: "string", default: "50000" },
    "max-in-flight": { type: "string", default: "1024" },
    workers: { type: "string", default: "1" },
    repeat: { type: "string", default: "1" },
    "cpp-worker": { type: "string" },
    "skip-graphile": { type: "boolean", default: false },
    "graphile-arg": { type: "string", multiple: true, default: [] },
  },
  strict: true,
});
const databaseUrl = values["database-url"];
const nodeUrl = values["node-url"]?.replace(/\/+$/, "");
if (!databaseUrl || !nodeUrl) {
  console.error("compare.mjs: --database-url and --node-url are required");
  process.exit(2);
}
const rows = Number(values.rows);
const maxInFlight = Number(values["max-in-flight"]);
const workers = Number(values.workers);
const repeat = Number(values.repeat);
const wsUrl = nodeUrl.replace(/^http/, "ws") + "/v1/workers";
const clockTicks = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / clockTicks; // utime, stime
  } catch {
    return NaN;
  }
}

async function doneCount() {
  const response = await fetch(nodeUrl + "/metrics");
  const text = await response.text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith("outboxd_outcomes_total{") && line.includes('outcome="done"')) {
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return total;
}

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

async function outboxdRun(label, command, run) {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const prefix = `bench-${process.pid}-${run}-${label}-`;
  await db.query(
    `INSERT INTO outbox (workflow_id, ordinal, activity_type)
     SELECT $1 || g, 0, 'noop' FROM generate_series(1, $2::int) AS g`,
    [prefix, rows],
  );
  await db.query("VACUUM ANALYZE outbox");
  await db.query("CHECKPOINT");
  const before = await doneCount();
  const startedMs = Date.now();
  const children = [];
  for (let k = 0; k < workers; k++) {
    const [program, ...args] = command(k);
    children.push(spawn(program, args, { stdio: ["ignore", "ignore", "inherit"] }));
  }
  const deadline = startedMs + 300_000;
  while ((await doneCount()) - before < rows) {
    if (Date.now() > deadline) throw new Error(`${label}: the rows were not done within 300 s`);
    if (children.some((child) => child.exitCode !== null)) throw new Error(`${label}: a worker exited early`);
    await sleep(100);
  }
  const cpu = children.reduce((sum, child) => sum + cpuSeconds(child.pid), 0);
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(children.map(exited));
  const result = await db.query(
    `SELECT count(*) FILTER (WHERE status <> 'done')::int AS not_done,
            extract(epoch FROM max(finished_at))::float8 AS last
       FROM outbox WHERE workflow_id LIKE $1 || '%'`,
    [prefix],
  );
  await db.end();
  const { not_done: notDone, last } = result.rows[0];
  if (notDone !== 0) throw new Error(`${label}: ${notDone} row(s) not done`);
  const seconds = last - startedMs / 1000;
  return { rowsPerS: rows / seconds, seconds, cpuPer10k: (cpu * 10_000) / rows };
}

async function graphileRun() {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  const name = `graphile_bench_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(databaseUrl);
  url.pathname = "/" + name;
  try {
    const child = spawn(
      process.execPath,
      [join(here, "graphile.mjs"), "--database-url", url.toString(), "--jobs", String(rows), ...values["graphile-arg"]],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    await exited(child);
    if (child.exitCode !== 0) throw new Error(`graphile.mjs exited with ${child.exitCode}`);
    return JSON.parse(out.trim().split("\n").pop());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

const tsCommand = (k) => [
  process.execPath,
  join(here, "noop-worker.mjs"),
  "--url", wsUrl,
  "--namespaces", "default",
  "--activity-types", "noop",
  "--max-in-flight", String(maxInFlight),
  "--worker-id", `ts-bench-${k}`,
];
const cppCommand = (k) => [
  values["cpp-worker"],
  "--url", wsUrl,
  "--activity-types", "noop",
  "--max-in-flight", String(maxInFlight),
  "--worker-id", `cpp-bench-${k}`,
  "--log-level", "warn",
];

const ts = [];
const cpp = [];
const graphile = [];
for (let run = 0; run < repeat; run++) {
  const t = await outboxdRun("ts", tsCommand, run);
  ts.push(t);
  console.log(`run ${run + 1}: ts worker ${Math.round(t.rowsPerS)} rows/s (${t.seconds.toFixed(2)} s, worker ${t.cpuPer10k.toFixed(3)} CPU-s/10k rows)`);
  if (values["cpp-worker"]) {
    const c = await outboxdRun("cpp", cppCommand, run);
    cpp.push(c);
    console.log(`run ${run + 1}: C++ worker ${Math.round(c.rowsPerS)} rows/s (${c.seconds.toFixed(2)} s, worker ${c.cpuPer10k.toFixed(3)} CPU-s/10k rows)`);
  }
  if (!values["skip-graphile"]) {
    const g = await graphileRun();
    graphile.push(g.graphile_batched_jobs_per_s);
    console.log(`run ${run + 1}: graphile ${g.graphile_batched_jobs_per_s} jobs/s (${g.seconds} s)`);
  }
}

const summary = {
  rows,
  repeat,
  workers,
  max_in_flight: maxInFlight,
  ts_worker_rows_per_s: Math.round(median(ts.map((r) => r.rowsPerS))),
  ts_worker_cpu_s_per_10k: Number(median(ts.map((r) => r.cpuPer10k)).toFixed(3)),
};
if (cpp.length > 0) {
  summary.cpp_worker_rows_per_s = Math.round(median(cpp.map((r) => r.rowsPerS)));
  summary.cpp_worker_cpu_s_per_10k = Number(median(cpp.map((r) => r.cpuPer10k)).toFixed(3));
}
if (graphile.length > 0) {
  summary.graphile_batched_jobs_per_s = Math.round(median(graphile));
  summary.ratio = Number((summary.ts_worker_rows_per_s / summary.graphile_batched_jobs_per_s).toFixed(3));
}
process.stdout.write(JSON.stringify(summary) + "\n");

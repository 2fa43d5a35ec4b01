#!/usr/bin/env node
// Graphile Worker baseline for the outboxd comparison: N no-op jobs, drained by one
// in-process Graphile Worker with its local queue and batched completions.
//
//   node bench/graphile.mjs --database-url URL --jobs N [--concurrency C]
//        [--local-queue-size S] [--complete-batch-delay MS] [--max-pool-size P]
//
//   --database-url URL          PostgreSQL database to use; Graphile Worker's schema
//                               (graphile_worker) is installed there; required
//   --jobs N                    no-op jobs to drain; required
//   --concurrency C             concurrentJobs (default 16)
//   --local-queue-size S        localQueue.size (default 500)
//   --complete-batch-delay MS   completeJobBatchDelay and failJobBatchDelay (default 0: batch
//                               what completes in the same tick)
//   --max-pool-size P           maxPoolSize (default 10)
//
// Steps: install the schema (runMigrations), delete any jobs left from an earlier run,
// insert the N jobs in one statement (graphile_worker.add_jobs over generate_series), VACUUM
// ANALYZE the jobs table, then start the clock, run the worker (task `noop`, no-op) until its
// handler has run N times, stop it (which flushes the batched completions) and stop the clock.
// It then checks that no job is left.
//
// stdout: one JSON line {"graphile_batched_jobs_per_s": X, "jobs": N, "seconds": S, ...}.
// Graphile Worker (from npm, pinned by package-lock.json) is a devDependency of this package.

import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { Logger, run, runMigrations } from "graphile-worker";
import pg from "pg";

const { values } = parseArgs({
  options: {
    "database-url": { type: "string" },
    jobs: { type: "string" },
    concurrency: { type: "string", default: "16" },
    "local-queue-size": { type: "string", default: "500" },
    "complete-batch-delay": { type: "string", default: "0" },
    "max-pool-size": { type: "string", default: "10" },
  },
  strict: true,
});
const connectionString = values["database-url"];
const jobs = Number(values.jobs);
if (!connectionString || !Number.isInteger(jobs) || jobs < 1) {
  console.error("graphile.mjs: --database-url and --jobs N (N >= 1) are required");
  process.exit(2);
}
const concurrency = Number(values.concurrency);
const localQueueSize = Number(values["local-queue-size"]);
const batchDelay = Number(values["complete-batch-delay"]);
const maxPoolSize = Number(values["max-pool-size"]);

// Errors only: Graphile logs every start and stop at info.
const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(`graphile: ${message}`);
});

await runMigrations({ connectionString, logger });
const client = new pg.Client({ connectionString });
await client.connect();
await client.query("DELETE FROM graphile_worker._private_jobs");
await client.query(
  `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
     SELECT ROW('noop', json_build_object('i', g), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
       FROM generate_series(1, $1::int) AS g))`,
  [jobs],
);
await client.query("VACUUM ANALYZE graphile_worker._private_jobs");

let ran = 0;
let allRan;
const everyJobRan = new Promise((resolve) => {
  allRan = resolve;
});
const started = performance.now();
const runner = await run({
  noHandleSignals: true,
  taskList: {
    noop: () => {
      if (++ran === jobs) allRan();
    },
  },
  preset: {
    worker: {
      connectionString,
      logger,
      concurrentJobs: concurrency,
      maxPoolSize,
      pollInterval: 1000,
      localQueue: { size: localQueueSize },
      completeJobBatchDelay: batchDelay,
      failJobBatchDelay: batchDelay,
    },
  },
});
await everyJobRan;
await runner.stop();
const seconds = (performance.now() - started) / 1000;

const left = await client.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs");
await client.end();
if (left.rows[0].n !== 0) {
  console.error(`graphile.mjs: ${left.rows[0].n} job(s) left after the run`);
  process.exit(1);
}
process.stdout.write(
  JSON.stringify({
    graphile_batched_jobs_per_s: Math.round(jobs / seconds),
    jobs,
    seconds: Number(seconds.toFixed(3)),
    concurrency,
    local_queue_size: localQueueSize,
    complete_job_batch_delay_ms: batchDelay,
  }) + "\n",
);

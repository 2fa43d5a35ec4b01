#!/usr/bin/env node
// No-op outboxd worker for benchmarks: completes every task at once with a null result.
//
//   node bench/noop-worker.mjs --url ws://127.0.0.1:8080/v1/workers --namespaces default \
//        --activity-types noop --max-in-flight 1024 [--worker-id X] [--async]
//
//   --url URL              seed node URL (repeat, or comma-separate, for several); required
//   --namespaces A,B       namespaces served (default: default)
//   --activity-types A,B   activity types served, each with a no-op handler; required
//   --max-in-flight N      credit window over all nodes (default 1024)
//   --worker-id X          worker id (default noop-<hostname>-<pid>)
//   --async                handlers are async functions (a resolved promise per task)
//
// Runs until SIGTERM or SIGINT, then drains (in-flight tasks answered, connections closed)
// and exits 0. Uses the built package (npm run build first): ../dist/index.js.
// stdout: nothing while running; on exit, one JSON line of the worker's counters.

import { hostname } from "node:os";
import { parseArgs } from "node:util";

import outboxd from "../dist/index.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", multiple: true },
    namespaces: { type: "string", default: "default" },
    "activity-types": { type: "string" },
    "max-in-flight": { type: "string", default: "1024" },
    "worker-id": { type: "string" },
    async: { type: "boolean", default: false },
  },
  strict: true,
});

const list = (text) => text.split(",").map((item) => item.trim()).filter((item) => item !== "");
const urls = (values.url ?? []).flatMap(list);
const types = list(values["activity-types"] ?? "");
if (urls.length === 0 || types.length === 0) {
  console.error("noop-worker: --url and --activity-types are required");
  process.exit(2);
}

const noop = () => null;
const asyncNoop = async () => null;
const handlers = Object.fromEntries(types.map((type) => [type, values.async ? asyncNoop : noop]));

const worker = new outboxd.Worker({
  url: urls,
  namespaces: list(values.namespaces),
  handlers,
  maxInFlight: Number(values["max-in-flight"]),
  workerId: values["worker-id"] ?? `noop-${hostname()}-${process.pid}`,
  stopGraceMs: 10_000,
});

await worker.run();
process.stdout.write(JSON.stringify(worker.stats()) + "\n");

// The credit window as a user meets it, over 3 real nodes: a worker with maxInFlight 8, seeded
// with node-1, starts on a backlog while node-2 and node-3 are held still (SIGSTOP, well within
// their lease), so its connections to them open only once the seed holds a full window of
// tasks; they then have tasks of their own to send at once. The worker must never run more
// than 8 handlers at once. Three rounds, each a new worker on a new backlog.
//   OUTBOXD_TEST_NODES_EXPENDABLE=1 with_cluster.py --nodes 3 -- node --test test/credit_window.test.mjs

import assert from "node:assert/strict";
import { test } from "node:test";

import { Worker, api, doneOn, nodePids, nodes, sleep, statusCounts, stageRows, unique, waitFor, workerOptions, wsUrl } from "./helpers.mjs";

const WINDOW = 8;
const ROWS = 300;
const ROUNDS = 3;

/** Every node holds shards, together all 1024 (the last nodes take theirs over within a lease or two). */
async function shardsSpread() {
  const { body } = await api("GET", "/v1/cluster");
  const owned = body.nodes.map((node) => node.shards.reduce((sum, [first, last]) => sum + last - first + 1, 0));
  return owned.length === nodes().length && owned.every((n) => n > 0) && owned.reduce((a, b) => a + b, 0) === 1024;
}

/** Handler durations in ms, 50..250, the same every run. */
function durations(seed) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return 50 + (state % 201);
  };
}

// Needs 3 nodes it may pause (OUTBOXD_TEST_NODES_EXPENDABLE=1, as its CTest registration sets).
const skip = process.env.OUTBOXD_TEST_NODES_EXPENDABLE !== "1" || nodes().length < 3;

test("a worker never runs more handlers at once than its window", { skip }, async () => {
  const next = durations(8);
  const peaks = [];
  for (let round = 0; round < ROUNDS; round++) {
    await waitFor(shardsSpread, { ms: 30_000, what: "shards spread over the three nodes" });
    const ns = unique(`ts-window-${round}`);
    let running = 0;
    let peak = 0;
    const rows = [];
    for (let i = 0; i < ROWS; i++) rows.push({ workflow_id: `${ns}-${i}`, ordinal: 0, activity_type: "work", namespace: ns });
    assert.deepEqual(await stageRows(rows), { staged: ROWS, duplicates: 0 });
    const worker = new Worker(
      workerOptions({
        url: wsUrl(nodes()[0]),
        namespaces: [ns],
        maxInFlight: WINDOW,
        handlers: {
          work: async () => {
            running++;
            peak = Math.max(peak, running);
            try {
              await sleep(next());
            } finally {
              running--;
            }
          },
        },
      }),
    );
    const paused = nodePids().slice(1);
    for (const pid of paused) process.kill(pid, "SIGSTOP");
    try {
      worker.start();
      await waitFor(() => running === WINDOW, { ms: 1200, every: 5, what: "the seed's full window" });
      for (const pid of paused) process.kill(pid, "SIGCONT");
      await waitFor(() => worker.connectedUrls().length === 3, { what: "the worker on all three nodes" });
      await waitFor(async () => (await statusCounts(ns)).done === ROWS, { ms: 60_000, every: 200, what: `${ROWS} rows done` });
      assert.equal(worker.stats().tasksCompleted, ROWS);
    } finally {
      for (const pid of paused) process.kill(pid, "SIGCONT");
      await worker.stop();
    }
    // The rows are spread over the nodes' shards: every node served some.
    const perNode = await Promise.all(nodes().map((node) => doneOn(node, ns)));
    assert.ok(perNode.every((n) => n > 0), `every node dispatched (${perNode})`);
    peaks.push(peak);
  }
  console.log(`most handlers running at once, per round (window ${WINDOW}): ${peaks}`);
  assert.ok(Math.max(...peaks) <= WINDOW, `peaks ${peaks}`);
});


// A worker seeded with one node of two finds the other and drains rows on both.
//   with_cluster.py --nodes 2 -- node --test test/cluster.test.mjs

import assert from "node:assert/strict";
import { test } from "node:test";

import { Worker, doneOn, nodes, statusCounts, stageRows, unique, waitFor, workerOptions, wsUrl } from "./helpers.mjs";


test("a worker drains rows over both nodes, splitting its credit", async () => {
  const [first, second] = nodes();
  const ns = unique("ts-cluster");
  const wf = unique("two");
  const worker = new Worker(
    workerOptions({
      url: wsUrl(first),
      namespaces: [ns],
      maxInFlight: 64,
      handlers: { noop: (task) => task.ordinal },
    }),
  ).start();
  try {
    await waitFor(() => worker.connectedUrls().length === 2, { what: "connections to both nodes" });
    assert.deepEqual(worker.connectedUrls().sort(), [wsUrl(first), wsUrl(second)].sort());
    const rows = [];
    for (let i = 0; i < 2000; i++) rows.push({ workflow_id: `${wf}-${i}`, ordinal: 0, activity_type: "noop", namespace: ns });
    assert.deepEqual(await stageRows(rows), { staged: 2000, duplicates: 0 });
    await waitFor(async () => (await statusCounts(wf)).done === 2000, { ms: 60_000, what: "2000 rows done" });
    // Each node serves its own shards: both did part of the work.
    const [a, b] = await Promise.all([doneOn(first, ns), doneOn(second, ns)]);
    assert.equal(a + b, 2000);
    assert.ok(a > 0 && b > 0, `both nodes dispatched (${a}, ${b})`);
    const stats = worker.stats();
    assert.equal(stats.tasksCompleted, 2000);
    assert.equal(stats.answersDropped, 0);
  } finally {
    await worker.stop();
  }
});

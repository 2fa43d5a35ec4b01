// A node guarded by tokens: the worker token opens the worker socket, nothing else does.
//   with_cluster.py --nodes 1 --tokens -- node --test test/tokens.test.mjs

import assert from "node:assert/strict";
import { test } from "node:test";

import { Worker, api, nodes, row, sleep, stageRows, unique, waitFor, workerOptions, workerToken, wsUrl } from "./helpers.mjs";

test("a worker without the token is refused; with it, it works", async () => {
  assert.ok(workerToken(), "run with --tokens");
  const ns = unique("ts-tokens");
  const wf = unique("tok");
  // The admin API wants a credential (401 without one), and one that may read (a worker
  // may not: 403).
  assert.equal((await api("GET", `/v1/namespaces/${ns}`, undefined, { token: null })).status, 401);
  assert.equal((await api("GET", `/v1/namespaces/${ns}`, undefined, { token: workerToken() })).status, 403);
  await stageRows([{ workflow_id: wf, ordinal: 0, activity_type: "noop", namespace: ns }]);

  const handlers = { noop: () => "ran" };
  for (const token of [undefined, "wrong-token"]) {
    const refused = new Worker(workerOptions({ url: wsUrl(nodes()[0]), namespaces: [ns], handlers, token, logger: {} })).start();
    await sleep(700);
    const stats = refused.stats();
    assert.equal(stats.connectedNodes, 0, `token ${token}: not connected`);
    assert.equal(stats.tasksReceived, 0);
    assert.ok(stats.reconnects >= 1, `token ${token}: keeps retrying with backoff (${stats.reconnects})`);
    await refused.stop();
  }
  assert.equal((await row(`${wf}:0`)).status, "pending");

  const worker = new Worker(workerOptions({ url: wsUrl(nodes()[0]), namespaces: [ns], handlers, token: workerToken() })).start();
  try {
    const done = await waitFor(async () => {
      const r = await row(`${wf}:0`);
      return r.status === "done" ? r : undefined;
    }, { what: "the row done" });
    assert.equal(done.result, "ran");
  } finally {
    await worker.stop();
  }
});

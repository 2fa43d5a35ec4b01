// Worker against one real node: task fields, results, failures, heartbeats, cancellation and
// the drain on stop.
//   with_cluster.py --nodes 1 -- node --test test/worker.test.mjs

import assert from "node:assert/strict";
import { before, test } from "node:test";

import {
  NonRetryableError,
  TaskCancelledError,
  Worker,
  api,
  nodes,
  row,
  sleep,
  stageRows,
  unique,
  waitFor,
  workerOptions,
  wsUrl,
} from "./helpers.mjs";

const ns = unique("ts-worker");
const fastRetry = { backoff: { base_ms: 50, multiplier: 1, max_ms: 50 } };

before(async () => {
  const policy = await api("PUT", `/v1/namespaces/${ns}`, {
    activities: {
      "*": fastRetry,
      beating: { heartbeat_timeout_ms: 500, ...fastRetry },
      silent: { heartbeat_timeout_ms: 500, ...fastRetry },
    },
  });
  assert.equal(policy.status, 200, JSON.stringify(policy.body));
  // Policy reaches the dispatch path within OUTBOXD_QUOTA_CACHE_TTL_MS (1 s).
  await sleep(1200);
});

function startWorker(handlers, options = {}) {
  return new Worker(workerOptions({ url: wsUrl(nodes()[0]), namespaces: [ns], handlers, ...options })).start();
}

const terminal = (key, status) =>
  waitFor(async () => {
    const r = await row(key);
    return r.status === status ? r : undefined;
  }, { what: `${key} ${status}` });

test("handlers get every task field; results are stored", async () => {
  const wf = unique("fields");
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const seen = [];
  const worker = startWorker({
    echo: (task) => {
      seen.push(task);
      return { echoed: task.input, sync: true };
    },
    later: async (task) => {
      await sleep(10);
      return task.ordinal === 1 ? undefined : { async: true, ordinal: task.ordinal };
    },
  });
  try {
    await stageRows([
      { workflow_id: wf, ordinal: 0, activity_type: "echo", namespace: ns, input: { order: 42 }, priority: 7, traceparent, run_id: "r-1" },
      { workflow_id: wf, ordinal: 1, activity_type: "later", namespace: ns },
      { workflow_id: wf, ordinal: 2, activity_type: "later", namespace: ns },
    ]);
    const echoed = await terminal(`${wf}:0`, "done");
    assert.deepEqual(echoed.result, { echoed: { order: 42 }, sync: true });
    assert.equal(echoed.traceparent, traceparent);
    assert.equal((await terminal(`${wf}:1`, "done")).result, null);
    assert.deepEqual((await terminal(`${wf}:2`, "done")).result, { async: true, ordinal: 2 });

    const [task] = seen;
    assert.equal(task.type, "task");
    assert.match(task.task_id, /^\d+\.\d+$/);
    assert.equal(task.dispatch_key, `${wf}:0`);
    assert.equal(task.workflow_id, wf);
    assert.equal(task.ordinal, 0);
    assert.equal(task.run_id, "r-1");
    assert.equal(task.namespace, ns);
    assert.equal(task.task_queue, "default");
    assert.equal(task.node, null);
    assert.equal(task.activity_type, "echo");
    assert.deepEqual(task.input, { order: 42 });
    assert.equal(task.attempt, 1);
    assert.equal(task.priority, 7);
    assert.equal(task.traceparent, traceparent);
    assert.ok(task.timeout_ms > 0);
    const stats = worker.stats();
    assert.equal(stats.tasksCompleted, 3);
    assert.equal(stats.connectedNodes, 1);
  } finally {
    await worker.stop();
  }
});

test("a retryable failure is retried; a non-retryable one dead-letters", async () => {
  const wf = unique("fail");
  const attempts = [];
  const worker = startWorker({
    flaky: (task) => {
      attempts.push(task.attempt);
      if (task.attempt === 1) throw new Error("try again");
      return "second time lucky";
    },
    doomed: async () => {
      throw new NonRetryableError("card declined");
    },
    refusing: () => {
      throw Object.assign(new Error("plain error, marked"), { retryable: false });
    },
  });
  try {
    await stageRows([
      { workflow_id: wf, ordinal: 0, activity_type: "flaky", namespace: ns },
      { workflow_id: wf, ordinal: 1, activity_type: "doomed", namespace: ns },
      { workflow_id: wf, ordinal: 2, activity_type: "refusing", namespace: ns },
    ]);
    const flaky = await terminal(`${wf}:0`, "done");
    assert.deepEqual(attempts, [1, 2]);
    assert.equal(flaky.attempt, 1);
    assert.equal(flaky.result, "second time lucky");
    const doomed = await terminal(`${wf}:1`, "failed");
    assert.match(doomed.last_error, /card declined/);
    assert.equal(doomed.attempt, 1);
    const refusing = await terminal(`${wf}:2`, "failed");
    assert.match(refusing.last_error, /plain error, marked/);
    const letters = await api("GET", `/v1/dead-letters?namespace=${ns}`);
    assert.deepEqual(letters.body.dead_letters.map((l) => l.dispatch_key).sort(), [`${wf}:1`, `${wf}:2`]);
  } finally {
    await worker.stop();
  }
});

test("a result larger than the node keeps fails the task as non-retryable", async () => {
  const wf = unique("big");
  const worker = startWorker({ big: () => "x".repeat(70_000) });
  try {
    await stageRows([{ workflow_id: wf, ordinal: 0, activity_type: "big", namespace: ns }]);
    const big = await terminal(`${wf}:0`, "failed");
    assert.match(big.last_error, /worker produced a result that is 70002 bytes, more than the node keeps \(65536\)/);
  } finally {
    await worker.stop();
  }
});

test("heartbeats keep a task alive past its heartbeat timeout; silence does not", async () => {
  const wf = unique("hb");
  const calls = { beating: [], silent: [] };
  const worker = startWorker({
    // 2 s of work against a 500 ms heartbeat timeout, heartbeating every 150 ms.
    beating: async (task, context) => {
      calls.beating.push(task.attempt);
      assert.equal(task.heartbeat_timeout_ms, 500);
      for (let n = 1; n <= 13; n++) {
        await sleep(150);
        context.heartbeat({ n });
      }
      return "kept alive";
    },
    // The same work without heartbeats times out on its first attempt.
    silent: async (task) => {
      calls.silent.push(task.attempt);
      if (task.attempt === 1) await sleep(1500);
      return "second try";
    },
  });
  try {
    await stageRows([
      { workflow_id: wf, ordinal: 0, activity_type: "beating", namespace: ns },
      { workflow_id: wf, ordinal: 1, activity_type: "silent", namespace: ns },
    ]);
    const beating = await terminal(`${wf}:0`, "done");
    assert.deepEqual(calls.beating, [1]);
    assert.equal(beating.attempt, 0);
    assert.equal(beating.result, "kept alive");
    assert.ok(beating.heartbeat_at, "heartbeat_at is set");
    assert.ok(beating.progress && beating.progress.n >= 1, `progress kept: ${JSON.stringify(beating.progress)}`);
    const silent = await terminal(`${wf}:1`, "done");
    assert.deepEqual(calls.silent, [1, 2]);
    assert.equal(silent.attempt, 1);
  } finally {
    await worker.stop();
  }
});

test("cancelling the workflow aborts the handler's signal", async () => {
  const wf = unique("cancel");
  let started;
  const running = new Promise((resolve) => {
    started = resolve;
  });
  let reason;
  const worker = startWorker({
    slow: (task, context) =>
      new Promise((resolve) => {
        context.signal.addEventListener("abort", () => {
          reason = context.signal.reason;
          resolve("stopped early");
        });
        started();
        setTimeout(() => resolve("ran to the end"), 15_000).unref();
      }),
  });
  try {
    await stageRows([{ workflow_id: wf, ordinal: 0, activity_type: "slow", namespace: ns }]);
    await running;
    const cancelled = await api("POST", `/v1/workflows/${wf}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    await waitFor(() => reason !== undefined, { what: "the abort" });
    assert.ok(reason instanceof TaskCancelledError);
    assert.equal((await row(`${wf}:0`)).status, "cancelled");
    await waitFor(() => worker.stats().tasksInFlight === 0, { what: "the answer" });
    assert.equal(worker.stats().tasksCancelled, 1);
  } finally {
    await worker.stop();
  }
});

test("stop() lets tasks in flight finish, then closes", async () => {
  const wf = unique("drain");
  const finished = [];
  const worker = startWorker(
    {
      work: async (task) => {
        await sleep(800);
        finished.push(task.ordinal);
        return task.ordinal;
      },
    },
    { maxInFlight: 4 },
  );
  await stageRows([0, 1, 2, 3, 4, 5].map((ordinal) => ({ workflow_id: wf, ordinal, activity_type: "work", namespace: ns })));
  await waitFor(() => worker.stats().tasksInFlight === 4, { what: "4 tasks in flight" });
  await worker.stop(10_000);
  assert.equal(finished.length, 4, "the four in flight finished before stop() resolved");
  assert.equal(worker.stats().connectedNodes, 0);
  // stop() resolves once the answers are written to the socket; the node records them in its
  // next outcome batch (the protocol has no acknowledgement), so wait for that write.
  const done = [];
  for (const ordinal of finished) {
    const r = await waitFor(async () => {
      const current = await row(`${wf}:${ordinal}`);
      return current.status === "claimed" ? undefined : current;
    }, { what: `the outcome of ${wf}:${ordinal}` });
    assert.equal(r.status, "done");
    assert.equal(r.attempt, 0);
    done.push(r.result);
  }
  assert.deepEqual(done.sort(), [...finished].sort());
  // The other two were never sent to the stopping worker.
  const rest = await Promise.all([0, 1, 2, 3, 4, 5].filter((n) => !finished.includes(n)).map((n) => row(`${wf}:${n}`)));
  assert.deepEqual(rest.map((r) => [r.status, r.attempt]), [["pending", 0], ["pending", 0]]);
});

test("stop() past its grace fails what is left as retryable and aborts it", async () => {
  const wf = unique("grace");
  let reason;
  const worker = startWorker({
    stuck: (task, context) =>
      new Promise((resolve) => {
        context.signal.addEventListener("abort", () => {
          reason = context.signal.reason;
          resolve("too late");
        });
      }),
  });
  await stageRows([{ workflow_id: wf, ordinal: 0, activity_type: "stuck", namespace: ns }]);
  await waitFor(() => worker.stats().tasksInFlight === 1, { what: "the task in flight" });
  await worker.stop(200);
  assert.ok(reason instanceof TaskCancelledError);
  assert.match(reason.message, /worker stopping/);
  const r = await waitFor(async () => {
    const current = await row(`${wf}:0`);
    return current.attempt === 1 ? current : undefined;
  }, { what: "the retry" });
  assert.match(r.last_error, /worker stopping/);
});

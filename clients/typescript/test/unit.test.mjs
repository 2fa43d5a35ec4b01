// No database, no real node: the credit split, backoff and frame encoding, and the worker's
// protocol handling against a scripted fake node.
//   node --test test/unit.test.mjs

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RetryBackoff } from "../dist/backoff.js";
import { planCluster } from "../dist/cluster_plan.js";
import { nextDemand, splitCredits } from "../dist/credit_split.js";
import { completeFrame, heartbeatFrame, jsonTextHasNul } from "../dist/frames.js";
import outboxd from "../dist/index.js";
import { FakeNode, task } from "./fake_node.mjs";

const { Worker, NonRetryableError, TaskCancelledError } = outboxd;
const quiet = { stopSignals: [], logger: {} };
const loads = (list) => list.map(([credit, demand, reserved]) => ({ credit, demand, reserved }));
const shares = (total, list, elsewhere) => splitCredits(total, loads(list), elsewhere).shares;
const evenSplit = (total, n) => shares(total, Array.from({ length: n }, () => [0, 0, 0]));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("credit split", () => {
  test("the even split: equal shares, remainder first, at least 1", () => {
    assert.deepEqual(evenSplit(16, 0), []);
    assert.deepEqual(evenSplit(16, 1), [16]);
    assert.deepEqual(evenSplit(11, 2), [6, 5]);
    assert.deepEqual(evenSplit(10, 3), [4, 3, 3]);
    assert.deepEqual(evenSplit(2, 3), [1, 1, 1]);
    assert.deepEqual(evenSplit(10000, 1), [10000]);
  });

  test("equal demand keeps the even split", () => {
    assert.deepEqual(shares(12, [[0, 4, 0], [0, 4, 0], [0, 4, 0]]), [4, 4, 4]);
    assert.deepEqual(shares(11, [[6, 0, 6], [5, 0, 5]]), [6, 5]);
    assert.deepEqual(shares(11, [[6, 11, 6], [5, 10, 5]]), [6, 5]);
    // The second's raise waits until the first's node can have read its lowered credit.
    assert.deepEqual(shares(10, [[7, 0.5, 7], [3, 0.5, 3]]), [5, 3]);
    assert.deepEqual(shares(10, [[5, 0.5, 5], [3, 0.5, 3]]), [5, 5]);
    assert.deepEqual(shares(10, [[5, 3, 5], [5, 0, 5]]), [5, 5]);
  });

  test("a fresh connection starts at an even share, once the window has room", () => {
    // The first one's node may not have read its lowered credit yet: the hello waits.
    assert.deepEqual(splitCredits(10, loads([[10, 10, 10], [0, 5, 0]])), { shares: [5, 0], waiting: true });
    assert.deepEqual(splitCredits(10, loads([[5, 10, 5], [0, 5, 0]])), { shares: [5, 5], waiting: false });
    assert.deepEqual(shares(12, [[7, 12, 7], [1, 0, 1], [0, 4, 0]]), [7, 1, 4]);
  });

  test("a busy connection gets all but the floors of the idle ones", () => {
    assert.deepEqual(shares(10, [[4, 8, 4], [3, 0, 3], [3, 0, 3]]), [4, 1, 1]);
    assert.deepEqual(shares(10, [[4, 8, 4], [1, 0, 1], [1, 0, 1]]), [8, 1, 1]);
    assert.deepEqual(shares(10, [[1, 0, 1], [4, 10, 4], [1, 0.2, 1]]), [1, 8, 1]);
    assert.deepEqual(shares(16, [[8, 16, 8], [3, 3, 2]]), [13, 3]);
  });

  test("hysteresis, and raises that wait for room", () => {
    assert.deepEqual(shares(40, [[20, 21, 20], [20, 19, 20]]), [20, 20]);
    assert.deepEqual(shares(40, [[20, 22, 20], [20, 18, 20]]), [20, 18]);
    assert.deepEqual(shares(40, [[20, 22, 20], [18, 18, 18]]), [22, 18]);
    assert.deepEqual(shares(40, [[30, 29, 30], [5, 6, 5], [5, 5, 5]]), [29, 5, 5]);
    assert.deepEqual(shares(10, [[9, 10, 9], [1, 10, 1]]), [5, 1]);
    assert.deepEqual(shares(10, [[5, 10, 7], [1, 10, 1]]), [5, 3]);
    // Connections outside the split (draining) take their part of the window.
    assert.deepEqual(shares(10, [[5, 10, 5]], { reserved: 3, holding: 1 }), [7]);
    // More connections than the window: 1 each, once the window has room for them.
    assert.deepEqual(shares(2, [[1, 0, 2], [0, 0, 0], [0, 0, 0]]), [1, 0, 0]);
    assert.deepEqual(shares(2, [[1, 0, 1], [0, 0, 0], [0, 0, 0]]), [1, 1, 1]);
  });

  test("demand doubles under a backlog and decays when idle", () => {
    const full = { credit: 4, received: 0, fullFraction: 0.8, meanInFlight: 3.9 };
    assert.equal(nextDemand(4, full, 16), 8);
    assert.equal(nextDemand(4, full, 6), 6);
    assert.equal(nextDemand(1, { credit: 4, received: 5, fullFraction: 0, meanInFlight: 0.2 }, 16), 8);
    const light = { credit: 4, received: 4, fullFraction: 0.2, meanInFlight: 2 };
    assert.equal(nextDemand(4, light, 16), 3.5);
    assert.equal(nextDemand(1, light, 16), 3);
    let demand = 8;
    for (const expected of [4, 2, 1, 0.5]) {
      demand = nextDemand(demand, { credit: 8, received: 0, fullFraction: 0, meanInFlight: 0 }, 16);
      assert.equal(demand, expected);
    }
  });
});

test("backoff doubles within its bounds, with jitter, and resets", () => {
  const top = new RetryBackoff(100, 1000, () => 0);
  assert.deepEqual([1, 2, 3, 4, 5].map(() => top.next()), [100, 200, 400, 800, 1000]);
  top.reset();
  assert.equal(top.next(), 100);
  const jittered = new RetryBackoff(100, 1000, () => 0.999);
  assert.deepEqual([1, 2, 3, 4, 5].map(() => jittered.next()), [100, 100, 200, 400, 500]);
});

test("cluster plan: connect to the new, drop the unlisted non-seeds", () => {
  const known = [
    { url: "ws://a/v1/workers", nodeId: "a", seed: true, connected: true },
    { url: "ws://b/v1/workers", nodeId: "b", seed: false, connected: true },
  ];
  assert.deepEqual(planCluster(known, [{ node_id: "a", url: "ws://a2/v1/workers" }, { node_id: "c", url: "ws://c/v1/workers" }]), {
    connect: [{ node_id: "c", url: "ws://c/v1/workers" }],
    drop: ["ws://b/v1/workers"],
  });
});

test("frames: results and progress within the node's limits", () => {
  assert.equal(jsonTextHasNul(JSON.stringify("a\u0000b")), true);
  assert.equal(jsonTextHasNul(JSON.stringify("a\\u0000b")), false); // an escaped backslash
  assert.equal(completeFrame("1.1", { ok: true }, 65536, 0).frame, '{"type":"complete","task_id":"1.1","result":{"ok":true}}');
  assert.match(completeFrame("1.1", "x".repeat(100), 64, 0).refused, /is 102 bytes, more than the node keeps \(64\)/);
  assert.match(completeFrame("1.1", "\u0000", 0, 0).refused, /\\u0000/);
  assert.match(completeFrame("1.1", "é".repeat(600), 0, 1024).refused, /larger than the node reads/);
  const circular = {};
  circular.self = circular;
  assert.match(completeFrame("1.1", circular, 0, 0).refused, /cannot be serialised/);
  assert.equal(heartbeatFrame("1.1", { n: 1 }).frame, '{"type":"heartbeat","task_id":"1.1","progress":{"n":1}}');
  const big = heartbeatFrame("1.1", "x".repeat(9000));
  assert.equal(big.frame, '{"type":"heartbeat","task_id":"1.1"}');
  assert.match(big.dropped, /at most 8192/);
});

test("options that cannot work are refused, naming the option", () => {
  const handlers = { noop: () => null };
  assert.throws(() => new Worker({ url: [], handlers }), /url/);
  assert.throws(() => new Worker({ url: "http://x/v1/workers", handlers }), /url/);
  assert.throws(() => new Worker({ url: "ws://x/v1/workers", handlers: {} }), /handlers/);
  assert.throws(() => new Worker({ url: "ws://x/v1/workers", handlers, maxInFlight: 0 }), /maxInFlight/);
  assert.throws(() => new Worker({ url: "ws://x/v1/workers", handlers, maxFrameBytes: 10 }), /maxFrameBytes/);
});

describe("against a fake node", () => {
  test("hello, batches both ways within max_frame_bytes, results and failures", async () => {
    const node = await FakeNode.start();
    const worker = new Worker({
      ...quiet,
      url: node.url,
      workerId: "w-1",
      namespaces: ["n1", "n2"],
      taskQueue: "q",
      maxInFlight: 100,
      token: "sekrit",
      handlers: {
        noop: (t) => ({ id: t.task_id, padding: "p".repeat(150) }),
        broken: () => {
          throw new NonRetryableError("no way");
        },
        later: async () => {
          throw new Error("maybe later");
        },
      },
    }).start();
    try {
      await node.until(() => node.frames("hello").length === 1);
      const [hello] = node.frames("hello");
      assert.deepEqual(hello, {
        type: "hello",
        worker_id: "w-1",
        namespaces: ["n1", "n2"],
        task_queue: "q",
        node: null,
        activity_types: ["noop", "broken", "later"],
        max_in_flight: 100,
        batch: true,
        max_frame_bytes: 1 << 20,
      });
      assert.equal(node.headers[0].authorization, "Bearer sekrit");
      const socket = node.connections[0];
      node.welcome(socket, { max_frame_bytes: 1024 });
      const tasks = [];
      for (let i = 0; i < 50; i++) tasks.push(task(`${i}.1`));
      tasks.push(task("50.1", { activity_type: "broken" }), task("51.1", { activity_type: "later" }));
      socket.send(JSON.stringify({ type: "batch", frames: tasks }));
      await node.until(() => node.frames("complete").length + node.frames("fail").length === 52);
      const answers = node.messages.slice(1);
      assert.ok(answers.length < 52, `answers were batched (${answers.length} messages for 52)`);
      assert.ok(answers.some((m) => m.frame.type === "batch"));
      for (const m of answers) assert.ok(m.bytes <= 1024, `a message of ${m.bytes} bytes`);
      assert.deepEqual(node.frames("complete")[7].result, { id: "7.1", padding: "p".repeat(150) });
      assert.deepEqual(node.frames("fail"), [
        { type: "fail", task_id: "50.1", error: "no way", retryable: false },
        { type: "fail", task_id: "51.1", error: "maybe later", retryable: true },
      ]);
      const stats = worker.stats();
      assert.equal(stats.tasksCompleted, 50);
      assert.equal(stats.tasksFailed, 2);
    } finally {
      await worker.stop(1000);
      await node.close();
    }
  });

  test("result_refused fails the task as non-retryable; heartbeats and cancel", async () => {
    const node = await FakeNode.start();
    let signal;
    let beat;
    const worker = new Worker({
      ...quiet,
      url: node.url,
      handlers: {
        noop: () => "fine",
        long: (t, context) => {
          signal = context.signal;
          beat = () => context.heartbeat({ at: 1 });
          return new Promise((resolve) => signal.addEventListener("abort", () => resolve("aborted")));
        },
      },
    }).start();
    try {
      await node.until(() => node.connections.length === 1 && node.frames("hello").length === 1);
      const socket = node.connections[0];
      node.welcome(socket);
      socket.send(JSON.stringify(task("1.1")));
      await node.until(() => node.frames("complete").length === 1);
      socket.send(JSON.stringify({ type: "error", code: "result_refused", message: "result of task '1.1' contains \\u0000, which PostgreSQL jsonb cannot store; the task is still outstanding" }));
      await node.until(() => node.frames("fail").length === 1);
      assert.equal(node.frames("fail")[0].task_id, "1.1");
      assert.equal(node.frames("fail")[0].retryable, false);

      socket.send(JSON.stringify(task("2.1", { activity_type: "long", heartbeat_timeout_ms: 1000 })));
      await node.until(() => beat !== undefined);
      beat();
      await node.until(() => node.frames("heartbeat").length === 1);
      assert.deepEqual(node.frames("heartbeat")[0], { type: "heartbeat", task_id: "2.1", progress: { at: 1 } });
      socket.send(JSON.stringify({ type: "cancel", task_id: "2.1", reason: "the task's workflow was cancelled" }));
      await node.until(() => node.frames("complete").length === 2);
      assert.ok(signal.aborted);
      assert.ok(signal.reason instanceof TaskCancelledError);
      assert.equal(signal.reason.message, "the task's workflow was cancelled");
      assert.equal(worker.stats().tasksCancelled, 1);
    } finally {
      await worker.stop(1000);
      await node.close();
    }
  });

  test("the task's database: as the frame names it, or the default one", async () => {
    const node = await FakeNode.start();
    const worker = new Worker({ ...quiet, url: node.url, handlers: { db: (t) => t.database } }).start();
    try {
      await node.until(() => node.frames("hello").length === 1);
      const socket = node.connections[0];
      node.welcome(socket);
      socket.send(JSON.stringify(task("1.1", { activity_type: "db", database: "orders" })));
      await node.until(() => node.frames("complete").length === 1);
      socket.send(JSON.stringify(task("2.1", { activity_type: "db" }))); // an older node names none
      await node.until(() => node.frames("complete").length === 2);
      assert.deepEqual(
        node.frames("complete").map((f) => f.result),
        ["orders", "default"],
      );
    } finally {
      await worker.stop(1000);
      await node.close();
    }
  });

  test("follows the cluster: connects to listed nodes, splits credit, drops the unlisted", async () => {
    const a = await FakeNode.start("a");
    const b = await FakeNode.start("b");
    const cluster = [
      { node_id: "a", url: a.url },
      { node_id: "b", url: b.url },
    ];
    const worker = new Worker({ ...quiet, url: a.url, maxInFlight: 11, handlers: { noop: () => null } }).start();
    try {
      await a.until(() => a.frames("hello").length === 1);
      a.welcome(a.connections[0], { cluster });
      await b.until(() => b.frames("hello").length === 1);
      b.welcome(b.connections[0], { cluster });
      // The seed's hello had the whole window; now it is split: 6 + 5.
      await a.until(() => a.frames("credit").length >= 1);
      assert.equal(a.frames("hello")[0].max_in_flight, 11);
      assert.equal(a.frames("credit").at(-1).max_in_flight + b.frames("hello")[0].max_in_flight, 11);
      assert.equal(worker.connectedUrls().length, 2);
      // b leaves the cluster.
      a.connections[0].send(JSON.stringify({ type: "cluster", nodes: [cluster[0]] }));
      await a.until(() => worker.connectedUrls().length === 1);
      assert.deepEqual(worker.connectedUrls(), [a.url]);
      await a.until(() => a.frames("credit").at(-1).max_in_flight === 11);
    } finally {
      await worker.stop(1000);
      await a.close();
      await b.close();
    }
  });

  test("a node's drain: in-flight tasks finish, then the worker closes and reconnects with backoff", async () => {
    const node = await FakeNode.start();
    let finish;
    const worker = new Worker({
      ...quiet,
      url: node.url,
      reconnectMinMs: 50,
      handlers: { noop: () => new Promise((resolve) => (finish = resolve)) },
    }).start();
    try {
      await node.until(() => node.frames("hello").length === 1);
      const first = node.connections[0];
      node.welcome(first);
      first.send(JSON.stringify(task("1.1")));
      await node.until(() => finish !== undefined);
      first.send(JSON.stringify({ type: "drain" }));
      await sleep(50);
      assert.equal(first.readyState, first.OPEN, "still open while a task is in flight");
      finish({ late: true });
      await node.until(() => node.frames("complete").length === 1 && first.readyState === first.CLOSED);
      assert.deepEqual(node.frames("complete")[0].result, { late: true });
      // A drained seed is tried again after backoff.
      await node.until(() => node.connections.length === 2 && node.frames("hello").length === 2);
      assert.equal(worker.stats().reconnects, 1);
    } finally {
      await worker.stop(1000);
      await node.close();
    }
  });

  test("stop(): credit 0, in-flight tasks finish, late tasks go back, then it closes", async () => {
    const node = await FakeNode.start();
    const finishers = [];
    const worker = new Worker({ ...quiet, url: node.url, handlers: { noop: () => new Promise((resolve) => finishers.push(resolve)) } });
    worker.start();
    await node.until(() => node.frames("hello").length === 1);
    const socket = node.connections[0];
    node.welcome(socket);
    socket.send(JSON.stringify({ type: "batch", frames: [task("1.1"), task("2.1")] }));
    await node.until(() => finishers.length === 2);
    let stopped = false;
    const stopping = worker.stop(5000).then(() => (stopped = true));
    await node.until(() => node.frames("credit").length === 1);
    assert.equal(node.frames("credit")[0].max_in_flight, 0);
    socket.send(JSON.stringify(task("3.1"))); // sent before the node saw the credit 0
    await node.until(() => node.frames("fail").length === 1);
    assert.deepEqual(node.frames("fail")[0], { type: "fail", task_id: "3.1", error: "worker stopping", retryable: true });
    finishers[0]("one");
    await sleep(30);
    assert.equal(stopped, false);
    finishers[1]("two");
    await stopping;
    assert.deepEqual(node.frames("complete").map((f) => f.result), ["one", "two"]);
    assert.equal(socket.readyState, socket.CLOSED);
    await node.close();
  });
});

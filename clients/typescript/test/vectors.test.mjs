// The shared vectors (tests/vectors/credit_split.json, cluster_plan.json), run against this
// client's own credit ledger, cluster plan and node-list parsing; the C++ SDK and the Python
// client run the same files.
//   node --test test/vectors.test.mjs

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { parseNodes, planCluster } from "../dist/cluster_plan.js";
import { CREDIT_SETTLE_MS, CreditLedger } from "../dist/credit_ledger.js";

const VECTORS = new URL("../../../tests/vectors/", import.meta.url);
const load = (name) => JSON.parse(readFileSync(new URL(name, VECTORS), "utf8"));

/** The nodes a welcome or cluster frame lists, read as the worker reads them. */
const listedNodes = (frame) => parseNodes(frame.type === "welcome" ? frame.cluster : frame.nodes);

/** Drives one scenario through a CreditLedger and checks every step. */
class ScenarioRun {
  constructor(scenario, settleMs) {
    this.window = scenario.window;
    this.ledger = new CreditLedger(scenario.window, scenario.rebalance_interval_ms, settleMs);
    this.urls = scenario.urls ?? {};
    /** Nodes the worker knows (seeds, and those learned), by name. */
    this.links = new Map((scenario.seeds ?? []).map((name) => [name, this.link(name, true)]));
    /** Every connection the worker holds, by node. */
    this.credit = new Map();
    this.inFlight = new Map();
    this.now = 0;
  }

  link(name, seed, nodeId = undefined) {
    return { url: this.urls[name] ?? name, seed, nodeId, connected: false };
  }

  step(step, where) {
    this.now = step.at_ms ?? this.now;
    let sends = [];
    if ("open" in step) {
      const name = step.open;
      if (!this.links.has(name)) this.links.set(name, this.link(name, false));
      Object.assign(this.links.get(name), { connected: true, nodeId: name });
      this.credit.set(name, 0);
      this.inFlight.set(name, 0);
      sends = this.ledger.open(name, this.now);
    } else if ("close" in step) {
      this.links.get(step.close).connected = false;
      this.credit.delete(step.close);
      this.inFlight.delete(step.close);
      sends = this.ledger.close(step.close, this.now);
    } else if ("drain" in step) {
      this.credit.set(step.drain, 0);
      sends = this.ledger.drain(step.drain, this.now);
    } else if ("receive" in step) {
      for (const [name, count] of Object.entries(step.receive)) {
        for (let i = 0; i < count; i++) {
          this.inFlight.set(name, this.inFlight.get(name) + 1);
          this.ledger.received(name, this.now);
        }
      }
    } else if ("answer" in step) {
      for (const [name, count] of Object.entries(step.answer)) {
        for (let i = 0; i < count; i++) {
          this.inFlight.set(name, this.inFlight.get(name) - 1);
          sends.push(...this.ledger.answered(name, this.now));
        }
      }
    } else if ("tick" in step) {
      sends = this.ledger.tick(this.now);
    } else if ("settle" in step) {
      sends = this.ledger.settle(this.now);
    } else if ("cluster" in step) {
      sends = this.cluster(step, where);
    } else {
      assert.fail(`${where}: a step that does nothing`);
    }
    this.check(step, sends, where);
  }

  cluster(step, where) {
    const known = [...this.links.values()].map(({ url, nodeId, seed, connected }) => ({ url, nodeId, seed, connected }));
    const plan = planCluster(known, listedNodes(step.cluster));
    const byUrl = new Map([...this.links].map(([name, link]) => [link.url, name]));
    assert.deepEqual(
      plan.connect.map((info) => info.node_id),
      step.connect,
      `${where}: connect`,
    );
    assert.deepEqual(
      plan.drop.map((url) => byUrl.get(url)),
      step.drop,
      `${where}: drop`,
    );
    const sends = [];
    for (const url of plan.drop) {
      const name = byUrl.get(url);
      this.links.delete(name);
      if (this.credit.has(name)) {
        this.credit.delete(name);
        this.inFlight.delete(name);
        sends.push(...this.ledger.close(name, this.now));
      }
    }
    for (const info of plan.connect) {
      this.links.set(info.node_id, { url: info.url, seed: false, nodeId: info.node_id, connected: false });
    }
    return sends;
  }

  check(step, sends, where) {
    const expected = step.sends.map((s) =>
      "hello" in s ? { connection: s.to, hello: true, credit: s.hello } : { connection: s.to, hello: false, credit: s.credit },
    );
    assert.deepEqual(sends, expected, `${where}: sends`);
    for (const frame of sends) this.credit.set(frame.connection, frame.credit);
    for (const [name, credit] of this.credit) assert.equal(this.ledger.credit(name), credit, `${where}: credit of ${name}`);
    const taken = [...this.credit.keys()].map((name) => Math.max(this.credit.get(name), this.inFlight.get(name)));
    const holding = taken.filter((t) => t > 0).length;
    const sum = taken.reduce((a, b) => a + b, 0);
    assert.ok(sum <= Math.max(this.window, holding), `${where}: credit and tasks ${taken} over the window ${this.window}`);
  }
}

test("credit split vectors", () => {
  const vectors = load("credit_split.json");
  assert.equal(CREDIT_SETTLE_MS, vectors.settle_ms);
  assert.ok(vectors.scenarios.length > 0);
  for (const scenario of vectors.scenarios) {
    const run = new ScenarioRun(scenario, vectors.settle_ms);
    scenario.steps.forEach((step, index) => run.step(step, `${scenario.name}, step ${index}`));
  }
});

test("cluster plan vectors", () => {
  const vectors = load("cluster_plan.json");
  assert.ok(vectors.cases.length > 0);
  for (const c of vectors.cases) {
    const known = c.known.map((k) => ({ url: k.url, nodeId: k.node_id ?? undefined, seed: k.seed, connected: k.connected }));
    const plan = planCluster(known, listedNodes(c.frame));
    assert.deepEqual(plan, { connect: c.connect, drop: c.drop }, c.name);
  }
});

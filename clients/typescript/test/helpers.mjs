// Shared by the cluster tests: what tests/clients/with_cluster.py puts in the environment,
// the node's HTTP API, the database, and waiting.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";

import pg from "pg";

import outboxd from "../dist/index.js";

export const { Worker, stage, NonRetryableError, TaskCancelledError } = outboxd;

function required(name) {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run under tests/clients/with_cluster.py`);
  return value;
}

export const databaseUrl = () => required("OUTBOXD_TEST_DATABASE_URL");
/** http://127.0.0.1:PORT of each node, in order. */
export const nodes = () => required("OUTBOXD_TEST_NODES").split(",");
export const nodePids = () => required("OUTBOXD_TEST_NODE_PIDS").split(",").map(Number);
export const adminToken = () => process.env.OUTBOXD_TEST_ADMIN_TOKEN;
export const workerToken = () => process.env.OUTBOXD_TEST_WORKER_TOKEN;
export const binDir = () => required("OUTBOXD_TEST_BIN_DIR");

/** The worker URL of a node's HTTP address. */
export const wsUrl = (node) => node.replace(/^http/, "ws") + "/v1/workers";

/** A name no other test uses (namespaces, activity types, workflow ids). */
export const unique = (prefix) => `${prefix}-${randomBytes(4).toString("hex")}`;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns something truthy; fails after `ms`. */
export async function waitFor(probe, { ms = 20_000, every = 100, what = "condition" } = {}) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** A JSON request to a node's API (admin token when the cluster has one). */
export async function api(method, path, body, { node = nodes()[0], token = adminToken() } = {}) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await fetch(node + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

/** The row as `GET /v1/outbox/{key}` shows it. */
export async function row(key) {
  const response = await api("GET", "/v1/outbox/" + encodeURIComponent(key));
  assert.equal(response.status, 200, `GET /v1/outbox/${key}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Runs `fn` with a connected pg client, closed afterwards. */
export async function withDb(fn, url = databaseUrl()) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Stages rows in their own transaction. */
export function stageRows(rows) {
  return withDb(async (client) => {
    await client.query("BEGIN");
    const result = await stage(client, rows);
    await client.query("COMMIT");
    return result;
  });
}

/** Row counts by status of the given workflow id prefix. */
// Rows of namespace `ns` a node marked done, summed over its databases (the series carry
// `database` first).
export async function doneOn(node, ns) {
  const text = await (await fetch(node + "/metrics")).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("outboxd_outcomes_total{") && l.includes(`namespace="${ns}",outcome="done"}`))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

export function statusCounts(prefix) {
  return withDb(async (client) => {
    const result = await client.query(
      "SELECT status, count(*)::int AS n FROM outbox WHERE workflow_id LIKE $1 || '%' GROUP BY status",
      [prefix],
    );
    return Object.fromEntries(result.rows.map((r) => [r.status, r.n]));
  });
}

/** Quiet logger that keeps warnings for the test's output. */
export const testLogger = {
  warn: (message) => console.error(message),
  error: (message) => console.error(message),
};

/** Worker options every test shares: no signal handlers, a quiet log. */
export function workerOptions(options) {
  return { stopSignals: [], logger: testLogger, token: workerToken(), ...options };
}

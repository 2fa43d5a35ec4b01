// wss:// with a CA option against a node serving TLS. The harness's nodes speak plain HTTP,
// so this test starts its own TLS node (the harness's binaries) on a database of its own on
// the same PostgreSQL, with a throwaway CA made by openssl.
//   with_cluster.py --nodes 1 -- node --test test/tls.test.mjs

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Worker, binDir, databaseUrl, stage, unique, waitFor, withDb, workerOptions } from "./helpers.mjs";

const dir = mkdtempSync(join(tmpdir(), "outboxd-ts-tls-"));
const dbName = unique("ts_tls").replace(/-/g, "_");
let dbUrl;
let node;
let port;
let ca;

function openssl(...args) {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function makeCertificates() {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("req", "-x509", ...ec, "-days", "2", "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=outboxd ts test CA");
  openssl("req", ...ec, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost");
  writeFileSync(join(dir, "node.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "node.ext", "-out", "node.pem");
  return readFileSync(join(dir, "ca.pem"));
}

function ready() {
  return new Promise((resolve) => {
    const request = https.get({ host: "127.0.0.1", port, path: "/readyz", ca, timeout: 2000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on("error", () => resolve(false));
  });
}

before(async () => {
  ca = makeCertificates();
  await withDb((client) => client.query(`CREATE DATABASE ${dbName}`));
  const url = new URL(databaseUrl());
  url.pathname = "/" + dbName;
  dbUrl = url.toString();
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("OUTBOXD_")));
  node = spawn(join(binDir(), "outboxd"), ["serve"], {
    env: {
      ...env,
      OUTBOXD_DATABASE_URL: dbUrl,
      OUTBOXD_LISTEN: "127.0.0.1:0",
      OUTBOXD_NODE_ID: "tls-1",
      OUTBOXD_POLL_INTERVAL_MS: "200",
      OUTBOXD_LEASE_TTL_MS: "2000",
      OUTBOXD_TLS_CERT_FILE: join(dir, "node.pem"),
      OUTBOXD_TLS_KEY_FILE: join(dir, "node.key"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const collect = (chunk) => {
    log += chunk;
  };
  node.stdout.on("data", collect);
  node.stderr.on("data", collect);
  await waitFor(() => {
    const match = /event=listening .*address=[0-9.]+:(\d+)/.exec(log);
    if (match) port = Number(match[1]);
    assert.equal(node.exitCode, null, `the TLS node exited:\n${log}`);
    return port !== undefined;
  }, { ms: 60_000, what: "the TLS node to listen" });
  assert.match(log, /advertise=wss:\/\//);
  await waitFor(ready, { ms: 60_000, what: "the TLS node to be ready" });
});

after(async () => {
  if (node && node.exitCode === null) {
    const exited = new Promise((resolve) => node.once("exit", resolve));
    node.kill("SIGTERM");
    await exited;
  }
  await withDb((client) => client.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
  rmSync(dir, { recursive: true, force: true });
});

test("a worker reaches a TLS node over wss:// trusting the given CA, and only then", async () => {
  const wf = unique("tls");
  await withDb((client) => stage(client, [{ workflow_id: wf, ordinal: 0, activity_type: "secure" }]), dbUrl);
  const url = `wss://127.0.0.1:${port}/v1/workers`;
  const handlers = { secure: (task) => ({ over: "tls", key: task.dispatch_key }) };

  // Without the CA, Node's trust store does not know the node's certificate.
  const untrusting = new Worker(workerOptions({ url, handlers, logger: {} })).start();
  await waitFor(() => untrusting.stats().reconnects >= 1, { what: "a refused attempt" });
  assert.equal(untrusting.stats().connectedNodes, 0);
  await untrusting.stop();

  const worker = new Worker(workerOptions({ url, handlers, ca })).start();
  try {
    const done = await waitFor(
      () =>
        withDb(async (client) => {
          const result = await client.query("SELECT status, result FROM outbox WHERE workflow_id = $1", [wf]);
          return result.rows[0]?.status === "done" ? result.rows[0] : undefined;
        }, dbUrl),
      { what: "the row done" },
    );
    assert.deepEqual(done.result, { over: "tls", key: `${wf}:0` });
    assert.deepEqual(worker.connectedUrls(), [url]);
  } finally {
    await worker.stop();
  }
});

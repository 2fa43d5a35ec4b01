// An HTTP target with "standard_webhooks": true, verified by the Standard Webhooks
// specification's own npm verifier (standardwebhooks): the secret a receiver gives it is
// "whsec_" + base64 of the target's signing_secret (README, "HTTP push").

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";

import { Webhook } from "standardwebhooks";

import { api, stageRows, statusCounts, unique, waitFor } from "./helpers.mjs";

/** A receiver that verifies every request and answers 200, or 401 when it fails. */
async function receiver(secret) {
  const verifier = new Webhook("whsec_" + Buffer.from(secret).toString("base64"));
  const seen = { verified: [], refused: 0 };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      try {
        const task = verifier.verify(body, request.headers);
        assert.equal(request.headers["webhook-id"], task.dispatch_key);
        assert.ok(request.headers["outboxd-signature"].startsWith("t="));  // outboxd's own too
        seen.verified.push(task.dispatch_key);
        response.writeHead(200).end("{}");
      } catch {
        seen.refused += 1;
        response.writeHead(401).end("bad signature");
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, seen, url: `http://127.0.0.1:${server.address().port}/hook` };
}

test("rows pushed with Standard Webhooks headers pass the specification's verifier", async () => {
  const secret = "s3cret-" + unique("k");
  const hook = await receiver(secret);
  const type = unique("whk");
  const wf = unique("wf");
  try {
    const put = await api("PUT", "/v1/targets/" + type, {
      namespace: "default",
      activity_types: [type],
      url: hook.url,
      signing_secret: secret,
      standard_webhooks: true,
      max_in_flight: 8,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.standard_webhooks, true);
    const rows = Array.from({ length: 20 }, (_, i) => ({
      workflow_id: `${wf}-${i}`,
      ordinal: 0,
      activity_type: type,
      input: { i },
    }));
    await stageRows(rows);
    await waitFor(async () => (await statusCounts(wf)).done === 20, { what: "20 rows done" });
    assert.equal(hook.seen.refused, 0);
    assert.equal(new Set(hook.seen.verified).size, 20);

    // Signed with another secret, every request fails the verifier: 401, a dead letter.
    const other = await api("PUT", "/v1/targets/" + type, {
      namespace: "default",
      activity_types: [type],
      url: hook.url,
      signing_secret: "another-secret",
      standard_webhooks: true,
    });
    assert.equal(other.status, 200);
    const wf2 = unique("wf");
    await stageRows([{ workflow_id: wf2, ordinal: 0, activity_type: type }]);
    await waitFor(async () => (await statusCounts(wf2)).failed === 1, { what: "a dead letter" });
    assert.equal(hook.seen.refused, 1);
  } finally {
    await api("DELETE", "/v1/targets/" + type);
    hook.server.close();
  }
});

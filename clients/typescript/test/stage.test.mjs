// stage() against the real outbox table (one node, which migrated the database).
//   with_cluster.py --nodes 1 -- node --test test/stage.test.mjs

import assert from "node:assert/strict";
import { test } from "node:test";

import { stage, unique, withDb } from "./helpers.mjs";

test("stage inserts many rows in one statement and counts duplicates", async () => {
  const wf = unique("stage");
  await withDb(async (client) => {
    const statements = [];
    const counting = {
      query: (text, values) => {
        statements.push(text);
        return client.query(text, values);
      },
    };
    await client.query("BEGIN");
    const rows = [0, 1, 2].map((ordinal) => ({ workflow_id: wf, ordinal, activity_type: "noop" }));
    assert.deepEqual(await stage(counting, rows), { staged: 3, duplicates: 0 });
    assert.equal(statements.length, 1, "one statement for three rows");
    // Again, plus one new row and one repeated within the batch: only the new one lands.
    const again = [...rows, { workflow_id: wf, ordinal: 3, activity_type: "noop" }, rows[0]];
    assert.deepEqual(await stage(client, again), { staged: 1, duplicates: 4 });
    await client.query("COMMIT");
    const keys = await client.query("SELECT dispatch_key FROM outbox WHERE workflow_id = $1 ORDER BY ordinal", [wf]);
    assert.deepEqual(
      keys.rows.map((r) => r.dispatch_key),
      [0, 1, 2, 3].map((n) => `${wf}:${n}`),
    );
  });
});

test("stage writes every field, and the table's defaults for those left out", async () => {
  const wf = unique("fields");
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const later = new Date(Date.now() + 3_600_000);
  await withDb(async (client) => {
    await client.query("BEGIN");
    const result = await stage(client, [
      {
        workflow_id: wf,
        ordinal: 7n,
        activity_type: "charge",
        dispatch_key: wf + "-custom",
        run_id: "run-1",
        namespace: unique("ns"),
        task_queue: "q1",
        node: "eu-1",
        input: { amount: 99.5, nested: [1, "two", null] },
        visible_after: later,
        priority: 42,
        traceparent,
      },
      { workflow_id: wf, ordinal: 8, activity_type: "email" },
    ]);
    await client.query("COMMIT");
    assert.deepEqual(result, { staged: 2, duplicates: 0 });
    const rows = await client.query(
      `SELECT dispatch_key, ordinal, run_id, namespace, task_queue, node, activity_type, input,
              visible_after, priority, traceparent, status, attempt
         FROM outbox WHERE workflow_id = $1 ORDER BY ordinal`,
      [wf],
    );
    const [full, plain] = rows.rows;
    assert.equal(full.dispatch_key, wf + "-custom");
    assert.equal(full.ordinal, "7");
    assert.equal(full.run_id, "run-1");
    assert.equal(full.task_queue, "q1");
    assert.equal(full.node, "eu-1");
    assert.deepEqual(full.input, { amount: 99.5, nested: [1, "two", null] });
    assert.equal(full.visible_after.getTime(), later.getTime());
    assert.equal(full.priority, 42);
    assert.equal(full.traceparent, traceparent);
    assert.equal(full.status, "pending");
    assert.equal(plain.dispatch_key, `${wf}:8`);
    assert.equal(plain.namespace, "default");
    assert.equal(plain.task_queue, "default");
    assert.equal(plain.node, null);
    assert.equal(plain.input, null); // jsonb 'null'
    assert.equal(plain.priority, 0);
    assert.equal(plain.traceparent, null);
    assert.equal(plain.attempt, 0);
  });
});

test("rows staged in a transaction that rolls back never exist", async () => {
  const wf = unique("rollback");
  await withDb(async (client) => {
    await client.query("BEGIN");
    assert.deepEqual(await stage(client, [{ workflow_id: wf, ordinal: 0, activity_type: "noop" }]), {
      staged: 1,
      duplicates: 0,
    });
    await client.query("ROLLBACK");
    const count = await client.query("SELECT count(*)::int AS n FROM outbox WHERE workflow_id = $1", [wf]);
    assert.equal(count.rows[0].n, 0);
  });
});

test("a bad row rejects the whole statement", async () => {
  const wf = unique("bad");
  await withDb(async (client) => {
    await client.query("BEGIN");
    await assert.rejects(
      stage(client, [
        { workflow_id: wf, ordinal: 0, activity_type: "noop" },
        { workflow_id: wf, ordinal: 1, activity_type: "noop", traceparent: "not-a-traceparent" },
      ]),
      /outbox_traceparent_format|violates check constraint/,
    );
    await client.query("ROLLBACK");
    const count = await client.query("SELECT count(*)::int AS n FROM outbox WHERE workflow_id = $1", [wf]);
    assert.equal(count.rows[0].n, 0);
    assert.deepEqual(await stage(client, []), { staged: 0, duplicates: 0 });
  });
});

// Staging rows from an application transaction (README, "The outbox table (public contract)").

/** One outbox row to stage; fields as the outbox table's columns. */
export interface OutboxRow {
  /** Owner of the row; decides its shard. */
  workflow_id: string;
  /** Position within the workflow's fan-out, >= 0. */
  ordinal: number | bigint | string;
  /** What the worker executes. */
  activity_type: string;
  /** Idempotency key; default `workflow_id:ordinal`. */
  dispatch_key?: string | null;
  run_id?: string | null;
  /** Default `default`. */
  namespace?: string | null;
  /** Default `default`. */
  task_queue?: string | null;
  /** Only workers advertising this node label run it. */
  node?: string | null;
  /** Any JSON; default null. */
  input?: unknown;
  /** Not claimable before; default now() (the database's clock). */
  visible_after?: Date | string | null;
  /** 0..100, higher first within a route; default 0. */
  priority?: number | null;
  /** W3C trace context, `00-<32 hex>-<16 hex>-<2 hex>`, lowercase. */
  traceparent?: string | null;
}

/** What stage() did: rows inserted, and rows skipped because their dispatch_key exists. */
export interface StageResult {
  staged: number;
  duplicates: number;
}

/**
 * The part of a `pg` Client, PoolClient or Pool that stage() uses, so that `pg` is not a
 * dependency of this package.
 */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null }>;
}

// One statement for any number of rows: the rows travel as one jsonb parameter and are
// expanded by jsonb_to_recordset. Columns a row leaves out get the table's defaults (spelt
// here because an explicit NULL would not); dispatch_key is filled by the table's trigger.
const STAGE_SQL = `INSERT INTO outbox (dispatch_key, workflow_id, ordinal, run_id, namespace, task_queue, node,
                    activity_type, input, visible_after, priority, traceparent)
SELECT r.dispatch_key, r.workflow_id, r.ordinal, r.run_id, COALESCE(r.namespace, 'default'),
       COALESCE(r.task_queue, 'default'), r.node, r.activity_type, COALESCE(r.input, 'null'::jsonb),
       COALESCE(r.visible_after, now()), COALESCE(r.priority, 0), r.traceparent
  FROM jsonb_to_recordset($1::jsonb) AS r(dispatch_key text, workflow_id text, ordinal bigint, run_id text,
       namespace text, task_queue text, node text, activity_type text, input jsonb,
       visible_after timestamptz, priority smallint, traceparent text)
ON CONFLICT (dispatch_key) DO NOTHING`;

/**
 * Inserts `rows` into `outbox` on `client`, in one statement, `ON CONFLICT (dispatch_key) DO
 * NOTHING`. Run it inside your own transaction (`BEGIN` … `COMMIT` on the same client), next
 * to your business writes: the rows become visible to outboxd when, and only if, it commits.
 *
 * Rejects with the database's error when a row breaks the table's rules (a missing
 * workflow_id or activity_type, a negative ordinal, a malformed traceparent, …); nothing of
 * the statement is inserted then, and the caller's transaction is aborted as with any error.
 */
export async function stage(client: Queryable, rows: readonly OutboxRow[]): Promise<StageResult> {
  if (!Array.isArray(rows)) throw new TypeError("stage: rows must be an array");
  if (rows.length === 0) return { staged: 0, duplicates: 0 };
  // A bigint ordinal travels as text (jsonb_to_recordset reads it into the bigint column).
  const plain = rows.some((row) => typeof row.ordinal === "bigint")
    ? rows.map((row) => (typeof row.ordinal === "bigint" ? { ...row, ordinal: row.ordinal.toString() } : row))
    : rows;
  const payload = JSON.stringify(plain);
  const result = await client.query(STAGE_SQL, [payload]);
  const staged = result.rowCount ?? 0;
  return { staged, duplicates: rows.length - staged };
}

// The public shapes of the worker API. Field names of Task follow the wire protocol and the
// outbox table (README, "Worker protocol (WebSocket)"): the task handed to a handler is the
// very object parsed from the node's frame, so nothing is copied per task.

/** JSON as the node hands it over: whatever `JSON.parse` can produce. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * One delivery of an outbox row, exactly as the node's `task` frame carries it.
 *
 * Delivery is at least once: make the effect idempotent on `dispatch_key`, and use `delivery`
 * to tell a redelivery from the first try.
 */
export interface Task {
  readonly type: "task";
  /** Names this claim of the row; answers refer to it. */
  readonly task_id: string;
  /** The row's idempotency key (unique in the outbox). */
  readonly dispatch_key: string;
  readonly workflow_id: string;
  readonly ordinal: number;
  readonly run_id: string | null;
  readonly namespace: string;
  readonly task_queue: string;
  /** The node label the row is pinned to, if any. */
  readonly node: string | null;
  readonly activity_type: string;
  /** The row's `input` column. */
  readonly input: Json;
  /** One-based: 1 is the first try; it grows when a try failed (a retry). */
  readonly attempt: number;
  /**
   * One-based count of this row's deliveries, this one included: 1 is the first; it grows on
   * every redelivery whatever its cause (a retry, a node or worker lost, a timeout). Absent
   * from nodes too old to send it.
   */
  readonly delivery?: number;
  /** The answer deadline in ms; 0 when a heartbeating task has no total limit. */
  readonly timeout_ms: number;
  /** 0..100, higher first. */
  readonly priority: number;
  /** Present when the activity's policy sets one: send heartbeats well within it. */
  readonly heartbeat_timeout_ms?: number;
  /** W3C trace context of the request that staged the row, when it has one. */
  readonly traceparent?: string;
  /**
   * The outbox database the row is in: `"default"` on a node with one database (and from nodes
   * too old to say).
   */
  readonly database: string;
}

/** The database of a task whose node names none. */
export const DEFAULT_DATABASE = "default";

/** What a handler gets beside its task. One per task; valid until the task is answered. */
export interface TaskContext {
  /**
   * Aborted when the node cancels the task (its workflow was cancelled, or the node no longer
   * holds it) and when the worker stops with the task still running past its grace. Its
   * `reason` is a {@link TaskCancelledError}. Created on first access, so tasks that never
   * look at it cost nothing.
   */
  readonly signal: AbortSignal;
  /** Whether the task was cancelled (the same fact as `signal.aborted`, without creating it). */
  readonly cancelled: boolean;
  /**
   * Keeps a long task alive: call it well within `task.heartbeat_timeout_ms`. `progress`, when
   * given, must serialise to at most 8 KiB of JSON without `\u0000`; a heartbeat whose
   * progress does not is sent without it (and logged). Ignored once the task is answered.
   */
  heartbeat(progress?: unknown): void;
}

/**
 * Runs one activity type. Its return value (or what its promise resolves to) is the task's
 * result, stored by the node and shown by `GET /v1/outbox/{key}` (`undefined` counts as
 * `null`); a thrown error (or rejection) fails the task: retried with backoff, unless the
 * error is a {@link NonRetryableError} or has `retryable: false`, which dead-letters it.
 *
 * A handler that finishes synchronously is answered without any promise: plain functions
 * are the cheapest handlers.
 */
export type Handler = (task: Task, context: TaskContext) => unknown;

/** Where the worker reports what happens to it. Every method is optional. */
export interface Logger {
  debug?(message: string): void;
  info?(message: string): void;
  warn?(message: string): void;
  error?(message: string): void;
}

export interface WorkerOptions {
  /** Seed URL(s), `ws://host:port/v1/workers` or `wss://…`. */
  url: string | readonly string[];
  /** Handlers by activity type; the keys are the activity types the worker serves. */
  handlers: Readonly<Record<string, Handler>>;
  /** Default: `<hostname>-<pid>`. */
  workerId?: string;
  /** Default `["default"]`. */
  namespaces?: readonly string[];
  /** Default `"default"`. */
  taskQueue?: string;
  /** This worker's node label: it also runs rows pinned to that label. */
  node?: string | null;
  /** Tasks in flight at once, over all node connections together (1..10000, default 16). */
  maxInFlight?: number;
  /** The worker token (`OUTBOXD_WORKER_TOKEN`), sent as `Authorization: Bearer`. */
  token?: string;
  /**
   * PEM CA certificate(s) that `wss://` nodes' certificates must chain to; default: Node's
   * trust store. The certificate must also name the host of the URL. A worker seeded with
   * `wss://` URLs never follows a node to a `ws://` one.
   */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** Also connect to the nodes named in `welcome` and `cluster` frames (default true). */
  followCluster?: boolean;
  /** Reconnect backoff bounds in ms (default 100 and 5000), with jitter. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Largest frame this worker reads (default 1 MiB, at least 1024); stated in the hello. */
  maxFrameBytes?: number;
  /** TCP + TLS + upgrade deadline in ms (default 5000). */
  connectTimeoutMs?: number;
  /** A node silent this long is pinged at half of it and dropped at it (default 30000; 0: never). */
  idleTimeoutMs?: number;
  /** Longest wait for a close handshake in {@link Worker.stop} (default 1000). */
  closeTimeoutMs?: number;
  /**
   * How often the credit window is re-split towards the nodes that keep their share busy
   * (default 500 ms; 0: always the even split).
   */
  rebalanceIntervalMs?: number;
  /** Ask for batch frames and send answers batched (default true). */
  batchFrames?: boolean;
  /**
   * Signals that stop the worker gracefully (default `["SIGTERM", "SIGINT"]`; `[]`: none).
   * The handlers are removed once the worker has stopped.
   */
  stopSignals?: readonly NodeJS.Signals[];
  /** The grace a signal-triggered stop gives tasks in flight, in ms (default 30000). */
  stopGraceMs?: number;
  /** Default: warnings and errors to stderr. */
  logger?: Logger;
}

/** Counters since the worker started. */
export interface WorkerStats {
  connectedNodes: number;
  tasksReceived: number;
  tasksCompleted: number;
  tasksFailed: number;
  tasksInFlight: number;
  /** `cancel` frames for tasks in flight. */
  tasksCancelled: number;
  /** `error` frames from nodes. */
  errorsReceived: number;
  /** Answers whose connection was gone by then (the node re-arms those tasks). */
  answersDropped: number;
  /** Frames from nodes that did not parse. */
  framesInvalid: number;
  /** Connection attempts after the first one per node. */
  reconnects: number;
}

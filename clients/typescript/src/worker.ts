// The worker: connects handlers to an outboxd cluster over the worker WebSocket protocol
// (README, "Worker protocol (WebSocket)"), with the behaviour of the C++ SDK: it connects to
// every node it learns of from `welcome` and `cluster` frames, splits its credit window over
// those connections, reconnects with backoff and jitter, drains, and answers every task once.
//
// The hot path is one JSON.parse per WebSocket message (a batch frame carries many tasks), one
// Map insert and delete and one small object per task, no promise for a handler that returns
// synchronously, and one write per batch of answers.

import { hostname } from "node:os";
import { performance } from "node:perf_hooks";

import { RetryBackoff } from "./backoff";
import { parseNodes, planCluster, type KnownNode } from "./cluster_plan";
import { CreditLedger, type CreditFrame } from "./credit_ledger";
import { MAX_CREDIT_WINDOW } from "./credit_split";
import { NonRetryableError } from "./errors";
import {
  batchBytesFor,
  completeFrame,
  completeNullFrame,
  creditFrame,
  describe,
  failFrame,
  heartbeatFrame,
  helloFrame,
  isRetryable,
} from "./frames";
import { NodeLink, Phase } from "./node_link";
import { NodeSession, type SessionOwner, type SessionSettings } from "./node_session";
import { TaskRun, type TaskOwner } from "./task_run";
import { DEFAULT_DATABASE, type Handler, type Logger, type Task, type WorkerOptions, type WorkerStats } from "./types";
import { parseWsUrl } from "./ws_url";

/** Frames a node may leave unread beyond twice the credit window (control frames). */
const CONTROL_FRAME_SLACK = 64;
/** A node that stays unreachable is reported on the first failure, then every this many. */
const CONNECT_FAILURES_PER_WARNING = 20;
const MIN_FRAME_BYTES = 1024;
const RESULT_REFUSED_TASK = /task '([^']*)'/;

/** A node frame as parsed, before its type is known. */
interface NodeFrame {
  type?: unknown;
  [field: string]: unknown;
}

function defaultLogger(): Logger {
  return {
    warn: (message) => console.warn(message),
    error: (message) => console.error(message),
  };
}

function positiveInteger(name: string, value: number | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`outboxd Worker: ${name} must be an integer between ${min} and ${max}, got ${value}`);
  }
  return value;
}

/**
 * A worker process's connection to an outboxd cluster.
 *
 * ```ts
 * const worker = new Worker({
 *   url: "ws://127.0.0.1:8080/v1/workers",
 *   handlers: { charge: async (task, ctx) => ({ charged: task.input }) },
 *   maxInFlight: 64,
 * });
 * await worker.run(); // until worker.stop() or SIGTERM
 * ```
 */
export class Worker implements SessionOwner, TaskOwner {
  private readonly seeds: string[];
  private readonly handlers = new Map<string, Handler>();
  private readonly workerId: string;
  private readonly namespaces: readonly string[];
  private readonly taskQueue: string;
  private readonly node: string | null;
  private readonly maxInFlight: number;
  private readonly followCluster: boolean;
  private readonly reconnectMinMs: number;
  private readonly reconnectMaxMs: number;
  private readonly maxFrameBytes: number;
  private readonly rebalanceIntervalMs: number;
  private readonly batchFrames: boolean;
  private readonly stopSignals: readonly NodeJS.Signals[];
  private readonly stopGraceMs: number;
  private readonly log: Required<Logger>;
  private readonly sessionSettings: SessionSettings;
  private readonly tlsSeeded: boolean;

  private readonly links: NodeLink[] = [];
  /** The credit of each connection, keyed by its session. */
  private readonly ledger: CreditLedger<NodeSession>;
  private settleTimer: NodeJS.Timeout | undefined;
  private settleAt: number | undefined;
  private readonly counters: WorkerStats = {
    connectedNodes: 0,
    tasksReceived: 0,
    tasksCompleted: 0,
    tasksFailed: 0,
    tasksInFlight: 0,
    tasksCancelled: 0,
    errorsReceived: 0,
    answersDropped: 0,
    framesInvalid: 0,
    reconnects: 0,
  };
  private started = false;
  private stopping = false;
  private stopFinished = false;
  private rebalanceTimer: NodeJS.Timeout | undefined;
  private graceTimer: NodeJS.Timeout | undefined;
  private resolveStopped: (() => void) | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.log.info(`outboxd worker: ${signal}: stopping (grace ${this.stopGraceMs} ms)`);
    void this.stop(this.stopGraceMs);
  };

  /** Resolves once the worker has stopped (every connection closed). */
  readonly stopped: Promise<void>;

  /** Throws a TypeError or RangeError naming the option when the options cannot work. */
  constructor(options: WorkerOptions) {
    const urls = typeof options.url === "string" ? [options.url] : [...options.url];
    if (urls.length === 0) throw new TypeError("outboxd Worker: url: at least one seed URL is required");
    for (const url of urls) {
      if (parseWsUrl(url) === undefined) {
        throw new TypeError(`outboxd Worker: url: '${url}' is not ws://host[:port]/path or wss://…`);
      }
    }
    this.seeds = urls;
    for (const [type, handler] of Object.entries(options.handlers ?? {})) {
      if (typeof handler !== "function") throw new TypeError(`outboxd Worker: handlers.${type} must be a function`);
      this.handlers.set(type, handler);
    }
    if (this.handlers.size === 0) throw new TypeError("outboxd Worker: handlers: at least one activity type is required");
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}`;
    if (this.workerId === "") throw new TypeError("outboxd Worker: workerId must not be empty");
    this.namespaces = options.namespaces ?? ["default"];
    if (this.namespaces.length === 0) throw new TypeError("outboxd Worker: namespaces must not be empty");
    this.taskQueue = options.taskQueue ?? "default";
    this.node = options.node ?? null;
    this.maxInFlight = positiveInteger("maxInFlight", options.maxInFlight, 16, 1, MAX_CREDIT_WINDOW);
    this.followCluster = options.followCluster ?? true;
    this.reconnectMinMs = positiveInteger("reconnectMinMs", options.reconnectMinMs, 100, 1, 3_600_000);
    this.reconnectMaxMs = positiveInteger("reconnectMaxMs", options.reconnectMaxMs, 5000, 1, 3_600_000);
    this.maxFrameBytes = positiveInteger("maxFrameBytes", options.maxFrameBytes, 1 << 20, MIN_FRAME_BYTES, 2 ** 31);
    this.rebalanceIntervalMs = positiveInteger("rebalanceIntervalMs", options.rebalanceIntervalMs, 500, 0, 3_600_000);
    this.batchFrames = options.batchFrames ?? true;
    this.stopSignals = options.stopSignals ?? ["SIGTERM", "SIGINT"];
    this.stopGraceMs = positiveInteger("stopGraceMs", options.stopGraceMs, 30_000, 0, 86_400_000);
    const logger = options.logger ?? defaultLogger();
    const nothing = () => {};
    this.log = {
      debug: logger.debug?.bind(logger) ?? nothing,
      info: logger.info?.bind(logger) ?? nothing,
      warn: logger.warn?.bind(logger) ?? nothing,
      error: logger.error?.bind(logger) ?? nothing,
    };
    this.sessionSettings = {
      token: options.token,
      ca: options.ca,
      maxFrameBytes: this.maxFrameBytes,
      connectTimeoutMs: positiveInteger("connectTimeoutMs", options.connectTimeoutMs, 5000, 1, 3_600_000),
      idleTimeoutMs: positiveInteger("idleTimeoutMs", options.idleTimeoutMs, 30_000, 0, 86_400_000),
      closeTimeoutMs: positiveInteger("closeTimeoutMs", options.closeTimeoutMs, 1000, 1, 3_600_000),
      maxWriteQueue: 2 * this.maxInFlight + CONTROL_FRAME_SLACK,
    };
    this.tlsSeeded = urls.some((url) => parseWsUrl(url)?.tls === true);
    this.ledger = new CreditLedger(this.maxInFlight, this.rebalanceIntervalMs);
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  /** Connects to the seeds and starts taking tasks. Returns at once; starts at most once. */
  start(): this {
    if (this.started) return this;
    this.started = true;
    for (const signal of this.stopSignals) process.on(signal, this.onSignal);
    for (const url of this.seeds) {
      const link = this.addLink(url, true);
      if (link !== undefined) this.connect(link);
    }
    if (this.rebalanceIntervalMs > 0) {
      this.rebalanceTimer = setInterval(() => {
        if (!this.stopping) this.applyCredit(this.ledger.tick(performance.now()));
      }, this.rebalanceIntervalMs);
    }
    return this;
  }

  /** Starts the worker and resolves once it has stopped (by {@link stop} or a stop signal). */
  run(): Promise<void> {
    this.start();
    return this.stopped;
  }

  /**
   * Stops taking tasks (credit 0 on every connection), gives tasks in flight up to `graceMs` to
   * be answered, fails the rest as retryable ("worker stopping") and aborts their signals, then
   * closes every connection. Resolves once all are closed. Idempotent.
   */
  stop(graceMs = 30_000): Promise<void> {
    if (!this.started) {
      this.started = true;
      this.finishStopped();
    } else if (!this.stopping) {
      this.beginStop(graceMs);
    }
    return this.stopped;
  }

  /** Counters since the start. */
  stats(): WorkerStats {
    let inFlight = 0;
    let connected = 0;
    for (const link of this.links) {
      inFlight += link.inFlight;
      if (link.connected) connected++;
    }
    return { ...this.counters, tasksInFlight: inFlight, connectedNodes: connected };
  }

  /** URLs of the nodes connected right now. */
  connectedUrls(): string[] {
    return this.links.filter((link) => link.connected).map((link) => link.url);
  }

  // --- links ------------------------------------------------------------------------------

  private addLink(url: string, seed: boolean): NodeLink | undefined {
    const existing = this.links.find((link) => link.url === url);
    if (existing !== undefined) return existing;
    const parsed = parseWsUrl(url);
    if (parsed === undefined) {
      this.log.warn(`outboxd worker: ignoring node URL '${url}': not ws:// or wss://host[:port]/path`);
      return undefined;
    }
    // Seeded over TLS, the worker never follows a node to plain ws:// (its token and its tasks
    // would leave TLS on the word of a cluster list).
    if (!seed && !parsed.tls && this.tlsSeeded) {
      this.log.warn(`outboxd worker: ignoring node URL '${url}': the seeds are wss://, it is not`);
      return undefined;
    }
    const link = new NodeLink(url, seed, new RetryBackoff(this.reconnectMinMs, this.reconnectMaxMs));
    this.links.push(link);
    return link;
  }

  private removeLink(link: NodeLink): void {
    const at = this.links.indexOf(link);
    if (at === -1) return;
    this.links.splice(at, 1);
    this.log.info(`outboxd worker: node ${link.url} left the cluster; closing`);
    if (link.retryTimer !== undefined) clearTimeout(link.retryTimer);
    // Its tasks stay unanswered: the node re-arms them when the connection goes.
    const session = link.session;
    link.session = undefined;
    if (session !== undefined) {
      this.abandon(session, "its node left the cluster");
      session.abort();
      this.applyCredit(this.ledger.close(session, performance.now()));
    }
  }

  private connect(link: NodeLink): void {
    link.phase = Phase.Connecting;
    if (link.attempts++ > 0) this.counters.reconnects++;
    link.session = new NodeSession(link, this.sessionSettings, this);
  }

  private scheduleReconnect(link: NodeLink): void {
    link.phase = Phase.Waiting;
    const delay = link.backoff.next();
    this.log.debug(`outboxd worker: reconnecting to ${link.url} in ${delay} ms`);
    link.retryTimer = setTimeout(() => {
      link.retryTimer = undefined;
      if (!this.stopping && this.links.includes(link) && link.phase === Phase.Waiting) this.connect(link);
    }, delay);
  }

  // --- session events ---------------------------------------------------------------------

  /** @internal */
  sessionOpened(session: NodeSession): void {
    const link = session.link;
    if (link.session !== session) return;
    this.log.info(`outboxd worker: connected to ${link.url}`);
    link.phase = Phase.Open;
    if (this.stopping) {
      session.close();
      return;
    }
    // Its hello goes out once the window has room for it (often at once).
    this.applyCredit(this.ledger.open(session, performance.now()));
  }

  /** @internal */
  sessionClosed(session: NodeSession, reason: string): void {
    const link = session.link;
    if (session.inFlight.size > 0) {
      this.log.warn(
        `outboxd worker: lost ${link.url} with ${session.inFlight.size} task(s) unanswered; the node re-arms them`,
      );
      this.abandon(session, "the connection to its node was lost; the node re-arms it");
    }
    if (link.session === session) {
      link.session = undefined;
      const drained = link.phase === Phase.Draining;
      const wasUp = drained || link.phase === Phase.Open;
      if (this.stopping) {
        link.phase = Phase.Waiting;
      } else if (drained && !link.seed) {
        this.log.info(`outboxd worker: ${link.url} drained; waiting for it to be listed again`);
        link.phase = Phase.Dormant;
      } else {
        if (drained) {
          this.log.info(`outboxd worker: seed ${link.url} drained; reconnecting after backoff`);
        } else if (wasUp) {
          this.log.warn(`outboxd worker: disconnected from ${link.url}: ${reason}`);
        } else if (++link.failures % CONNECT_FAILURES_PER_WARNING === 1) {
          this.log.warn(`outboxd worker: cannot connect to ${link.url} (${link.failures} attempt(s) so far): ${reason}`);
        } else {
          this.log.debug(`outboxd worker: cannot connect to ${link.url}: ${reason}`);
        }
        this.scheduleReconnect(link);
      }
      this.applyCredit(this.ledger.close(session, performance.now()));
    }
    if (this.stopping) this.stopProgress();
  }

  /** @internal */
  sessionMessage(session: NodeSession, data: Buffer): void {
    const link = session.link;
    // Frames on a connection being closed for a node that left the cluster: its tasks are
    // re-armed by the node when the connection goes.
    if (link.session !== session) return;
    let message: NodeFrame;
    try {
      message = JSON.parse(data.toString()) as NodeFrame;
    } catch {
      this.counters.framesInvalid++;
      this.log.warn(`outboxd worker: a frame from ${link.url} is not JSON`);
      return;
    }
    if (typeof message !== "object" || message === null) {
      this.counters.framesInvalid++;
      return;
    }
    if (message.type === "batch") {
      const frames = message["frames"];
      if (!Array.isArray(frames)) {
        this.counters.framesInvalid++;
        return;
      }
      for (let i = 0; i < frames.length; i++) {
        const frame = frames[i] as NodeFrame;
        if (typeof frame !== "object" || frame === null) {
          this.counters.framesInvalid++;
          continue;
        }
        this.onFrame(link, session, frame);
        // A frame may end the link (a cluster list without this node): the rest is moot.
        if (link.session !== session) return;
      }
    } else {
      this.onFrame(link, session, message);
    }
  }

  private onFrame(link: NodeLink, session: NodeSession, frame: NodeFrame): void {
    switch (frame.type) {
      case "task":
        return this.onTask(session, frame as unknown as Task);
      case "cancel":
        return this.onCancel(link, session, frame);
      case "cluster":
        return this.onCluster(frame["nodes"]);
      case "drain":
        return this.onDrain(link, session);
      case "welcome":
        return this.onWelcome(link, session, frame);
      case "error":
        return this.onError(link, session, frame);
      default:
        this.counters.framesInvalid++;
        this.log.warn(`outboxd worker: ${link.url} sent a frame of unknown type '${String(frame.type)}'`);
    }
  }

  // --- frames from nodes ------------------------------------------------------------------

  private onTask(session: NodeSession, task: Task): void {
    this.counters.tasksReceived++;
    const taskId = task.task_id;
    if (typeof taskId !== "string") {
      this.counters.framesInvalid++;
      return;
    }
    if (this.stopping) {
      // Sent before our credit 0 arrived: hand it straight back.
      session.enqueue(failFrame(taskId, "worker stopping", true));
      this.counters.tasksFailed++;
      return;
    }
    // Older nodes name no database: theirs is the default one.
    if (typeof task.database !== "string" || task.database === "") (task as { database: string }).database = DEFAULT_DATABASE;
    const run = new TaskRun(this, session, taskId);
    session.inFlight.set(taskId, run);
    this.ledger.received(session, performance.now());
    const handler = this.handlers.get(task.activity_type);
    if (handler === undefined) {
      this.fail(run, new NonRetryableError(`this worker has no handler for activity type '${task.activity_type}'`));
      return;
    }
    let result: unknown;
    try {
      result = handler(task, run);
    } catch (error) {
      this.fail(run, error);
      return;
    }
    if (typeof result === "object" && result !== null && typeof (result as PromiseLike<unknown>).then === "function") {
      void this.settle(run, result as PromiseLike<unknown>);
    } else {
      this.complete(run, result);
    }
  }

  private async settle(run: TaskRun, pending: PromiseLike<unknown>): Promise<void> {
    let result: unknown;
    try {
      result = await pending;
    } catch (error) {
      this.fail(run, error);
      return;
    }
    this.complete(run, result);
  }

  private onCancel(link: NodeLink, session: NodeSession, frame: NodeFrame): void {
    const run = session.inFlight.get(frame["task_id"] as string);
    if (run === undefined) return; // answered already
    const reason = typeof frame["reason"] === "string" ? frame["reason"] : "cancelled by the node";
    this.log.info(`outboxd worker: ${link.url} cancelled task ${run.taskId}: ${reason}`);
    this.counters.tasksCancelled++;
    run.cancel(reason);
  }

  private onWelcome(link: NodeLink, session: NodeSession, frame: NodeFrame): void {
    const nodeId = String(frame["node_id"]);
    this.log.info(`outboxd worker: ${link.url} is node ${nodeId} (session ${String(frame["session_id"])})`);
    link.nodeId = nodeId;
    session.maxResultBytes = Number(frame["max_result_bytes"] ?? 0) || 0;
    session.peerMaxFrameBytes = Number(frame["max_frame_bytes"] ?? 0) || 0;
    // One node, one link: a seed that names a node differently from the URL it advertises may
    // have been joined by a learned link to the same node. The seed stays; the learned goes.
    const duplicates: NodeLink[] = [];
    let duplicateOfSeed = false;
    for (const other of this.links) {
      if (other === link || other.nodeId !== nodeId) continue;
      if (link.seed && !other.seed) duplicates.push(other);
      if (!link.seed && other.seed && other.connected) duplicateOfSeed = true;
    }
    for (const other of duplicates) this.removeLink(other);
    if (duplicateOfSeed) {
      // Not from inside this link's own frame handling: once it is done.
      setImmediate(() => this.removeLink(link));
      return;
    }
    // Reset only once the node accepted us: a node that upgrades then refuses (bad token,
    // draining) must keep backing off.
    link.backoff.reset();
    link.failures = 0;
    if (frame["batch"] === true && this.batchFrames) session.batchWrites(batchBytesFor(session.peerMaxFrameBytes));
    this.onCluster(frame["cluster"]);
  }

  private onCluster(listed: unknown): void {
    if (!this.followCluster || this.stopping) return;
    const nodes = parseNodes(listed);
    const known: KnownNode[] = this.links.map((link) => ({
      url: link.url,
      nodeId: link.nodeId,
      seed: link.seed,
      connected: link.connected,
    }));
    const plan = planCluster(known, nodes);
    for (const url of plan.drop) {
      const link = this.links.find((candidate) => candidate.url === url);
      if (link !== undefined) this.removeLink(link);
    }
    for (const info of plan.connect) {
      const link = this.addLink(info.url, false);
      if (link !== undefined && link.phase === Phase.Waiting && link.session === undefined) {
        this.log.info(`outboxd worker: learned node ${info.node_id} at ${info.url}`);
        link.nodeId = info.node_id;
        this.connect(link);
      }
    }
  }

  private onDrain(link: NodeLink, session: NodeSession): void {
    if (link.phase !== Phase.Open) return;
    this.log.info(`outboxd worker: ${link.url} is draining; ${session.inFlight.size} task(s) of it in flight`);
    link.phase = Phase.Draining;
    this.applyCredit(this.ledger.drain(session, performance.now()));
    if (session.inFlight.size === 0) session.close();
  }

  private onError(link: NodeLink, session: NodeSession, frame: NodeFrame): void {
    this.counters.errorsReceived++;
    const code = String(frame["code"] ?? "unknown");
    const message = String(frame["message"] ?? "");
    if (code === "result_refused") {
      // The node keeps the task outstanding for a better answer; there is none to give.
      const taskId = RESULT_REFUSED_TASK.exec(message)?.[1];
      if (taskId !== undefined) {
        session.enqueue(failFrame(taskId, "worker produced a result the node refused: " + message, false));
        this.counters.tasksFailed++;
      }
    }
    if (code === "unknown_task") this.log.debug(`outboxd worker: ${link.url} reported ${code}: ${message}`);
    else this.log.warn(`outboxd worker: ${link.url} reported ${code}: ${message}`);
  }

  // --- answers ----------------------------------------------------------------------------

  private complete(run: TaskRun, value: unknown): void {
    if (run.answered) return;
    run.answered = true;
    const session = run.session;
    if (session.finished || !session.inFlight.has(run.taskId)) {
      this.counters.answersDropped++;
      return;
    }
    let frame: string;
    if (value === undefined || value === null) {
      frame = completeNullFrame(run.taskId);
      this.counters.tasksCompleted++;
    } else {
      const encoded = completeFrame(run.taskId, value, session.maxResultBytes, session.peerMaxFrameBytes);
      if (encoded.frame !== undefined) {
        frame = encoded.frame;
        this.counters.tasksCompleted++;
      } else {
        this.log.error(`outboxd worker: task ${run.taskId} completed with a result that ${encoded.refused}`);
        frame = failFrame(run.taskId, "worker produced a result that " + encoded.refused, false);
        this.counters.tasksFailed++;
      }
    }
    this.answer(run, session, frame);
  }

  private fail(run: TaskRun, error: unknown): void {
    if (run.answered) return;
    run.answered = true;
    const session = run.session;
    if (session.finished || !session.inFlight.has(run.taskId)) {
      this.counters.answersDropped++;
      return;
    }
    this.counters.tasksFailed++;
    this.answer(run, session, failFrame(run.taskId, describe(error), isRetryable(error)));
  }

  private answer(run: TaskRun, session: NodeSession, frame: string): void {
    const link = session.link;
    session.inFlight.delete(run.taskId);
    session.enqueue(frame);
    // After the answer: a credit frame it makes room for goes out behind it.
    this.applyCredit(this.ledger.answered(session, performance.now()));
    if (this.stopping) this.stopProgress();
    else if (link.phase === Phase.Draining && session.inFlight.size === 0 && link.session === session) session.close();
  }

  /** @internal */
  heartbeat(run: TaskRun, progress: unknown): void {
    const session = run.session;
    if (session.finished || session.inFlight.get(run.taskId) !== run) return;
    const beat = heartbeatFrame(run.taskId, progress);
    if (beat.dropped !== undefined) {
      this.log.warn(`outboxd worker: heartbeat of task ${run.taskId} sent without its progress: ${beat.dropped}`);
    }
    session.enqueue(beat.frame);
  }

  /** Tasks of a session that is gone: their answers are dropped, their handlers told. */
  private abandon(session: NodeSession, reason: string): void {
    for (const run of session.inFlight.values()) run.cancel(reason);
    session.inFlight.clear();
  }

  // --- credit -----------------------------------------------------------------------------

  /** Sends what the ledger decided: hellos and credit frames. */
  private applyCredit(frames: readonly CreditFrame<NodeSession>[]): void {
    if (this.stopping) return;
    for (const { connection: session, hello, credit } of frames) {
      if (hello) {
        session.enqueue(
          helloFrame({
            workerId: this.workerId,
            namespaces: this.namespaces,
            taskQueue: this.taskQueue,
            node: this.node,
            activityTypes: [...this.handlers.keys()],
            maxInFlight: credit,
            batch: this.batchFrames,
            maxFrameBytes: this.maxFrameBytes,
          }),
        );
      } else {
        this.log.debug(`outboxd worker: credit for ${session.link.url}: ${credit}`);
        session.enqueue(creditFrame(credit));
      }
    }
    this.armSettle();
  }

  /** Keeps a timer for the earliest lowered credit the ledger will release. */
  private armSettle(): void {
    const due = this.ledger.settleDue();
    if (due === undefined || (this.settleAt !== undefined && this.settleAt <= due)) return;
    if (this.settleTimer !== undefined) clearTimeout(this.settleTimer);
    this.settleAt = due;
    this.settleTimer = setTimeout(
      () => {
        this.settleTimer = undefined;
        this.settleAt = undefined;
        this.applyCredit(this.ledger.settle(performance.now()));
      },
      Math.max(due - performance.now(), 0),
    );
  }

  // --- stopping ---------------------------------------------------------------------------

  // Stop sequence: begin (credit 0, grace) -> finish (fail the rest) -> close each connection
  // once its answers are written -> every connection closed -> stopped.
  private beginStop(graceMs: number): void {
    this.stopping = true;
    this.log.info(`outboxd worker: stopping; ${this.inFlightCount()} task(s) in flight`);
    if (this.rebalanceTimer !== undefined) clearInterval(this.rebalanceTimer);
    if (this.settleTimer !== undefined) clearTimeout(this.settleTimer);
    for (const link of this.links) {
      if (link.retryTimer !== undefined) clearTimeout(link.retryTimer);
      link.retryTimer = undefined;
      const session = link.session;
      if (session === undefined) continue;
      if (session.open) session.enqueue(creditFrame(0));
      else session.close(); // not upgraded yet: abandon the attempt
    }
    if (this.inFlightCount() === 0) {
      this.finishStop();
      return;
    }
    this.graceTimer = setTimeout(() => this.finishStop(), graceMs);
  }

  private stopProgress(): void {
    if (!this.stopFinished) {
      if (this.inFlightCount() === 0) this.finishStop();
      return;
    }
    if (this.links.every((link) => link.session === undefined)) this.finishStopped();
  }

  private finishStop(): void {
    if (this.stopFinished) return;
    this.stopFinished = true;
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer);
    for (const link of this.links) {
      const session = link.session;
      if (session === undefined) continue;
      for (const run of session.inFlight.values()) {
        run.answered = true;
        run.cancel("worker stopping");
        session.enqueue(failFrame(run.taskId, "worker stopping", true));
        this.counters.tasksFailed++;
      }
      session.inFlight.clear();
      session.close();
    }
    this.stopProgress();
  }

  private finishStopped(): void {
    if (this.resolveStopped === undefined) return;
    for (const signal of this.stopSignals) process.removeListener(signal, this.onSignal);
    if (this.rebalanceTimer !== undefined) clearInterval(this.rebalanceTimer);
    this.log.info("outboxd worker: stopped");
    this.resolveStopped?.();
    this.resolveStopped = undefined;
  }

  private inFlightCount(): number {
    let total = 0;
    for (const link of this.links) total += link.inFlight;
    return total;
  }
}

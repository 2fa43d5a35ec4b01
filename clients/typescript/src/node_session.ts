// One WebSocket connection to a node, from the TCP connect to the close: the socket, the
// frames waiting to be written, and the tasks it holds. A lost connection takes its tasks with
// it (the node re-arms them), so they live here and not on the node's link.
//
// Writes: frames queue up while a write is in flight; the next write takes every queued frame
// that fits as one batch frame (once the node's welcome said it reads batches). A write starts
// once the current callback is done (setImmediate), so every answer given while handling one
// message from the node leaves in one frame, and nothing waits that would not have waited
// anyway.

import WebSocket from "ws";

import { BATCH_ENVELOPE_BYTES, joinBatch } from "./frames";
import type { NodeLink } from "./node_link";
import type { TaskRun } from "./task_run";

const USER_AGENT = "outboxd-worker-sdk-typescript";

export interface SessionSettings {
  token: string | undefined;
  ca: string | Buffer | ReadonlyArray<string | Buffer> | undefined;
  maxFrameBytes: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  closeTimeoutMs: number;
  /** Frames a node may leave unwritten before the connection counts as stuck. */
  maxWriteQueue: number;
}

/** What a session reports to the client that owns it. Called on the event loop, never re-entrantly. */
export interface SessionOwner {
  sessionOpened(session: NodeSession): void;
  sessionMessage(session: NodeSession, data: Buffer): void;
  sessionClosed(session: NodeSession, reason: string): void;
}

export class NodeSession {
  /** Tasks received on this connection and not answered yet. */
  readonly inFlight = new Map<string, TaskRun>();
  /** From the node's welcome; 0: not stated. */
  maxResultBytes = 0;
  peerMaxFrameBytes = 0;
  /** Upgraded, and not closed since. */
  open = false;
  /** Closed (or failed to open): nothing more is written or reported. */
  finished = false;

  private readonly ws: WebSocket;
  private readonly queue: string[] = [];
  private head = 0;
  private batchMaxBytes = 0;
  private writing = false;
  private scheduled = false;
  private closeRequested = false;
  private closeStarted = false;
  private heardFrom = true;
  private pinged = false;
  private lastError = "";
  private idleTimer: NodeJS.Timeout | undefined;
  private closeTimer: NodeJS.Timeout | undefined;
  private readonly flushNow = () => this.flush();
  private readonly written = (error?: Error | null) => this.onWritten(error);

  constructor(
    readonly link: NodeLink,
    private readonly settings: SessionSettings,
    private readonly owner: SessionOwner,
  ) {
    const headers: Record<string, string> = { "User-Agent": USER_AGENT };
    if (settings.token !== undefined) headers["Authorization"] = "Bearer " + settings.token;
    const options: WebSocket.ClientOptions = {
      headers,
      maxPayload: settings.maxFrameBytes,
      handshakeTimeout: settings.connectTimeoutMs,
      perMessageDeflate: false,
      followRedirects: false,
    };
    if (settings.ca !== undefined) options.ca = settings.ca as string | Buffer | Array<string | Buffer>;
    this.ws = new WebSocket(link.url, options);
    this.ws.on("open", () => this.onOpen());
    this.ws.on("message", (data: Buffer) => {
      this.heardFrom = true;
      if (!this.finished) this.owner.sessionMessage(this, data);
    });
    this.ws.on("pong", () => {
      this.heardFrom = true;
    });
    this.ws.on("ping", () => {
      this.heardFrom = true;
    });
    this.ws.on("error", (error: Error) => {
      this.lastError = error.message;
    });
    this.ws.on("close", (code: number, reason: Buffer) => this.onClose(code, reason));
  }

  /** Queues a frame; it leaves with the next write. */
  enqueue(frame: string): void {
    if (this.finished || this.closeRequested) return;
    this.queue.push(frame);
    if (this.queue.length - this.head > this.settings.maxWriteQueue) {
      // The node has stopped reading; waiting longer only grows the queue.
      this.lastError = `${this.queue.length - this.head} frames unwritten: the node stopped reading`;
      this.ws.terminate();
      return;
    }
    if (this.open && !this.writing && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /** From the node's welcome on: answers leave as batch frames of at most `maxBytes`. */
  batchWrites(maxBytes: number): void {
    this.batchMaxBytes = maxBytes;
  }

  /** Closes once every queued frame is written; a close that does not finish in time is cut. */
  close(): void {
    if (this.finished || this.closeRequested) return;
    this.closeRequested = true;
    if (!this.open) {
      this.ws.terminate(); // still connecting: nothing to say goodbye to
      return;
    }
    this.closeTimer = setTimeout(() => this.ws.terminate(), this.settings.closeTimeoutMs);
    if (!this.writing && !this.scheduled) this.startClose();
  }

  /** Drops the connection at once (a node that left the cluster; its tasks are re-armed). */
  abort(): void {
    if (this.finished) return;
    this.closeRequested = true;
    this.ws.terminate();
  }

  private onOpen(): void {
    if (this.closeRequested) {
      this.ws.terminate();
      return;
    }
    this.open = true;
    if (this.settings.idleTimeoutMs > 0) {
      this.idleTimer = setInterval(() => this.checkIdle(), this.settings.idleTimeoutMs / 2);
    }
    this.owner.sessionOpened(this);
    if (this.queue.length > this.head && !this.writing && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushNow);
    }
  }

  // Silence for half the idle timeout earns a ping; silence after it, the end.
  private checkIdle(): void {
    if (this.heardFrom) {
      this.heardFrom = false;
      this.pinged = false;
      return;
    }
    if (this.pinged) {
      this.lastError = `no frame from the node for ${this.settings.idleTimeoutMs} ms`;
      this.ws.terminate();
      return;
    }
    this.pinged = true;
    this.ws.ping();
  }

  private flush(): void {
    this.scheduled = false;
    if (this.finished || this.writing) return;
    if (this.queue.length === this.head) {
      if (this.closeRequested) this.startClose();
      return;
    }
    this.writing = true;
    this.ws.send(this.take(), this.written);
  }

  private onWritten(error?: Error | null): void {
    this.writing = false;
    if (error) {
      this.lastError = error.message;
      return; // the close event follows
    }
    this.flush();
  }

  // The text of the next write: the oldest frame alone, or as many of the oldest as fit the
  // node's batch size joined as one batch frame.
  private take(): string {
    const queue = this.queue;
    const start = this.head;
    let end = start + 1;
    if (this.batchMaxBytes > 0 && end < queue.length) {
      let bytes = BATCH_ENVELOPE_BYTES + Buffer.byteLength(queue[start]!);
      while (end < queue.length) {
        const next = Buffer.byteLength(queue[end]!) + 1;
        if (bytes + next > this.batchMaxBytes) break;
        bytes += next;
        end++;
      }
    }
    const text = end - start === 1 ? queue[start]! : joinBatch(queue, start, end);
    if (end === queue.length) {
      queue.length = 0;
      this.head = 0;
    } else {
      this.head = end;
      // Keep the array from growing without bound while writes never catch up.
      if (this.head > 1024 && this.head * 2 > queue.length) {
        queue.splice(0, this.head);
        this.head = 0;
      }
    }
    return text;
  }

  private startClose(): void {
    if (this.closeStarted || this.finished) return;
    this.closeStarted = true;
    this.ws.close(1000);
  }

  private onClose(code: number, reason: Buffer): void {
    if (this.finished) return;
    this.finished = true;
    this.open = false;
    if (this.idleTimer !== undefined) clearInterval(this.idleTimer);
    if (this.closeTimer !== undefined) clearTimeout(this.closeTimer);
    this.queue.length = 0;
    this.head = 0;
    let why = this.lastError;
    if (why === "") why = reason.length > 0 ? `closed by the node (${code}: ${reason.toString()})` : `closed (${code})`;
    this.owner.sessionClosed(this, why);
  }
}

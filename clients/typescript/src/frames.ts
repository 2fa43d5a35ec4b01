// The frames a worker writes, as JSON text (README, "Worker protocol (WebSocket)"). Answers are
// built by joining strings: only a non-null result is serialised, once, and that text is both
// what the node's limits are checked against and what travels. A batch joins queued frames the
// same way, so no frame is serialised twice.

/** The largest heartbeat progress the node accepts, compact JSON bytes. */
export const MAX_PROGRESS_BYTES = 8192;
/** The node cuts a fail's error to 4 KiB; longer text would only cost frame bytes. */
export const MAX_ERROR_CHARS = 4096;
/** The largest batch either side writes, whatever the peer reads. */
export const MAX_BATCH_BYTES = 256 * 1024;
/** What a batch adds around its members: `{"type":"batch","frames":[…]}` and a comma each. */
export const BATCH_ENVELOPE_BYTES = 28;
const BATCH_HEAD = '{"type":"batch","frames":[';
const BATCH_TAIL = "]}";

/** The largest batch to write to a peer that stated `peerMaxFrameBytes` (0: not stated). */
export function batchBytesFor(peerMaxFrameBytes: number): number {
  return peerMaxFrameBytes > 0 && peerMaxFrameBytes < MAX_BATCH_BYTES ? peerMaxFrameBytes : MAX_BATCH_BYTES;
}

/** Joins frames (each a JSON object's text) into one batch frame. */
export function joinBatch(frames: readonly string[], start: number, end: number): string {
  let text = BATCH_HEAD + frames[start];
  for (let i = start + 1; i < end; i++) text += "," + frames[i];
  return text + BATCH_TAIL;
}

/**
 * Whether JSON text holds a `\u0000` escape (which PostgreSQL's jsonb cannot store). A
 * backslash escapes the next character, so it is one only after an odd run of backslashes.
 */
export function jsonTextHasNul(text: string): boolean {
  for (let at = text.indexOf("u0000"); at !== -1; at = text.indexOf("u0000", at + 1)) {
    let slashes = 0;
    while (slashes < at && text.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 1) return true;
  }
  return false;
}

export interface HelloFields {
  workerId: string;
  namespaces: readonly string[];
  taskQueue: string;
  node: string | null;
  activityTypes: readonly string[];
  maxInFlight: number;
  batch: boolean;
  maxFrameBytes: number;
}

export function helloFrame(hello: HelloFields): string {
  const frame: Record<string, unknown> = {
    type: "hello",
    worker_id: hello.workerId,
    namespaces: hello.namespaces,
    task_queue: hello.taskQueue,
    node: hello.node,
    activity_types: hello.activityTypes,
    max_in_flight: hello.maxInFlight,
  };
  if (hello.batch) {
    frame["batch"] = true;
    frame["max_frame_bytes"] = hello.maxFrameBytes;
  }
  return JSON.stringify(frame);
}

export function creditFrame(maxInFlight: number): string {
  return '{"type":"credit","max_in_flight":' + maxInFlight + "}";
}

/** A `complete` frame with no result. */
export function completeNullFrame(taskId: string): string {
  return '{"type":"complete","task_id":' + JSON.stringify(taskId) + ',"result":null}';
}

/**
 * A `complete` frame for `value`, or why the node could not keep it (then the task is failed
 * as non-retryable instead, as the C++ SDK does: the node would refuse it and the task would
 * only time out). `maxResultBytes` and `maxFrameBytes` come from the node's welcome; 0: not
 * stated.
 */
export function completeFrame(
  taskId: string,
  value: unknown,
  maxResultBytes: number,
  maxFrameBytes: number,
): { frame: string; refused?: undefined } | { frame?: undefined; refused: string } {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return { refused: "cannot be serialised as JSON: " + describe(error) };
  }
  // Functions and symbols serialise to nothing: no result, as undefined.
  if (text === undefined || text === "null") return { frame: completeNullFrame(taskId) };
  const bytes = Buffer.byteLength(text);
  if (maxResultBytes > 0 && bytes > maxResultBytes) {
    return { refused: `is ${bytes} bytes, more than the node keeps (${maxResultBytes})` };
  }
  if (jsonTextHasNul(text)) return { refused: "contains \\u0000, which the node cannot store" };
  const frame = '{"type":"complete","task_id":' + JSON.stringify(taskId) + ',"result":' + text + "}";
  if (maxFrameBytes > 0 && Buffer.byteLength(frame) > maxFrameBytes) {
    return { refused: `makes a frame larger than the node reads (${maxFrameBytes} bytes)` };
  }
  return { frame };
}

export function failFrame(taskId: string, error: string, retryable: boolean): string {
  const text = error.length > MAX_ERROR_CHARS ? error.slice(0, MAX_ERROR_CHARS) : error;
  return (
    '{"type":"fail","task_id":' +
    JSON.stringify(taskId) +
    ',"error":' +
    JSON.stringify(text) +
    ',"retryable":' +
    (retryable ? "true" : "false") +
    "}"
  );
}

/** A heartbeat frame, and why its progress was left out when it was. */
export function heartbeatFrame(taskId: string, progress: unknown): { frame: string; dropped?: string } {
  const head = '{"type":"heartbeat","task_id":' + JSON.stringify(taskId);
  if (progress === undefined || progress === null) return { frame: head + "}" };
  let text: string | undefined;
  let dropped: string | undefined;
  try {
    text = JSON.stringify(progress);
  } catch (error) {
    dropped = "progress cannot be serialised as JSON: " + describe(error);
  }
  if (text !== undefined && dropped === undefined) {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_PROGRESS_BYTES) dropped = `progress is ${bytes} bytes, at most ${MAX_PROGRESS_BYTES}`;
    else if (jsonTextHasNul(text)) dropped = "progress contains \\u0000, which the node cannot store";
    else return { frame: head + ',"progress":' + text + "}" };
  }
  return dropped === undefined ? { frame: head + "}" } : { frame: head + "}", dropped };
}

/** The text of a thrown value, for a fail frame or a log line. */
export function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === "string") return error;
  try {
    return String(error);
  } catch {
    return "unknown error";
  }
}

/** Whether a thrown value asks for a retry: anything but `retryable: false`. */
export function isRetryable(error: unknown): boolean {
  return !(typeof error === "object" && error !== null && (error as { retryable?: unknown }).retryable === false);
}

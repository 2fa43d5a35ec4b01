/**
 * Thrown by a handler to fail its task for good: the node dead-letters the row instead of
 * retrying it. (Any error with a `retryable: false` property does the same.)
 */
export class NonRetryableError extends Error {
  readonly retryable = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/** The `reason` of a task's aborted signal: the node cancelled it, or the worker is stopping. */
export class TaskCancelledError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TaskCancelledError";
  }
}

/**
 * The TypeScript client of outboxd: {@link stage} puts outbox rows in the application's own
 * transaction, {@link Worker} runs activity handlers for them.
 *
 * @packageDocumentation
 */
export { Worker } from "./worker";
export { stage } from "./stage";
export type { OutboxRow, Queryable, StageResult } from "./stage";
export { NonRetryableError, TaskCancelledError } from "./errors";
export type { Handler, Json, Logger, Task, TaskContext, WorkerOptions, WorkerStats } from "./types";

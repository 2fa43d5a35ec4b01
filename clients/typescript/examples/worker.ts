// An example worker: `charge` and `email` activities, a pg transaction that stages work, and
// a graceful stop on SIGTERM.
//
//   npm run build
//   OUTBOXD_URL=ws://127.0.0.1:8080/v1/workers node dist/examples/worker.js
//
// Environment: OUTBOXD_URL (default ws://127.0.0.1:8080/v1/workers), OUTBOXD_WORKER_TOKEN,
// OUTBOXD_CA_FILE (PEM CA for wss://), OUTBOXD_MAX_IN_FLIGHT (default 32).

import { readFileSync } from "node:fs";

import { NonRetryableError, Worker, type Task, type TaskContext } from "@outboxd/client";

// A synchronous handler: answered at once, no promise involved.
function email(task: Task): { queued: true; to: unknown } {
  const input = task.input as { to?: string } | null;
  if (input?.to === undefined) throw new NonRetryableError("email needs input.to"); // dead letter
  return { queued: true, to: input.to };
}

// An asynchronous handler that heartbeats and stops when its workflow is cancelled.
async function charge(task: Task, context: TaskContext): Promise<{ charged: boolean; attempt: number }> {
  const steps = 5;
  for (let step = 0; step < steps; step++) {
    if (context.signal.aborted) throw context.signal.reason;
    await new Promise((resolve) => setTimeout(resolve, 100));
    context.heartbeat({ step, of: steps });
  }
  // dispatch_key + attempt: make the effect idempotent on dispatch_key in your own database.
  return { charged: true, attempt: task.attempt };
}

const worker = new Worker({
  url: process.env["OUTBOXD_URL"] ?? "ws://127.0.0.1:8080/v1/workers",
  token: process.env["OUTBOXD_WORKER_TOKEN"],
  ca: process.env["OUTBOXD_CA_FILE"] ? readFileSync(process.env["OUTBOXD_CA_FILE"]) : undefined,
  maxInFlight: Number(process.env["OUTBOXD_MAX_IN_FLIGHT"] ?? 32),
  handlers: { charge, email },
  logger: console,
});

worker.run().then(
  () => console.log("stopped", worker.stats()),
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);

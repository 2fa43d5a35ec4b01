// One task from its arrival to its answer: the context its handler gets. Answers go through
// the Worker, which checks that the connection the task came on still holds it.

import { TaskCancelledError } from "./errors";
import type { NodeSession } from "./node_session";
import type { TaskContext } from "./types";

/** What a TaskRun needs from the worker that owns it. */
export interface TaskOwner {
  heartbeat(run: TaskRun, progress: unknown): void;
}

export class TaskRun implements TaskContext {
  answered = false;
  private aborted: TaskCancelledError | undefined;
  private controller: AbortController | undefined;

  constructor(
    private readonly owner: TaskOwner,
    readonly session: NodeSession,
    readonly taskId: string,
  ) {}

  get signal(): AbortSignal {
    // Made on first use: most handlers never look, and an AbortController is an EventTarget.
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted !== undefined) this.controller.abort(this.aborted);
    }
    return this.controller.signal;
  }

  get cancelled(): boolean {
    return this.aborted !== undefined;
  }

  heartbeat(progress?: unknown): void {
    if (!this.answered) this.owner.heartbeat(this, progress);
  }

  /** Aborts the handler's signal (once). */
  cancel(reason: string): void {
    if (this.aborted !== undefined) return;
    this.aborted = new TaskCancelledError(reason);
    this.controller?.abort(this.aborted);
  }
}

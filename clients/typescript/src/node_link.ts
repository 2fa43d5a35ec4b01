// One node URL the client keeps a connection to, across reconnects: the session of the moment
// and the reconnect schedule (its credit is the worker's ledger's). The Worker drives it.

import { RetryBackoff } from "./backoff";
import type { NodeSession } from "./node_session";

export const enum Phase {
  /** No connection; a reconnect is scheduled (or the worker is stopping). */
  Waiting,
  /** Connection started, not upgraded yet. */
  Connecting,
  /** Upgraded: takes part in the credit split (its hello waits for room in the window). */
  Open,
  /** The node said drain: answer what it sent, expect nothing new. */
  Draining,
  /** Drained and gone; a learned node waits to be listed again. */
  Dormant,
}

export class NodeLink {
  nodeId: string | undefined;
  phase = Phase.Waiting;
  session: NodeSession | undefined;
  /** Connections started, for the reconnect counter. */
  attempts = 0;
  /** Attempts in a row that failed before the upgrade. */
  failures = 0;
  retryTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly url: string,
    readonly seed: boolean,
    readonly backoff: RetryBackoff,
  ) {}

  get inFlight(): number {
    return this.session === undefined ? 0 : this.session.inFlight.size;
  }

  get connected(): boolean {
    return this.phase === Phase.Open || this.phase === Phase.Draining;
  }
}

/**
 * Reconnect delays: doubling from `minMs` up to `maxMs`, less up to half of each as jitter
 * ("equal jitter"), never below `minMs`. Workers cut off together spread out even once they
 * all reached the cap, where jitter added on top would be cut back to it.
 */
export class RetryBackoff {
  private attempts = 0;
  private readonly minMs: number;
  private readonly maxMs: number;

  constructor(minMs: number, maxMs: number, private readonly random: () => number = Math.random) {
    this.minMs = Math.max(1, minMs);
    this.maxMs = Math.max(this.minMs, maxMs);
  }

  /** The delay before the next attempt, within [min, max]. */
  next(): number {
    const ceiling = Math.min(this.minMs * 2 ** this.attempts, this.maxMs);
    if (this.attempts < 1000) this.attempts++;
    const jitter = Math.floor(this.random() * (Math.floor(ceiling / 2) + 1));
    return Math.max(ceiling - jitter, this.minMs);
  }

  /** After a success: the next delay starts from min again. */
  reset(): void {
    this.attempts = 0;
  }
}

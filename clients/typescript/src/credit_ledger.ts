// Who holds which part of a worker's credit window: the one place that decides the credit each
// node connection may advertise (its hello, then credit frames). The worker tells it what
// happens (a connection opened, drained or closed; a task received or answered; a rebalance
// tick; the settle timer) and sends the frames it returns. Nothing here does I/O or reads a
// clock: times are passed in (ms, any monotonic origin), so the same scenarios run here, in the
// Python client and in the C++ SDK (tests/vectors/credit_split.json).
//
// The rule it keeps: the tasks the worker holds plus the credit it still offers never exceed
// maxInFlight, summed over its connections as max(credit, tasks held) each. The one exception
// is the floor: every connection that holds credit or tasks may hold 1, so more connections
// than the window hold 1 each. Three things follow:
// - a new connection's hello waits until the window has room for it (its first credit is 1 or
//   more; a hello cannot ask for 0), e.g. while the seed still holds a full window;
// - a lowered credit still counts at its old value until the node must have seen it: each
//   answer sent after the credit frame lowers that count by one (the node reads the frame
//   first, and no longer refills past the new credit), and `settleMs` after the frame the rest
//   is released (a node reads its frames within that);
// - a draining connection takes no credit, but its tasks count until they are answered.

import { LoadMeter, nextDemand, splitCredits, type ConnectionLoad } from "./credit_split";

/** How long a lowered credit counts at its old value when no answer proves the node saw it. */
export const CREDIT_SETTLE_MS = 1000;

/** A frame to send: the connection's hello with its first credit, or a credit frame. */
export interface CreditFrame<Key> {
  connection: Key;
  hello: boolean;
  credit: number;
}

interface Connection {
  readonly meter: LoadMeter;
  draining: boolean;
  /** Advertised; 0 until the hello (and once draining). */
  credit: number;
  /** The most its node may still act on, at least `credit`. */
  offered: number;
  /** When `offered` falls back to `credit` at the latest. */
  settleAt: number;
  inFlight: number;
  demand: number;
}

/** The credit of every connection of one worker. `rebalanceIntervalMs` 0: the even split. */
export class CreditLedger<Key> {
  /** In the order opened. */
  private readonly connections = new Map<Key, Connection>();
  /** Some share is short of what the split wants. */
  private waiting = false;

  constructor(
    private readonly window: number,
    private readonly rebalanceIntervalMs: number,
    private readonly settleMs = CREDIT_SETTLE_MS,
  ) {}

  /** A connection upgraded: it gets its hello once the window has room for it. */
  open(key: Key, now: number): CreditFrame<Key>[] {
    this.release(now);
    const meter = new LoadMeter();
    meter.restart(now);
    this.connections.set(key, { meter, draining: false, credit: 0, offered: 0, settleAt: 0, inFlight: 0, demand: 0 });
    return this.rebalance(now);
  }

  /** Its node said drain: it sends nothing new; its tasks still count. */
  drain(key: Key, now: number): CreditFrame<Key>[] {
    this.release(now);
    const connection = this.connections.get(key);
    if (connection === undefined || connection.draining) return [];
    this.setCredit(connection, 0, now);
    connection.draining = true;
    return this.rebalance(now);
  }

  /** The connection is gone, and its tasks with it (the node re-arms them). */
  close(key: Key, now: number): CreditFrame<Key>[] {
    this.release(now);
    if (!this.connections.delete(key)) return [];
    return this.rebalance(now);
  }

  received(key: Key, now: number): void {
    const connection = this.connections.get(key);
    if (connection === undefined) return;
    connection.meter.advance(now, connection.inFlight, connection.credit);
    connection.meter.received++;
    connection.inFlight++;
  }

  /** An answer went out on the connection (after every credit frame sent before). */
  answered(key: Key, now: number): CreditFrame<Key>[] {
    this.release(now);
    const connection = this.connections.get(key);
    if (connection === undefined) return [];
    connection.meter.advance(now, connection.inFlight, connection.credit);
    connection.inFlight = Math.max(connection.inFlight - 1, 0);
    connection.offered = Math.max(connection.offered - 1, connection.credit);
    return this.waiting ? this.rebalance(now) : [];
  }

  /** Every rebalance interval: each connection's demand from its last interval, then a new split. */
  tick(now: number): CreditFrame<Key>[] {
    this.release(now);
    if (this.rebalanceIntervalMs > 0) {
      for (const connection of this.connections.values()) {
        // A connection without credit has shown nothing; one opened late in the interval keeps
        // its first demand until the next tick.
        if (connection.draining || connection.credit === 0) continue;
        if (connection.meter.elapsed(now) < this.rebalanceIntervalMs / 2) continue;
        const load = connection.meter.take(now, connection.inFlight, connection.credit);
        connection.demand = nextDemand(connection.demand, load, this.window);
      }
    }
    return this.rebalance(now);
  }

  /** The settle timer (see settleDue). */
  settle(now: number): CreditFrame<Key>[] {
    this.release(now);
    return this.waiting ? this.rebalance(now) : [];
  }

  /** When the earliest lowered credit is released, if one waits. */
  settleDue(): number | undefined {
    let due: number | undefined;
    for (const c of this.connections.values()) {
      if (c.offered > c.credit && (due === undefined || c.settleAt < due)) due = c.settleAt;
    }
    return due;
  }

  credit(key: Key): number {
    return this.connections.get(key)?.credit ?? 0;
  }

  private release(now: number): void {
    for (const c of this.connections.values()) {
      if (c.offered > c.credit && c.settleAt <= now) c.offered = c.credit;
    }
  }

  private setCredit(connection: Connection, credit: number, now: number): void {
    connection.meter.advance(now, connection.inFlight, connection.credit);
    if (credit < connection.credit) connection.settleAt = now + this.settleMs;
    connection.offered = Math.max(connection.offered, connection.credit, credit);
    connection.credit = credit;
  }

  private rebalance(now: number): CreditFrame<Key>[] {
    const live: Array<[Key, Connection]> = [];
    const elsewhere = { reserved: 0, holding: 0 };
    for (const entry of this.connections) {
      const connection = entry[1];
      if (!connection.draining) {
        live.push(entry);
        continue;
      }
      const taken = Math.max(connection.offered, connection.inFlight);
      elsewhere.reserved += taken;
      if (taken > 0) elsewhere.holding++;
    }
    if (live.length === 0) {
      this.waiting = false;
      return [];
    }
    const rebalancing = this.rebalanceIntervalMs > 0;
    const loads: ConnectionLoad[] = live.map(([, connection]) => {
      // A fresh connection starts from an even share of the demand.
      if (rebalancing && connection.credit === 0) connection.demand = this.window / live.length;
      return {
        credit: connection.credit,
        demand: rebalancing ? connection.demand : 0,
        reserved: Math.max(connection.offered, connection.inFlight),
      };
    });
    const split = splitCredits(this.window, loads, elsewhere);
    this.waiting = split.waiting;
    const frames: CreditFrame<Key>[] = [];
    for (let i = 0; i < live.length; i++) {
      const [key, connection] = live[i]!;
      const share = split.shares[i]!;
      if (share === connection.credit) continue;
      const hello = connection.credit === 0;
      this.setCredit(connection, share, now);
      if (hello) connection.meter.restart(now);
      frames.push({ connection: key, hello, credit: share });
    }
    return frames;
  }
}

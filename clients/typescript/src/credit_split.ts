// How a worker's credit window is shared over its node connections. Each node serves only its
// own shards, so one may have a backlog while another is idle: every rebalance interval the
// client measures each connection (LoadMeter), turns that into a demand (nextDemand) and
// re-splits the window (splitCredits); the credit ledger (credit_ledger.ts) drives them. Nothing
// here reads a clock or sends a frame: time and state are passed in, so every step is
// deterministic and unit-tested.
//
// The policy, as the C++ SDK's: a connection whose window was kept full asks for twice its
// credit, any other for what it used plus headroom; idle demand halves each interval. The
// window is then shared max-min fairly over those asks, never below 1 credit per connection
// (a raise waits for room in the window), so that connections with equal demand get equal
// shares and a connection that cannot get enough credit to prove its backlog still grows (a
// split proportional to measured rates would keep whatever split it started from, since a
// connection's rate is bounded by its credit).

/** The largest credit window a hello or credit frame may state. */
export const MAX_CREDIT_WINDOW = 10000;

/** A window full for at least this share of the interval counts as kept full. */
const FULL_MOST_OF_INTERVAL = 0.5;
/** A connection with a backlog asks for this multiple of its credit (at least one more). */
const BACKLOG_GROWTH = 2;
/** A connection without a backlog asks for what it held on average times this. */
const HEADROOM = 1.5;
/** Weight of the previous demand when the new ask is smaller: idle demand halves per interval. */
const DECAY = 0.5;
/** Hysteresis: a share changes only by at least this many credits or by more than this fraction. */
const MIN_STEP = 2;
const MIN_CHANGE = 0.1;
/** Fractional parts are compared at this resolution, so that float noise cannot reorder ties. */
const FRACTION_RESOLUTION = 1e6;

/** What one connection showed over one rebalance interval. */
export interface IntervalLoad {
  /** Share advertised at the end of the interval. */
  credit: number;
  /** Tasks received during it. */
  received: number;
  /** Share of the interval its window was full (in flight >= credit). */
  fullFraction: number;
  /** Tasks it held, averaged over time. */
  meanInFlight: number;
}

/**
 * Accumulates an IntervalLoad from the events of one connection. The owner calls advance()
 * with the values that held *until* `now` (ms, any monotonic origin), before it changes the
 * tasks in flight or the credit.
 */
export class LoadMeter {
  private since = 0;
  private last = 0;
  private full = 0;
  private inFlightMs = 0;
  received = 0;

  /** Starts a fresh interval at `now`. */
  restart(now: number): void {
    this.since = now;
    this.last = now;
    this.full = 0;
    this.inFlightMs = 0;
    this.received = 0;
  }

  advance(now: number, inFlight: number, credit: number): void {
    const span = now - this.last;
    if (span <= 0) return;
    this.last = now;
    if (credit > 0 && inFlight >= credit) this.full += span;
    this.inFlightMs += inFlight * span;
  }

  elapsed(now: number): number {
    return now - this.since;
  }

  /** Closes the interval at `now` with the values that held since the last advance(). */
  take(now: number, inFlight: number, credit: number): IntervalLoad {
    this.advance(now, inFlight, credit);
    const span = now - this.since;
    const load: IntervalLoad = {
      credit,
      received: this.received,
      fullFraction: span > 0 ? this.full / span : 0,
      meanInFlight: span > 0 ? this.inFlightMs / span : 0,
    };
    this.restart(now);
    return load;
  }
}

/**
 * The next smoothed demand of a connection, in credits, within [0, total]. A connection has a
 * backlog when its window was full most of the interval or turned over within it (more tasks
 * arrived than its credit): it asks for twice its credit. Otherwise it asks for the tasks it
 * held on average plus half again. Demand rises to a larger ask at once and decays towards a
 * smaller one by half per interval.
 */
export function nextDemand(previous: number, load: IntervalLoad, total: number): number {
  const backlog = load.credit > 0 && (load.fullFraction >= FULL_MOST_OF_INTERVAL || load.received > load.credit);
  const ask = backlog ? Math.max(load.credit * BACKLOG_GROWTH, load.credit + 1) : load.meanInFlight * HEADROOM;
  const smoothed = DECAY * previous + (1 - DECAY) * ask;
  return Math.min(Math.max(Math.max(ask, smoothed), 0), Math.max(total, 0));
}

/** One live connection, as splitCredits sees it. */
export interface ConnectionLoad {
  /** Share advertised now; 0 before its hello. */
  credit: number;
  /** From nextDemand; a fresh connection: an even share. */
  demand: number;
  /**
   * The most tasks it may hold: those it holds, or more while its node may still act on a
   * credit larger than `credit` (a lowered credit on its way). At least `credit`.
   */
  reserved: number;
}

/** Connections outside the split (draining): what they take of the window, and how many hold any. */
export interface Elsewhere {
  reserved: number;
  holding: number;
}

/** What splitCredits decided. */
export interface CreditSplit {
  /** The new share of each connection, in connection order. */
  shares: number[];
  /** Some connection got less than it should, for want of room in the window yet. */
  waiting: boolean;
}

/** Exact shares summing to `total` (> asks.length), each ask >= 1: max-min fair. */
function fill(total: number, asks: readonly number[]): number[] {
  const n = asks.length;
  const order = asks.map((_, i) => i).sort((a, b) => asks[a]! - asks[b]! || a - b);
  const exact = new Array<number>(n).fill(0);
  let remaining = total;
  if (asks.reduce((sum, ask) => sum + ask, 0) >= total) {
    // Not enough for every ask: the smallest asks in full, the rest an equal level.
    let k = 0;
    for (; k < n; k++) {
      const i = order[k]!;
      if (asks[i]! * (n - k) > remaining) break;
      exact[i] = asks[i]!;
      remaining -= asks[i]!;
    }
    const level = k < n ? remaining / (n - k) : 0;
    for (; k < n; k++) exact[order[k]!] = level;
  } else {
    // More than every ask: the largest asks as they are, the rest raised to a common level.
    let k = n;
    for (; k > 0; k--) {
      const i = order[k - 1]!;
      if (asks[i]! * k < remaining) break;
      exact[i] = asks[i]!;
      remaining -= asks[i]!;
    }
    const level = k > 0 ? remaining / k : 0;
    for (let j = 0; j < k; j++) exact[order[j]!] = level;
  }
  return exact;
}

/** Whole shares summing to `total`: rounded down (at least 1), the rest to the largest fractions. */
function roundShares(exact: readonly number[], total: number): number[] {
  const n = exact.length;
  const shares = new Array<number>(n);
  const fraction = new Array<number>(n);
  let given = 0;
  for (let i = 0; i < n; i++) {
    const whole = Math.max(1, Math.floor(exact[i]! + 1 / FRACTION_RESOLUTION));
    shares[i] = whole;
    fraction[i] = Math.round((exact[i]! - whole) * FRACTION_RESOLUTION);
    given += whole;
  }
  const order = shares.map((_, i) => i).sort((a, b) => fraction[b]! - fraction[a]! || a - b);
  for (let k = 0; given < total; k++, given++) shares[order[k % n]!]!++;
  return shares;
}

function worthChanging(credit: number, target: number): boolean {
  const change = Math.abs(target - credit);
  return change >= MIN_STEP || change > MIN_CHANGE * credit;
}

/**
 * The new share of each connection, in connection order:
 * - targets: every connection gets at least 1 (so that a node can always signal new work); the
 *   rest of `total` is shared max-min fairly over the demands. The targets sum to
 *   max(total, connections).
 * - hysteresis: a connection with credit keeps it unless the target differs by 2 or more or by
 *   more than 10%, except where that would push the sum over max(total, connections).
 * - raises wait for room: a connection takes max(share, reserved) of the window, and a lowered
 *   share frees nothing until the caller lowers `reserved`. A raise is granted only as far as
 *   the sum over every connection (those `elsewhere` too) stays within `total`, or within one
 *   per connection that holds credit or tasks where those are more. A connection's first credit
 *   (its hello) comes before any other raise. What cannot be granted yet follows in a later
 *   call (`waiting`), once tasks are answered.
 * Shares never exceed MAX_CREDIT_WINDOW.
 */
export function splitCredits(
  total: number,
  connections: readonly ConnectionLoad[],
  elsewhere: Elsewhere = { reserved: 0, holding: 0 },
): CreditSplit {
  const n = connections.length;
  if (n === 0) return { shares: [], waiting: false };
  const bound = Math.max(total, n);

  let shares = new Array<number>(n).fill(1);
  if (bound > n) {
    shares = roundShares(
      fill(
        bound,
        connections.map((c) => Math.max(1, c.demand)),
      ),
      bound,
    );
  }
  const targets = shares.slice();

  // Hysteresis. Kept shares may add up past the bound only through decreases held back; those
  // are given up, largest first, until the sum fits.
  let sum = 0;
  const heldBack: number[] = [];
  for (let i = 0; i < n; i++) {
    const credit = connections[i]!.credit;
    if (credit > 0 && !worthChanging(credit, targets[i]!)) {
      if (credit > targets[i]!) heldBack.push(i);
      shares[i] = credit;
    }
    sum += shares[i]!;
  }
  heldBack.sort((a, b) => shares[b]! - targets[b]! - (shares[a]! - targets[a]!) || a - b);
  for (const i of heldBack) {
    if (sum <= bound) break;
    sum -= shares[i]! - targets[i]!;
    shares[i] = targets[i]!;
  }
  const wanted = shares.slice();

  // Raises wait for room: a connection takes max(share, reserved) of the window.
  let held = elsewhere.reserved;
  let holding = elsewhere.holding;
  const from = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const c = connections[i]!;
    const occupied = Math.max(c.credit, c.reserved);
    from[i] = shares[i]! > c.credit ? Math.min(occupied, shares[i]!) : shares[i]!;
    const taken = Math.max(from[i]!, occupied);
    held += taken;
    if (taken > 0) holding++;
  }
  // First credits: one each, past the window only as one per connection that holds any.
  for (let i = 0; i < n; i++) {
    if (from[i] === 0 && shares[i]! > 0 && held + 1 <= Math.max(total, holding + 1)) {
      from[i] = 1;
      held++;
      holding++;
    }
  }
  let room = Math.max(Math.max(total, holding) - held, 0);
  let waiting = false;
  for (let i = 0; i < n; i++) {
    const grant = from[i]! > 0 ? Math.min(shares[i]! - from[i]!, room) : 0;
    room -= grant;
    shares[i] = Math.min(from[i]! + grant, MAX_CREDIT_WINDOW);
    if (shares[i]! < wanted[i]!) waiting = true;
  }
  return { shares, waiting };
}

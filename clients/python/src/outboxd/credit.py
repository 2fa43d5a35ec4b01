"""How a worker's credit window is shared over its node connections.

Each node serves only its own shards, so one node may have a backlog while another is idle.
Every rebalance interval the worker measures each connection (``LoadMeter``), turns that
into a demand (``next_demand``) and re-splits the window (``split_credits``); the credit
ledger (``credit_ledger.py``) drives them. Nothing here reads a clock or does I/O: times are
passed in, so every step is deterministic and tested without a network.

The policy, as the C++ SDK has it: a connection whose window was kept full asks for twice
its credit, any other for what it held on average plus half again; idle demand halves each
interval. The window is then shared max-min fairly over those asks, never below 1 credit a
connection (so that a node can always hand out new work), and a raise waits until the
window has room for it. A split proportional to measured
rates would keep whatever split it started from, since a connection's rate is bounded by
its credit; asking for twice the credit lets a squeezed connection grow back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Sequence

from .protocol import MAX_CREDIT_WINDOW

# A window full for at least this share of the interval counts as kept full.
FULL_MOST_OF_INTERVAL = 0.5
# A connection with a backlog asks for this multiple of its credit (at least one more).
BACKLOG_GROWTH = 2.0
# A connection without a backlog asks for what it held on average times this.
HEADROOM = 1.5
# Weight of the previous demand when the new ask is smaller.
DECAY = 0.5
# Hysteresis: a share changes only by at least this many credits or by more than this fraction.
MIN_STEP = 2
MIN_CHANGE = 0.1


@dataclass(frozen=True)
class IntervalLoad:
    """What one connection showed over one rebalance interval."""

    credit: int = 0  # share advertised at the end of the interval
    received: int = 0  # tasks received during it
    full_fraction: float = 0.0  # share of the interval its window was full
    mean_in_flight: float = 0.0  # tasks it held, averaged over time


class LoadMeter:
    """Accumulates an IntervalLoad from one connection's events. The owner calls
    ``advance`` with the values that held *until* ``now`` before it changes the tasks in
    flight or the credit."""

    __slots__ = ("_since", "_last", "_full", "_in_flight_area", "received")

    def __init__(self, now: float) -> None:
        self.restart(now)

    def restart(self, now: float) -> None:
        self._since = now
        self._last = now
        self._full = 0.0
        self._in_flight_area = 0.0  # tasks in flight integrated over seconds
        self.received = 0

    def elapsed(self, now: float) -> float:
        return now - self._since

    def advance(self, now: float, in_flight: int, credit: int) -> None:
        span = now - self._last
        if span <= 0:
            return
        self._last = now
        if credit > 0 and in_flight >= credit:
            self._full += span
        self._in_flight_area += in_flight * span

    def take(self, now: float, in_flight: int, credit: int) -> IntervalLoad:
        """Closes the interval at ``now`` and starts the next one."""
        self.advance(now, in_flight, credit)
        span = now - self._since
        load = IntervalLoad(
            credit=credit,
            received=self.received,
            full_fraction=self._full / span if span > 0 else 0.0,
            mean_in_flight=self._in_flight_area / span if span > 0 else 0.0,
        )
        self.restart(now)
        return load


def next_demand(previous: float, load: IntervalLoad, total: int) -> float:
    """The next smoothed demand of a connection, in credits, within [0, total]. A connection
    has a backlog when its window was full most of the interval or turned over within it
    (strictly more tasks arrived than its credit): it asks for twice its credit. Demand
    rises to a larger ask at once and decays towards a smaller one by half per interval."""
    backlog = load.credit > 0 and (
        load.full_fraction >= FULL_MOST_OF_INTERVAL or load.received > load.credit
    )
    if backlog:
        ask = max(load.credit * BACKLOG_GROWTH, load.credit + 1.0)
    else:
        ask = load.mean_in_flight * HEADROOM
    smoothed = DECAY * previous + (1 - DECAY) * ask
    return min(max(ask, smoothed, 0.0), float(max(total, 0)))


@dataclass(frozen=True)
class ConnectionLoad:
    """One live connection, as split_credits sees it."""

    credit: int = 0  # share advertised now; 0 before its hello
    demand: float = 0.0  # from next_demand
    # The most tasks it may hold: those it holds, or more while its node may still act on a
    # credit larger than ``credit`` (a lowered credit on its way). At least ``credit``.
    reserved: int = 0


@dataclass(frozen=True)
class CreditSplit:
    """What split_credits decided: the new share of each connection, in connection order, and
    whether some connection got less than it should because the window had no room yet."""

    shares: List[int]
    waiting: bool


def _fill(total: float, asks: Sequence[float]) -> List[float]:
    """Exact max-min fair shares of ``total`` (more than len(asks)) over ``asks`` (each at
    least 1): the smallest asks in full and the rest an equal level, or, with more than every
    ask, the largest asks as they are and the rest raised to a common level."""
    n = len(asks)
    order = sorted(range(n), key=lambda i: asks[i])
    exact = [0.0] * n
    remaining = total
    if sum(asks) >= total:
        k = 0
        while k < n and asks[order[k]] * (n - k) <= remaining:
            exact[order[k]] = asks[order[k]]
            remaining -= asks[order[k]]
            k += 1
        level = remaining / (n - k) if k < n else 0.0
        for j in range(k, n):
            exact[order[j]] = level
    else:
        k = n
        while k > 0 and asks[order[k - 1]] * k >= remaining:
            exact[order[k - 1]] = asks[order[k - 1]]
            remaining -= asks[order[k - 1]]
            k -= 1
        level = remaining / k if k > 0 else 0.0
        for j in range(k):
            exact[order[j]] = level
    return exact


def _round_shares(exact: Sequence[float], total: int) -> List[int]:
    """Whole shares summing to ``total``: each exact share rounded down (never below 1),
    the rest one each to the largest fractional parts, ties to the first connections."""
    shares = [max(1, math.floor(x + 1e-6)) for x in exact]
    # Fractions compared at a fixed resolution, so that float noise cannot reorder ties.
    fraction = [round((x - s) * 1e6) for x, s in zip(exact, shares)]
    order = sorted(range(len(shares)), key=lambda i: -fraction[i])
    given = sum(shares)
    k = 0
    while given < total:
        shares[order[k % len(shares)]] += 1
        given += 1
        k += 1
    return shares


def _worth_changing(credit: int, target: int) -> bool:
    change = abs(target - credit)
    return change >= MIN_STEP or change > MIN_CHANGE * credit


def split_credits(total: int, connections: Sequence[ConnectionLoad], *,
                  reserved_elsewhere: int = 0, holding_elsewhere: int = 0) -> CreditSplit:
    """The new share of each connection, in connection order.

    - Targets: at least 1 each; the rest of ``total`` max-min fairly over the demands. The
      targets sum to max(total, len(connections)); equal demands give the even split.
    - Hysteresis: a connection with credit keeps it unless the target differs by 2 or more
      or by more than 10%, except where that would push the sum over that bound.
    - Raises wait for room: a connection takes max(share, reserved) of the window, and a
      lowered share frees nothing until the caller lowers ``reserved``. A raise is granted
      only as far as the sum over every connection (those outside the split too:
      ``reserved_elsewhere``, of which ``holding_elsewhere`` hold anything) stays within the
      window, or within one per connection that holds credit or tasks where those are more.
      A connection's first credit (its hello) comes before any other raise. What cannot be
      granted yet follows in a later call (``waiting``), once tasks are answered.
    """
    n = len(connections)
    if n == 0:
        return CreditSplit([], False)
    bound = max(total, n)
    shares = [1] * n
    if bound > n:
        asks = [max(1.0, c.demand) for c in connections]
        shares = _round_shares(_fill(float(bound), asks), bound)
    targets = list(shares)

    held_back = []
    for i, connection in enumerate(connections):
        if connection.credit > 0 and not _worth_changing(connection.credit, targets[i]):
            if connection.credit > targets[i]:
                held_back.append(i)
            shares[i] = connection.credit
    total_shares = sum(shares)
    held_back.sort(key=lambda i: -(shares[i] - targets[i]))
    for i in held_back:
        if total_shares <= bound:
            break
        total_shares -= shares[i] - targets[i]
        shares[i] = targets[i]
    wanted = list(shares)

    # Raises wait for room: a connection takes max(share, reserved) of the window.
    starts = []
    held = reserved_elsewhere
    holding = holding_elsewhere
    for i, connection in enumerate(connections):
        occupied = max(connection.credit, connection.reserved)
        start = min(occupied, shares[i]) if shares[i] > connection.credit else shares[i]
        starts.append(start)
        taken = max(start, occupied)
        held += taken
        holding += 1 if taken > 0 else 0
    # First credits: one each, past the window only as one per connection that holds any.
    for i in range(n):
        if starts[i] == 0 and shares[i] > 0 and held + 1 <= max(total, holding + 1):
            starts[i] = 1
            held += 1
            holding += 1
    room = max(max(total, holding) - held, 0)
    for i in range(n):
        grant = min(shares[i] - starts[i], room) if starts[i] > 0 else 0
        room -= grant
        shares[i] = min(starts[i] + grant, MAX_CREDIT_WINDOW)
    return CreditSplit(shares, any(share < want for share, want in zip(shares, wanted)))

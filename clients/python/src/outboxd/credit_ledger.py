"""Who holds which part of a worker's credit window: the one place that decides the credit
each node connection may advertise (its hello, then credit frames). The worker tells it
what happens (a connection opened, drained or closed; a task received or answered; a
rebalance tick; the settle timer) and sends the frames it returns. Nothing here does I/O or
reads a clock: times are passed in (seconds, any monotonic origin), so the same scenarios
run here, in the TypeScript client and in the C++ SDK (tests/vectors/credit_split.json).

The rule it keeps: the tasks the worker holds plus the credit it still offers never exceed
``max_in_flight``, summed over its connections as max(credit, tasks held) each. The one
exception is the floor: every connection that holds credit or tasks may hold 1, so more
connections than the window hold 1 each. Three things follow:

- a new connection's hello waits until the window has room for it (its first credit is 1
  or more; a hello cannot ask for 0), e.g. while the seed still holds a full window;
- a lowered credit still counts at its old value until the node must have seen it: each
  answer sent after the credit frame lowers that count by one (the node reads the frame
  first, and no longer refills past the new credit), and ``settle`` seconds after the frame
  the rest is released (a node reads its frames within that);
- a draining connection takes no credit, but its tasks count until they are answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Hashable, List, NamedTuple, Optional

from .credit import ConnectionLoad, LoadMeter, next_demand, split_credits

# How long a lowered credit counts at its old value when no answer proves the node saw it.
CREDIT_SETTLE = 1.0


class CreditFrame(NamedTuple):
    """A frame to send: the connection's hello with its first credit, or a credit frame."""

    connection: Hashable
    hello: bool
    credit: int


@dataclass
class _Connection:
    meter: LoadMeter
    draining: bool = False
    credit: int = 0  # advertised; 0 until the hello (and once draining)
    offered: int = 0  # the most its node may still act on, at least ``credit``
    settle_at: float = 0.0  # when ``offered`` falls back to ``credit`` at the latest
    in_flight: int = 0
    demand: float = 0.0


class CreditLedger:
    """The credit of every connection of one worker. ``rebalance_interval`` 0: the even
    split, no demand measured. Event-loop only (not thread-safe)."""

    def __init__(self, window: int, rebalance_interval: float,
                 settle: float = CREDIT_SETTLE) -> None:
        self._window = window
        self._interval = rebalance_interval
        self._settle = settle
        self._connections: Dict[Hashable, _Connection] = {}  # in the order opened
        self._waiting = False  # some share is short of what the split wants

    # Events. Each returns the frames to send now.

    def open(self, key: Hashable, now: float) -> List[CreditFrame]:
        """A connection upgraded: it gets its hello once the window has room for it."""
        self._release(now)
        self._connections[key] = _Connection(LoadMeter(now))
        return self._rebalance(now)

    def drain(self, key: Hashable, now: float) -> List[CreditFrame]:
        """Its node said drain: it sends nothing new; its tasks still count."""
        self._release(now)
        connection = self._connections.get(key)
        if connection is None or connection.draining:
            return []
        self._set_credit(connection, 0, now)
        connection.draining = True
        return self._rebalance(now)

    def close(self, key: Hashable, now: float) -> List[CreditFrame]:
        """The connection is gone, and its tasks with it (the node re-arms them)."""
        self._release(now)
        if self._connections.pop(key, None) is None:
            return []
        return self._rebalance(now)

    def received(self, key: Hashable, now: float) -> None:
        connection = self._connections.get(key)
        if connection is None:
            return
        connection.meter.advance(now, connection.in_flight, connection.credit)
        connection.meter.received += 1
        connection.in_flight += 1

    def answered(self, key: Hashable, now: float) -> List[CreditFrame]:
        """An answer went out on the connection (after every credit frame sent before)."""
        self._release(now)
        connection = self._connections.get(key)
        if connection is None:
            return []
        connection.meter.advance(now, connection.in_flight, connection.credit)
        connection.in_flight = max(connection.in_flight - 1, 0)
        connection.offered = max(connection.offered - 1, connection.credit)
        return self._rebalance(now) if self._waiting else []

    def tick(self, now: float) -> List[CreditFrame]:
        """Every rebalance interval: each connection's demand from its last interval, then a
        new split."""
        self._release(now)
        if self._interval > 0:
            for connection in self._connections.values():
                # A connection without credit has shown nothing; one opened late in the
                # interval keeps its first demand until the next tick.
                if connection.draining or connection.credit == 0:
                    continue
                if connection.meter.elapsed(now) < self._interval / 2:
                    continue
                load = connection.meter.take(now, connection.in_flight, connection.credit)
                connection.demand = next_demand(connection.demand, load, self._window)
        return self._rebalance(now)

    def settle(self, now: float) -> List[CreditFrame]:
        """The settle timer (see ``settle_due``)."""
        self._release(now)
        return self._rebalance(now) if self._waiting else []

    # State.

    def settle_due(self) -> Optional[float]:
        """When the earliest lowered credit is released, if one waits."""
        due = [c.settle_at for c in self._connections.values() if c.offered > c.credit]
        return min(due) if due else None

    def credit(self, key: Hashable) -> int:
        connection = self._connections.get(key)
        return connection.credit if connection else 0

    # Internals.

    def _release(self, now: float) -> None:
        for connection in self._connections.values():
            if connection.offered > connection.credit and connection.settle_at <= now:
                connection.offered = connection.credit

    def _set_credit(self, connection: _Connection, credit: int, now: float) -> None:
        connection.meter.advance(now, connection.in_flight, connection.credit)
        if credit < connection.credit:
            connection.settle_at = now + self._settle
        connection.offered = max(connection.offered, connection.credit, credit)
        connection.credit = credit

    def _rebalance(self, now: float) -> List[CreditFrame]:
        live = [(key, c) for key, c in self._connections.items() if not c.draining]
        reserved_elsewhere = 0
        holding_elsewhere = 0
        for connection in self._connections.values():
            if connection.draining:
                taken = max(connection.offered, connection.in_flight)
                reserved_elsewhere += taken
                holding_elsewhere += 1 if taken > 0 else 0
        if not live:
            self._waiting = False
            return []
        loads = []
        for _, connection in live:
            if self._interval > 0 and connection.credit == 0:
                # A fresh connection starts from an even share of the demand.
                connection.demand = self._window / len(live)
            loads.append(ConnectionLoad(connection.credit,
                                        connection.demand if self._interval > 0 else 0.0,
                                        max(connection.offered, connection.in_flight)))
        split = split_credits(self._window, loads, reserved_elsewhere=reserved_elsewhere,
                              holding_elsewhere=holding_elsewhere)
        self._waiting = split.waiting
        frames = []
        for (key, connection), share in zip(live, split.shares):
            if share == connection.credit:
                continue
            hello = connection.credit == 0
            self._set_credit(connection, share, now)
            if hello:
                connection.meter.restart(now)
            frames.append(CreditFrame(key, hello, share))
        return frames

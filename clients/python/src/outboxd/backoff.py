"""Delays between reconnect attempts: exponential from a minimum to a maximum, with jitter so
that workers cut off together do not come back in lock step."""

from __future__ import annotations

import random
from typing import Optional


class RetryBackoff:
    """For the n-th consecutive failure the ceiling is min(minimum * 2**n, maximum); the
    delay is the ceiling less up to half of it ("equal jitter"), never below ``minimum``.
    ``rng`` feeds the jitter; tests pass a seeded one. One owner, not thread-safe."""

    __slots__ = ("minimum", "maximum", "_failures", "_rng")

    def __init__(self, minimum: float, maximum: float, rng: Optional[random.Random] = None) -> None:
        if minimum <= 0 or maximum < minimum:
            raise ValueError(f"backoff needs 0 < minimum <= maximum, got {minimum}, {maximum}")
        self.minimum = minimum
        self.maximum = maximum
        self._failures = 0
        self._rng = rng or random.Random()

    @property
    def failures(self) -> int:
        """Consecutive failures since the last reset."""
        return self._failures

    def next(self) -> float:
        """Seconds to wait before the next attempt."""
        # Exponent capped: far past the point where the ceiling reaches the maximum.
        ceiling = min(self.minimum * 2.0 ** min(self._failures, 64), self.maximum)
        self._failures += 1
        return max(ceiling - self._rng.uniform(0, ceiling / 2), self.minimum)

    def reset(self) -> None:
        """After a success: the next delay starts from the minimum again."""
        self._failures = 0

"""One fake clock for the tests and the benchmarks' simulations: time moves only when the
code under test sleeps or the test moves it, so TTLs, delays and backoffs are checked
without waiting."""

from __future__ import annotations


class FakeClock:
    """A clock to pass where a component takes ``clock`` (a callable returning seconds) or
    ``sleep``: ``clock()`` is ``now``; ``advance(s)`` moves it; ``await clock.sleep(s)``
    moves it at once and records ``s`` in ``slept``. Time never goes back."""

    def __init__(self, now: float = 1000.0):
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` (>= 0) forward."""
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        """What ``asyncio.sleep`` would do, without the wait."""
        self.slept.append(seconds)
        self.advance(seconds)

"""Side-by-side rounds: the project and its baseline in alternating order, the median and
range of each figure per side, and the box's load average sampled throughout.

The machine running a benchmark is shared, so one run of each side in a fixed order lets
whatever else runs at the time favour one side. :func:`run_rounds` runs every side once per
round, the order reversed each round (A B, B A, A B ...), while a :class:`LoadSampler`
records the 1-minute load average every few seconds; :func:`side_by_side` reports each
numeric figure as the median over the rounds, with ``[min, max]`` beside it under
``range``.
"""

from __future__ import annotations

import os
import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Self

from harness import log

#: ``--rounds``' default for every side-by-side benchmark.
DEFAULT_ROUNDS = 2


class PeriodicSampler:
    """Calls :meth:`_sample` every ``every`` seconds from a daemon thread named
    ``thread_name`` while the ``with`` block runs, and once at entry and once at exit too
    when ``at_edges``. A subclass's ``_sample`` may set ``_stop`` to end the sampling."""

    thread_name = "sampler"
    at_edges = False

    def __init__(self, every: float) -> None:
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)

    def _sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> Self:
        if self.at_edges:
            self._sample()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.at_edges:
            self._sample()


class LoadSampler(PeriodicSampler):
    """Samples the 1-minute load average every ``every`` seconds from a daemon thread while
    the ``with`` block runs (once at entry and once at exit too)."""

    thread_name = "load-sampler"
    at_edges = True

    def __init__(self, every: float = 5.0) -> None:
        super().__init__(every)
        self.samples: list[float] = []

    def _sample(self) -> None:
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict[str, float | int]:
        """``min``, ``median``, ``max`` of the samples, their count and interval."""
        values = self.samples or [os.getloadavg()[0]]
        return {"min": round(min(values), 2), "median": round(statistics.median(values), 2),
                "max": round(max(values), 2), "samples": len(values), "every_s": self.every}


def order(sides: Sequence[str], round_no: int) -> list[str]:
    """The sides in round ``round_no``'s order: as given in even rounds, reversed in odd."""
    return list(sides) if round_no % 2 == 0 else list(reversed(sides))


def run_rounds(sides: Mapping[str, Callable[[int], dict]], rounds: int = DEFAULT_ROUNDS,
               ) -> dict[str, list[dict]]:
    """Each side's figures per round: ``sides[name](round_no)`` called once per round in
    alternating order (see :func:`order`)."""
    if rounds < 1:
        raise ValueError(f"--rounds must be at least 1, got {rounds}")
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    for round_no in range(rounds):
        for name in order(list(sides), round_no):
            log(f"round {round_no + 1}/{rounds}: {name}")
            runs[name].append(sides[name](round_no))
    return runs


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def median_and_range(runs: Sequence[dict], digits: int = 4,
                     ) -> tuple[dict[str, object], dict[str, list[float]]]:
    """The median of each numeric key over ``runs`` (rounds where it is None left out; None
    if it is None in every round) and its ``[min, max]``; other values from the first run."""
    medians: dict[str, object] = {}
    ranges: dict[str, list[float]] = {}
    for key, first in runs[0].items():
        values = [run.get(key) for run in runs]
        numbers = [v for v in values if _numeric(v)]
        if numbers and all(v is None or _numeric(v) for v in values):
            median = round(statistics.median(numbers), digits)
            whole = all(isinstance(v, int) for v in numbers) and float(median).is_integer()
            medians[key] = int(median) if whole else median
            ranges[key] = [round(min(numbers), digits), round(max(numbers), digits)]
        elif all(v is None for v in values):
            medians[key] = None
        else:
            medians[key] = first
    return medians, ranges


def side_by_side(runs: Mapping[str, Sequence[dict]], prefixes: Mapping[str, str],
                 load: LoadSampler | None = None, digits: int = 4) -> dict[str, object]:
    """One flat JSON object: each side's medians under its prefix (``""`` for the project,
    ``"baseline_"`` for the baseline), ``range`` with each figure's ``[min, max]`` under
    the same names, ``rounds`` and ``load_avg`` (the sampler's summary)."""
    result: dict[str, object] = {}
    ranges: dict[str, list[float]] = {}
    for name, side_runs in runs.items():
        medians, spread = median_and_range(side_runs, digits)
        prefix = prefixes[name]
        result.update({prefix + key: value for key, value in medians.items()})
        ranges.update({prefix + key: value for key, value in spread.items()
                       if value[0] != value[1] or len(side_runs) > 1})
    result["rounds"] = min(len(side_runs) for side_runs in runs.values())
    result["range"] = ranges
    if load is not None:
        result["load_avg"] = load.summary()
    return result


def ratio(numerator: float | None, denominator: float | None, digits: int = 3,
          ) -> float | None:
    """``numerator / denominator`` rounded, or None when either is missing or the
    denominator is zero (never a division artefact)."""
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, digits)

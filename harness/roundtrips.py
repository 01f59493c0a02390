"""Counting a Redis client's round trips, for the benchmarks and the tests alike."""

from __future__ import annotations

from typing import Any


def count_round_trips(client: Any) -> list[int]:
    """Count the requests ``client`` sends from now on (each command, script call or
    pipeline is one) in the returned one-element list."""
    count = [0]
    command, make_pipeline = client.execute_command, client.pipeline

    def counted(*args, **kwargs):
        count[0] += 1
        return command(*args, **kwargs)

    def pipeline(*args, **kwargs):
        pipe = make_pipeline(*args, **kwargs)
        execute = pipe.execute

        def run(*a, **k):
            count[0] += 1
            return execute(*a, **k)

        pipe.execute = run
        return pipe

    client.execute_command, client.pipeline = counted, pipeline
    return count

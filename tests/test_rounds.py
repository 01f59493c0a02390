"""The benchmarks' rounds: alternating order, medians and ranges, load sampling."""

from __future__ import annotations

import pytest

from harness.rounds import LoadSampler, median_and_range, ratio, run_rounds, side_by_side


def test_rounds_alternate_the_order_of_the_sides():
    calls = []

    def side(name):
        def run(round_no):
            calls.append((round_no, name))
            return {"x": round_no}
        return run

    runs = run_rounds({"project": side("project"), "baseline": side("baseline")}, rounds=3)
    assert calls == [(0, "project"), (0, "baseline"), (1, "baseline"), (1, "project"),
                     (2, "project"), (2, "baseline")]
    assert runs["project"] == [{"x": 0}, {"x": 1}, {"x": 2}]
    with pytest.raises(ValueError, match="at least 1"):
        run_rounds({"project": side("project")}, rounds=0)


def test_median_and_range_of_numbers_none_and_the_rest():
    runs = [{"a": 1.0, "b": None, "c": "x", "d": None, "e": True},
            {"a": 5.0, "b": 2.0, "c": "y", "d": None, "e": False},
            {"a": 2.0, "b": 4.0, "c": "z", "d": None, "e": True}]
    medians, ranges = median_and_range(runs)
    assert medians == {"a": 2.0, "b": 3.0, "c": "x", "d": None, "e": True}
    assert ranges == {"a": [1.0, 5.0], "b": [2.0, 4.0]}


def test_side_by_side_prefixes_each_side_and_records_rounds_and_load():
    with LoadSampler(every=0.01) as load:
        runs = {"project": [{"v": 10}, {"v": 14}], "baseline": [{"v": 4}, {"v": 6}]}
    result = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load)
    assert result["v"] == 12 and result["baseline_v"] == 5
    assert result["range"] == {"v": [10, 14], "baseline_v": [4, 6]}
    assert result["rounds"] == 2
    assert result["load_avg"]["samples"] >= 2
    assert result["load_avg"]["min"] <= result["load_avg"]["median"] <= result["load_avg"]["max"]


def test_a_ratio_over_zero_is_none_not_an_artefact():
    assert ratio(24500704, 0) is None
    assert ratio(None, 3) is None
    assert ratio(3, 2) == 1.5

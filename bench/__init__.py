"""Benchmarks: each prints one JSON object on its last stdout line."""

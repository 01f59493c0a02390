"""Exact and near-duplicate detection: shingling, MinHash LSH, SimHash, cluster ids."""

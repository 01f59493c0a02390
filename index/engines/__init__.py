"""The search engines, one package each; neither imports the other.

- :mod:`index.engines.embedded`: tantivy in the process (the default, one box);
- :mod:`index.engines.elasticsearch`: an Elasticsearch cluster (``ELASTICSEARCH_URL``).

Both execute the same :class:`~index.plan.SearchPlan`, score with the one formula
(:mod:`index.formula`) and store the fields of :mod:`index.fields`: the shared vocabulary
lives beside this package in :mod:`index`.
"""

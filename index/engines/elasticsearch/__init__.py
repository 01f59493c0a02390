"""The Elasticsearch engine: an alias-versioned index on a cluster (``ELASTICSEARCH_URL``).

- :mod:`.backend`: lifecycle, writes, reads (:class:`ElasticsearchBackend`);
- :mod:`.mapping`: the mapping and each document's ``_source``, from :mod:`index.fields`;
- :mod:`.query`: the query AST and the ranking compiled to the DSL, word IDF;
- :mod:`.search`: the plan executed (search passes, facets); :mod:`.paging`: pages,
  collapse, near-copies; :mod:`.explain`; :mod:`.suggest`: did you mean, completion;
- :mod:`.reindex`: first index, alias swap; :mod:`.tiers`: tier 1 by static rank;
- :mod:`.bulk`: lossless bulk; :mod:`.requests`: read requests counted, outages as
  :class:`~index.base.SearchUnavailable`; :mod:`.hedge`: hedged requests.
"""

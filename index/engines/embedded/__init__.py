"""The embedded engine: tantivy in the process, one index directory under ``DATA_DIR``.

- :mod:`.backend`: lifecycle, writes, reads (:class:`EmbeddedBackend`);
- :mod:`.schema`: the schema and each document's fields, from :mod:`index.fields`;
- :mod:`.query`: the query AST and the ranking retrieval compiled to tantivy queries;
- :mod:`.search`: the plan executed (two-phase ranked search, facets);
- :mod:`.suggest`: "did you mean" by one-edit corrections.
"""

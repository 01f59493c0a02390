"""Crawl quality: the judgements that remove content, with their evidence.

Page judges (soft 404s, template traps, spam: ``judges``) and the pipeline that applies them
(``pipeline``), URL trap guards (``traps``), host verdicts the admin can override
(``verdicts``), and duplicate detection with its pipeline (``dedup``). ``docs/quality.md``,
``docs/dedup.md``.
"""

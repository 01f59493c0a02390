"""The query language shared by every backend, parsed once into a small AST.

Syntax (web-search style)::

    python tutorial          both words (implicit AND)
    "exact phrase"           the words adjacent and in order
    -word  -"a phrase"       exclude documents matching it
    site:example.test        the host or any of its subdomains; -site:host excludes it
    a OR b   a | b           either; binds tighter than AND: ``x a OR b`` = x AND (a OR b)
    (a b) OR c               groups, may be negated: -(a OR b)

Leaves are analyzed with :mod:`index.analysis`, so a backend compiles terms it can look up
directly. A word that analyzes to several terms (``os.path``, ``e-mail``) becomes a phrase.
Free stopwords (``the``, ``of``) are dropped when the query has other content; inside
phrases they are kept. An exclusion inside an ``OR`` is moved up to the enclosing AND
(``a OR -b`` = ``a -b``), so every ``Or`` child is something to match.

Garbage never raises: unbalanced quotes close at the end, stray parentheses, parentheses
nested deeper than ``MAX_DEPTH`` and lone operators are ignored. Only queries too long or
with too many terms to run cheaply raise :class:`QueryError`, with a message saying what
to shorten.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from index.analysis import analyze, analyze_query_term, is_stopword, normalize_host

__all__ = [
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "And",
    "Node",
    "Not",
    "Or",
    "Phrase",
    "Query",
    "QueryError",
    "QueryTooComplex",
    "QueryTooLong",
    "Site",
    "Term",
    "parse",
]

MAX_QUERY_CHARS = 1024
MAX_TERMS = 64
MAX_DEPTH = 8


class QueryError(ValueError):
    """A query that cannot be run as written; the message says what to change."""


class QueryTooLong(QueryError):
    """The query text exceeds ``MAX_QUERY_CHARS``."""


class QueryTooComplex(QueryError):
    """The query has more than ``MAX_TERMS`` terms."""


@dataclass(frozen=True)
class Term:
    """One analyzed term; ``word`` is what the user typed."""

    word: str
    term: str

    def __str__(self) -> str:
        return self.term


@dataclass(frozen=True)
class Phrase:
    """Two or more analyzed terms that must occur adjacent and in order."""

    text: str
    terms: tuple[str, ...]

    def __str__(self) -> str:
        return '"' + " ".join(self.terms) + '"'


@dataclass(frozen=True)
class Site:
    """Documents whose host is ``host`` or a subdomain of it."""

    host: str

    def __str__(self) -> str:
        return f"site:{self.host}"


@dataclass(frozen=True)
class Not:
    """Excludes documents matching ``child``; only ever a child of ``And`` or the root."""

    child: Node

    def __str__(self) -> str:
        return f"-{_wrap(self.child)}"


@dataclass(frozen=True)
class And:
    """All positive children match and no ``Not`` child does; at least two children."""

    children: tuple[Node, ...]

    def __str__(self) -> str:
        return " ".join(
            _wrap(c) if isinstance(c, And) else str(c) for c in self.children
        )


@dataclass(frozen=True)
class Or:
    """At least one child matches; at least two children, none of them ``Not``."""

    children: tuple[Node, ...]

    def __str__(self) -> str:
        return " OR ".join(_wrap(c) for c in self.children)


Node = Term | Phrase | Site | Not | And | Or


def _wrap(node: Node) -> str:
    return f"({node})" if isinstance(node, And | Or) else str(node)


@dataclass(frozen=True)
class Query:
    """A parsed query: the text as typed and its AST (``None`` when nothing is searchable)."""

    raw: str
    root: Node | None

    @property
    def matches_nothing(self) -> bool:
        """True when no document can match: empty, or only exclusions."""
        if self.root is None or isinstance(self.root, Not):
            return True
        if isinstance(self.root, And):
            return all(isinstance(c, Not) for c in self.root.children)
        return False

    def terms(self) -> list[str]:
        """The positive terms (from words and phrases), unique and in query order."""
        seen: dict[str, None] = {}
        for node in self.leaves(positive_only=True):
            if isinstance(node, Term):
                seen.setdefault(node.term)
            elif isinstance(node, Phrase):
                for t in node.terms:
                    seen.setdefault(t)
        return list(seen)

    def words(self) -> list[str]:
        """The terms of positive single words (not phrases), unique and in query order."""
        return list(
            dict.fromkeys(n.term for n in self.leaves(positive_only=True) if isinstance(n, Term))
        )

    def phrases(self) -> list[tuple[str, ...]]:
        """The term sequences of positive phrases, for highlighting whole phrases."""
        return [
            n.terms for n in self.leaves(positive_only=True) if isinstance(n, Phrase)
        ]

    def leaves(self, positive_only: bool = False) -> Iterator[Term | Phrase | Site]:
        """Every leaf, depth first; with ``positive_only`` the excluded ones are skipped."""
        if self.root is not None:
            yield from _leaves(self.root, positive_only)

    def __str__(self) -> str:
        return "" if self.root is None else str(self.root)


def _leaves(node: Node, positive_only: bool) -> Iterator[Term | Phrase | Site]:
    if isinstance(node, Not):
        if not positive_only:
            yield from _leaves(node.child, positive_only)
    elif isinstance(node, And | Or):
        for child in node.children:
            yield from _leaves(child, positive_only)
    else:
        yield node


# --- lexing -------------------------------------------------------------------------------

_WORD, _PHRASE, _SITE, _OR, _OPEN, _CLOSE = "word", "phrase", "site", "or", "(", ")"


@dataclass(frozen=True)
class _Token:
    kind: str
    value: str = ""
    negated: bool = False


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    depth = ignored = (
        0  # parentheses beyond MAX_DEPTH are dropped, keeping recursion bounded
    )
    while i < n:
        ch = text[i]
        if ch.isspace() or ch < " ":
            i += 1
            continue
        negated = False
        while ch == "-" and i + 1 < n:
            negated, i = True, i + 1
            ch = text[i]
        if ch == "-" or ch.isspace():
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end
            tokens.append(_Token(_PHRASE, text[i + 1 : end], negated))
            i = end + 1
        elif ch == "(":
            if depth < MAX_DEPTH:
                depth += 1
                tokens.append(_Token(_OPEN, negated=negated))
            else:
                ignored += 1
            i += 1
        elif ch == ")":
            if ignored:
                ignored -= 1
            else:
                depth = max(depth - 1, 0)
                tokens.append(_Token(_CLOSE))
            i += 1
        else:
            start = i
            while i < n and not (text[i].isspace() or text[i] in '")' or text[i] < " "):
                i += 1
            word = text[start:i]
            if word in ("OR", "|") and not negated:
                tokens.append(_Token(_OR))
            elif word[:5].lower() == "site:":
                host = normalize_host(word[5:])
                if host:
                    tokens.append(_Token(_SITE, host, negated))
            else:
                tokens.append(_Token(_WORD, word, negated))
    return tokens


# --- parsing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Free:
    """A free stopword term, kept only while we do not know if the query has other content."""

    term: Term


class _Parser:
    def __init__(self, tokens: list[_Token]):
        self.tokens = tokens
        self.pos = 0
        self.leaves = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def sequence(self, depth: int) -> list:
        """Clauses up to the matching ``)`` (or the end); each an implicit AND operand."""
        clauses: list = []
        while (token := self.peek()) is not None:
            if token.kind == _CLOSE:
                self.pos += 1
                if depth > 0:
                    break
                continue
            if token.kind == _OR:
                self.pos += 1
                continue
            operands = [self.unary(depth)]
            while (nxt := self.peek()) is not None and nxt.kind == _OR:
                self.pos += 1
                following = self.peek()
                if following is None or following.kind in (_OR, _CLOSE):
                    continue
                operands.append(self.unary(depth))
            clauses.extend(_disjunction(operands))
        return clauses

    def unary(self, depth: int):
        token = self.tokens[self.pos]
        self.pos += 1
        if token.kind == _OPEN:
            node = _conjunction(self.sequence(depth + 1))
        else:
            node = self.leaf(token)
        if token.negated and node is not None:
            return Not(node)
        return node

    def leaf(self, token: _Token):
        if token.kind == _SITE:
            self.count(1)
            return Site(token.value)
        if token.kind == _PHRASE:
            terms = analyze(token.value)
            self.count(len(terms))
            if len(terms) > 1:
                return Phrase(token.value, tuple(terms))
            return Term(token.value, terms[0]) if terms else None
        terms = analyze_query_term(token.value)
        self.count(len(terms))
        if len(terms) > 1:
            return Phrase(token.value, tuple(terms))
        if not terms:
            return None
        term = Term(token.value, terms[0])
        return _Free(term) if is_stopword(term.term) else term

    def count(self, n: int) -> None:
        self.leaves += n
        if self.leaves > MAX_TERMS:
            raise QueryTooComplex(
                f"The query has more than {MAX_TERMS} terms; remove some."
            )


def _disjunction(operands: list) -> list:
    """AND operands for ``a OR b OR ...``: the Or plus any exclusions moved out of it."""
    positives, hoisted = [], []
    for node in operands:
        if node is None:
            continue
        if isinstance(node, Not):
            hoisted.append(node)
        elif isinstance(node, And) and all(isinstance(c, Not) for c in node.children):
            hoisted.extend(node.children)
        else:
            positives.append(node)
    if len(positives) > 1:
        return [_FreeOr(tuple(positives))] + hoisted
    return positives + hoisted


@dataclass(frozen=True)
class _FreeOr:
    """An Or still holding ``_Free`` stopword terms, resolved once the whole query is known."""

    children: tuple


def _conjunction(clauses: list):
    """One node for implicitly ANDed clauses: ``None``, the single clause, or ``And``."""
    flat: list = []
    for clause in clauses:
        if clause is None:
            continue
        if isinstance(clause, And):
            flat.extend(clause.children)
        else:
            flat.append(clause)
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def _has_content(node) -> bool:
    """Whether a positive, non-stopword leaf exists (stopwords may then be dropped)."""
    if isinstance(node, _Free | Not) or node is None:
        return False
    if isinstance(node, And | Or | _FreeOr):
        return any(_has_content(c) for c in node.children)
    return True


def _resolve(node, drop_stopwords: bool):
    """Replace ``_Free``/``_FreeOr`` placeholders, dropping stopwords if asked."""
    if isinstance(node, _Free):
        return None if drop_stopwords else node.term
    if isinstance(node, Not):
        # Excluding a stopword would exclude nearly every document.
        child = _resolve(node.child, drop_stopwords=True)
        return None if child is None else Not(child)
    if isinstance(node, _FreeOr | Or):
        children = [
            c for c in (_resolve(c, drop_stopwords) for c in node.children) if c
        ]
        flat: list = []
        for c in children:
            flat.extend(c.children if isinstance(c, Or) else (c,))
        if not flat:
            return None
        return flat[0] if len(flat) == 1 else Or(tuple(flat))
    if isinstance(node, And):
        children = [
            c for c in (_resolve(c, drop_stopwords) for c in node.children) if c
        ]
        return _conjunction(children)
    return node


def parse(text: str) -> Query:
    """Parse ``text`` into a :class:`Query`; raises :class:`QueryError` only on size limits."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLong(
            f"The query is {len(text)} characters long; keep it under {MAX_QUERY_CHARS}."
        )
    parser = _Parser(_lex(text))
    tree = _conjunction(parser.sequence(depth=0))
    return Query(text, _resolve(tree, drop_stopwords=_has_content(tree)))

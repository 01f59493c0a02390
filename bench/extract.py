"""Main-text extraction quality and speed on test-web pages whose true text is known.

Every page is rendered in-process by ``TestWeb`` (same bytes the server sends) and
extracted from its body bytes and Content-Type, the way the spider does. Normal pages are
scored twice: as served (semantic ``<main>``/``<article>``/``<nav>``) and as "div soup", the
same page with every sectioning tag turned into a ``<div>`` (class names kept), which is how
much of the web is written and where boilerplate removal has to work. Scores are
token-level (lower-cased words, multiset overlap), micro-averaged over all pages:
precision = shared / extracted tokens, recall = shared / true tokens. Side by side, in the
same run: the project's extractor, lxml's plain ``text_content()`` of the body (what a
naive crawler indexes) and trafilatura (when installed).

``--rounds`` rounds (default 2) run every side in alternating order; each figure is the
median over the rounds with its ``[min, max]`` under ``range`` (only the speed varies), the
load average is sampled every second (``load_avg``), and each baseline's settings are
written beside its figures.

Last stdout line: one JSON object with ``text_precision``, ``text_recall``, ``ms_per_page``
and the same for each baseline (``baseline_*``, ``trafilatura_*``).

    python -m bench.extract [--hosts 20] [--pages 25] [--rounds 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from collections.abc import Callable

import lxml.html

from crawler.extract import decode_html, extract
from harness import log
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side
from testweb.web import TestWeb

TOKEN = re.compile(r"\w+")


def tokens(text: str) -> Counter:
    return Counter(t.lower() for t in TOKEN.findall(text))


SECTIONING = re.compile(rb"<(/?)(main|article|header|footer|aside|nav|section)\b")


def div_soup(body: bytes) -> bytes:
    """The page with its sectioning elements turned into plain ``<div>``s."""
    return SECTIONING.sub(rb"<\1div", body)


def corpus(hosts: int, pages: int) -> list[tuple[str, bytes, str, str]]:
    """(url, body, content type, true main text) of normal and adversarial pages."""
    web = TestWeb(hosts, 8000)
    paths: list[tuple[str, str]] = []
    for host in web.normal_hosts:
        paths += [(host, "/")] + [(host, f"/p/{n}") for n in range(pages)]
    paths += [("broken.test", "/")] + [("broken.test", f"/broken/{n}") for n in range(20)]
    paths += [("hostile.test", f"/p/{n}") for n in range(10)]
    paths += [("sessions.test", f"/item/{n}") for n in range(30)]
    paths += [("slow.test", f"/p/{n}") for n in range(20)]
    paths += [("redirects.test", p) for p in ("/chain/0", "/rel/0", "/meta-target")]
    paths += [("charset.test", f"/{d}/{cs}") for d in ("header", "meta")
              for cs in ("iso-8859-1", "windows-1251", "shift_jis")]
    out = []
    for host, path in paths:
        response = web.render(host, path)
        info = web.page(host, path)
        if response.status != 200 or info is None:
            continue
        content_type = response.headers.get("Content-Type", "")
        out.append((web.url(host, path), response.body, content_type, info.main_text))
        if host in web.normal_hosts:
            out.append((web.url(host, path), div_soup(response.body), content_type,
                        info.main_text))
    return out


def project(url: str, body: bytes, content_type: str) -> str:
    text, _ = decode_html(body, content_type)
    return extract(text, url).text


def plain_text_content(url: str, body: bytes, content_type: str) -> str:
    text, _ = decode_html(body, content_type)
    root = lxml.html.document_fromstring(text)
    for el in root.iter("script", "style"):
        el.drop_tree()
    body_el = root.find("body")
    return (body_el if body_el is not None else root).text_content()


def trafilatura_text(url: str, body: bytes, content_type: str) -> str:
    import trafilatura

    text, _ = decode_html(body, content_type)
    return trafilatura.extract(text, url=url, include_comments=False, favor_recall=True) or ""


def score(name: str, fn: Callable[[str, bytes, str], str], pages) -> dict:
    shared = extracted = true = 0
    started = time.process_time()
    for url, body, content_type, truth in pages:
        got, want = tokens(fn(url, body, content_type)), tokens(truth)
        shared += sum((got & want).values())
        extracted += sum(got.values())
        true += sum(want.values())
    cpu = time.process_time() - started
    result = {
        "text_precision": round(shared / extracted, 4) if extracted else 0.0,
        "text_recall": round(shared / true, 4) if true else 0.0,
        "ms_per_page": round(cpu / len(pages) * 1000, 3),
    }
    log(f"{name:12} P={result['text_precision']:.3f} R={result['text_recall']:.3f} "
        f"{result['ms_per_page']:.2f} ms/page")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=25, help="article pages per normal host")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of every side")
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    if opts.quick:
        opts.hosts, opts.pages = 4, 5
    pages = corpus(opts.hosts, opts.pages)
    log(f"{len(pages)} pages with known main text")
    sides = {"project": project, "baseline": plain_text_content}
    settings = {"baseline_settings": {"extract": "lxml.html body text_content(), script and "
                                                 "style dropped"}}
    try:
        import trafilatura
    except ImportError:
        log("trafilatura not installed: no second baseline")
    else:
        sides["trafilatura"] = trafilatura_text
        settings["trafilatura_settings"] = {
            "version": trafilatura.__version__,
            "extract": "trafilatura.extract(html, url=url, include_comments=False, "
                       "favor_recall=True)"}
    for fn in sides.values():  # imports and first-call caches out of the first round
        for url, body, content_type, _ in pages[:5]:
            fn(url, body, content_type)
    with LoadSampler(every=1.0) as load:
        runs = run_rounds({name: (lambda _, name=name, fn=fn: score(name, fn, pages))
                           for name, fn in sides.items()}, opts.rounds)
    summary = side_by_side(runs, {"project": "", "baseline": "baseline_",
                                  "trafilatura": "trafilatura_"}, load)
    summary.update({"pages": len(pages), **settings})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

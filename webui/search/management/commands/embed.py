"""python manage.py embed [--budget N] [--group N] [--json]"""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from batch.embed import EmbedSettings, embed_pending, open_match
from batch.rank import RankSettings, open_backend
from index.semantic import ModelMissing


class Command(BaseCommand):
    help = (
        "Embed the sections of the pages indexed without vectors (semantic matching, "
        "SEARCH_SEMANTIC) in this process and write them back to the search index, a group "
        "at a time: at most --budget pages a run (SEARCH_SEMANTIC_BUDGET); run it again to "
        "go on. An interrupted run loses at most its last group."
    )

    def add_arguments(self, parser):
        parser.add_argument("--budget", type=int, metavar="N",
                            help="Pages embedded at most (default: SEARCH_SEMANTIC_BUDGET)")
        parser.add_argument("--group", type=int, metavar="N",
                            help="Pages embedded and written back together "
                                 "(default: SEARCH_SEMANTIC_BATCH_PAGES)")
        parser.add_argument("--json", action="store_true", help="Print the run report as JSON")

    def handle(self, *args, **opts):
        embed_settings = EmbedSettings.from_settings(settings, budget=opts["budget"],
                                                     group=opts["group"])
        match = open_match(settings)
        if match is None:
            self.report(opts, {"enabled": False}, "semantic matching is off (SEARCH_SEMANTIC):"
                                                  " nothing to embed")
            return
        backend = open_backend(RankSettings.from_settings(settings))

        def progress(report):
            if not opts["json"]:
                rate = report.embedded / max(report.seconds, 1e-9)
                self.stdout.write(f"  {report.embedded} pages embedded ({report.windows} "
                                  f"sections, {rate:.1f} pages/s)")
        try:
            report = embed_pending(backend, match, embed_settings, progress)
        except ModelMissing as exc:
            raise CommandError(str(exc)) from None
        except RuntimeError as exc:  # the embedded index's writer lock: a crawl is running
            raise CommandError(str(exc)) from None
        finally:
            backend.close()
        left = ("more pages wait: run manage.py embed again" if report.more
                else "every page has its vectors")
        self.report(opts, report.to_dict(),
                    f"{report.embedded} pages embedded ({report.windows} sections) in "
                    f"{report.seconds:.1f} s; {left}")

    def report(self, opts, figures: dict, line: str) -> None:
        self.stdout.write(json.dumps(figures) if opts["json"] else line)

"""python manage.py restore DIR [--prefix NAME] [--only PART ...] [--no-input]"""

import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawler.config import get_config
from operations.backup import BACKUP_PARTS, BackupError, parts_for, read_manifest, restore


class Command(BaseCommand):
    help = (
        "Restore a backup of `manage.py backup` into the configured services, replacing "
        "what they hold: the control database, every key of the Redis server(s) (FLUSHALL "
        "first) and the <ES_INDEX_PREFIX>-* indices (deleted, then restored from the "
        "snapshot with their aliases). Stop the crawl workers and the web UI first."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", metavar="DIR", help="A directory `backup` wrote")
        parser.add_argument("--prefix", help="Elasticsearch alias whose <prefix>-* indices "
                                                 "are meant (default: the ES_INDEX_PREFIX setting)")
        parser.add_argument("--only", action="append", choices=BACKUP_PARTS, metavar="PART",
                            help=f"Restore only this part (repeatable): {', '.join(BACKUP_PARTS)}")
        parser.add_argument("--no-input", "--noinput", action="store_false", dest="interactive",
                            help="Do not ask for confirmation")

    def handle(self, *args, **opts):
        directory = Path(opts["directory"]).resolve()

        def progress(line: str) -> None:
            print(f"restore: {line}", file=sys.stderr, flush=True)

        try:
            manifest = read_manifest(directory)
            prefix = opts["prefix"] or settings.ES_INDEX_PREFIX
            parts = parts_for(get_config(), prefix, set(opts["only"] or ()))
            held = [p for p in parts if p.name in manifest["parts"]]
            if not held:
                raise CommandError(f"the backup in {directory} holds none of the configured "
                                   f"parts ({', '.join(p.name for p in parts) or 'none'})")
            if opts["interactive"]:
                self.stdout.write(f"Restoring the backup of {manifest['created']} replaces:")
                for part in held:
                    self.stdout.write(f"  {part.describe()}")
                if input("Type 'yes' to continue: ").strip() != "yes":
                    raise CommandError("restore cancelled; nothing was changed")
            results = restore(directory, manifest, parts, progress)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Restored {directory} (backup of {manifest['created']})")
        marks = {True: "ok", False: "differs", None: "-"}
        for name, ok, line in results:
            self.stdout.write(f"  {name:<14} {marks[ok]:<8} {line}")
        if any(ok is False for _, ok, _ in results):
            self.stdout.write("Counts differ from those at backup time: something wrote while "
                              "the backup ran (stop the crawl for an exact point in time).")

"""python manage.py backup [DIR] [--prefix NAME] [--only PART ...] [--json]"""

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawler.config import get_config
from operations.backup import BACKUP_PARTS, BackupError, backup, human_bytes, parts_for


class Command(BaseCommand):
    help = (
        "Back up the control database, the Redis frontier (BGSAVE, RDB copy) and the "
        "Elasticsearch index (a snapshot in the nodes' path.repo) of this configuration "
        "into DIR, with a manifest.json; restore with `manage.py restore DIR`. For one "
        "point in time stop the crawl workers first; otherwise each part is taken in turn "
        "(database, frontier, index), so a page fetched meanwhile is at worst fetched again."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", nargs="?", metavar="DIR",
                            help="A new or empty directory (default: "
                                 "DATA_DIR/backups/<UTC time>)")
        parser.add_argument("--prefix", help="Elasticsearch alias whose <prefix>-* indices "
                                                 "are meant (default: the ES_INDEX_PREFIX setting)")
        parser.add_argument("--only", action="append", choices=BACKUP_PARTS, metavar="PART",
                            help=f"Back up only this part (repeatable): {', '.join(BACKUP_PARTS)}")
        parser.add_argument("--json", action="store_true", help="Print the manifest as JSON")

    def handle(self, *args, **opts):
        config = get_config()
        directory = Path(opts["directory"] or config.data_dir / "backups"
                         / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")).resolve()
        skipped: list[str] = []

        def progress(line: str) -> None:
            print(f"backup: {line}", file=sys.stderr, flush=True)

        try:
            prefix = opts["prefix"] or settings.ES_INDEX_PREFIX
            parts = parts_for(config, prefix, set(opts["only"] or ()), skipped)
            progress(f"writing to {directory}")
            manifest = backup(directory, parts, progress)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        if opts["json"]:
            self.stdout.write(json.dumps(manifest, indent=2))
            return
        self.stdout.write(f"Backup written to {directory} ({human_bytes(manifest['bytes'])} "
                          f"on this disk)")
        for name, saved in manifest["parts"].items():
            self.stdout.write(f"  {name:<14} {saved['summary']}  [{saved['seconds']:.1f} s]")
        for line in skipped:
            self.stdout.write(f"  skipped        {line}")
        self.stdout.write(f"Restore with: scripts/restore.sh {directory}")

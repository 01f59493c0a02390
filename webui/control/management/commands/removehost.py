"""python manage.py removehost PATTERN [PATTERN ...]"""

from django.core.management.base import BaseCommand, CommandError

from webui.control.actions import remove_host_from_index


class Command(BaseCommand):
    help = (
        "Remove the indexed pages of hosts matching each pattern (a host or a glob such as "
        "*.example.org), e.g. after blocking a host while an embedded crawl held the index."
    )

    def add_arguments(self, parser):
        parser.add_argument("patterns", nargs="+", help="host names or globs")

    def handle(self, *args, **opts):
        for pattern in opts["patterns"]:
            try:
                removed = remove_host_from_index(pattern.strip().lower())
            except RuntimeError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"{pattern}: {removed} page(s) removed from the index")

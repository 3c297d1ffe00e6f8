from django.core.management.base import BaseCommand

from catalog_app.services.enrichment import EnrichmentOutcome, records_enrich, records_recover_pending
from memseek_site.conf import memseek_setting


class Command(BaseCommand):
    help = ("Enrich, in this process, every record still unready some time after insert (the recovery "
            "a starting worker enqueues). Provider failures write defaults, so every record finishes.")

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=float, default=None, metavar="SECONDS",
                            help="only records inserted at least this long ago "
                                 f"(default PENDING_RECOVERY_AGE_S = {memseek_setting('PENDING_RECOVERY_AGE_S')})")

    def handle(self, *args, older_than, **options):
        total = EnrichmentOutcome()

        def enrich(ids):
            outcome = records_enrich(record_ids=ids, final_attempt=True)
            total.written += outcome.written
            total.defaulted += outcome.defaulted
            total.ready += outcome.ready
            total.skipped += outcome.skipped

        count = records_recover_pending(dispatch=enrich, older_than_s=older_than)
        self.stdout.write(f"{count} pending record(s): {len(total.ready)} now ready, {total.written} processor "
                          f"result(s) written ({total.defaulted} default), {len(total.skipped)} skipped "
                          "(held by a running worker)")

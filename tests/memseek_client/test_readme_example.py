"""The Python SDK page's examples (docs/api/python-sdk.md) run as written (the server address aside) against a live
server and print what the page says they print."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from .conftest import LIVE

pytestmark = LIVE
PAGE = Path(__file__).resolve().parents[2] / "docs" / "api" / "python-sdk.md"


def _sdk_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


def test_the_readme_examples_run_and_print_what_they_say(live):
    write_and_read, errors, asynchronous = _sdk_examples()
    with live.client(timeout=300) as memseek:  # the server's first write loads the model: not the example's cost
        memseek.write_records([{"entity": "contact.warm", "collection": "main", "type": "note", "text": "warm"}])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        # The README's quickstart address, pointed at this test's server.
        exec(write_and_read.replace('"http://127.0.0.1:8000"', repr(live.url)), {"KEY": live.key})  # noqa: S102
    lines = printed.getvalue().splitlines()
    assert lines[0].startswith("1 ") and any(line.endswith("Maria moved the review to Tuesday.") for line in lines)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(errors.replace('"http://127.0.0.1:8000"', repr(live.url)), {"KEY": live.key})  # noqa: S102
    first, second = printed.getvalue().splitlines()
    assert first == "404 record_not_found id"
    assert second.startswith("404 record_not_found: ") and second.endswith(" (at id)")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(asynchronous.replace('"http://127.0.0.1:8000"', repr(live.url)), {"KEY": live.key})  # noqa: S102
    newest = printed.getvalue().splitlines()[0]
    assert newest.endswith(" Maria moved the review to Tuesday.")  # the timeline is newest first

"""``manage.py workspace_setting``: retrieval settings are set, checked as a whole before they
are stored, shown with their effective values, and unset."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalog_app.models import Workspace
from retrieval_app.settings import retrieval_settings


def run(*args) -> str:
    out = StringIO()
    call_command("workspace_setting", *args, stdout=out)
    return out.getvalue()


def test_set_show_and_unset(workspace):
    assert json.loads(run("acme", "retrieval.valueAware.enabled", "true")) == {"retrieval.valueAware.enabled": True}
    run("acme", "retrieval.weights", '{"recency": 0.3}')
    run("acme", "retrieval.tokenBudget", "2000")
    settings = retrieval_settings(Workspace.objects.get(pk=workspace.pk))
    assert (settings.value_aware_enabled, settings.weights["recency"], settings.token_budget) == (True, 0.3, 2000)
    shown = json.loads(run("acme"))
    assert shown["effective"]["value_aware_enabled"] is True and shown["effective"]["weights"]["fusion"] == 0.55
    assert shown["stored"]["retrieval.tokenBudget"] == 2000
    run("acme", "retrieval.valueAware.enabled", "--unset")
    assert retrieval_settings(Workspace.objects.get(pk=workspace.pk)).value_aware_enabled is False


@pytest.mark.parametrize("args, message", [
    (("acme", "retrieval.tokenBudget", "10"), "retrieval.tokenBudget"),
    (("acme", "retrieval.valueAware.enabled", "yes"), "true or false"),
    (("acme", "retrieval.weights", '{"novelty": 1}'), "retrieval.weights.novelty"),
    (("acme", "retrieval.tokenBudgets", "2000"), "unknown setting"),
    (("nobody", "retrieval.tokenBudget", "2000"), "no workspace"),
    (("acme", "retrieval.tokenBudget"), "VALUE or --unset"),
])
def test_bad_settings_are_refused_and_nothing_is_stored(workspace, args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert Workspace.objects.get(pk=workspace.pk).settings == {}

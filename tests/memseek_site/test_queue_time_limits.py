"""Task time limits must satisfy 0 < soft <= hard (memseek_site.queues.task_time_limits): in the
prefork pool the hard limit is only scheduled once the soft one has passed, so any other pair
would delay the kill. A bad pair stops the process at start, naming the setting."""
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from memseek_site.queues import TIME_LIMIT_SETTINGS, TaskTimeLimits, task_time_limits, time_limits_check

ENRICH = "catalog_app.tasks.enrich_records"


class Named:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("soft, hard", [(0, 4), (5, 4), (-1, 4), (961, 960)])
def test_a_soft_limit_outside_zero_to_the_hard_one_is_refused_naming_the_setting(soft, hard):
    with override_settings(MEMSEEK={"ENRICH_SOFT_TIME_LIMIT_S": soft, "ENRICH_TIME_LIMIT_S": hard}):
        for check in (lambda: task_time_limits(ENRICH), time_limits_check,
                      lambda: TaskTimeLimits().annotate(Named(ENRICH))):
            with pytest.raises(ImproperlyConfigured, match=r"^ENRICH_SOFT_TIME_LIMIT_S must be more than 0 and at "
                                                          rf"most ENRICH_TIME_LIMIT_S \({hard}\), not {soft}$"):
                check()


@pytest.mark.parametrize("soft, hard", [(4, 4), (0.5, 4), (900, 960)])
def test_a_soft_limit_up_to_the_hard_one_is_the_task_annotation(soft, hard):
    with override_settings(MEMSEEK={"ENRICH_SOFT_TIME_LIMIT_S": soft, "ENRICH_TIME_LIMIT_S": hard}):
        time_limits_check()
        assert TaskTimeLimits().annotate(Named(ENRICH)) == {"soft_time_limit": soft, "time_limit": hard}


def test_every_task_with_limits_passes_with_the_defaults_and_others_have_none():
    assert all(task_time_limits(name) is not None for name in TIME_LIMIT_SETTINGS)
    assert task_time_limits("some.other.task") is None
    assert TaskTimeLimits().annotate(Named("some.other.task")) is None

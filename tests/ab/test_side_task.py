"""The task ab's driver hands a side's process that serves no requests: one typed, versioned variable, read back as
written; the variables of protocol 4 set beside it for an older plugin, and read where a driver set only them; a
task of another version or a malformed one refused with what was given. Pure."""

from __future__ import annotations

import json

import pytest

from pytest_roofline.ab.protocol import VERSION, ProtocolError
from pytest_roofline.ab.side_task import TASK_VARIABLE, SideTask, task_from


@pytest.mark.parametrize("task", [SideTask("once"), SideTask("programs", "/tmp/p.json"),
                                  SideTask("verdicts", "/tmp/v.json")])
def test_a_task_reads_back_as_the_driver_wrote_it_from_its_variable_or_the_older_ones(task: SideTask) -> None:
    environment = task.environment()
    assert task_from(environment) == task and json.loads(environment[TASK_VARIABLE])["version"] == VERSION
    older = {k: v for k, v in environment.items() if k != TASK_VARIABLE}
    assert len(older) == 1 and task_from(older) == task  # what a plugin of protocol 4 reads, and a driver set


def test_no_variable_is_no_task() -> None:
    assert task_from({}) is None and task_from({"PYTEST_ROOFLINE_AB_MODE": "serve"}) is None


@pytest.mark.parametrize(("raw", "said"), [
    (json.dumps({"version": VERSION + 1, "task": "once"}), f"protocol version {VERSION + 1}; this side's"),
    (json.dumps({"version": VERSION, "task": "twice"}), "'twice'"),
    ("once", "is not a task of ab's driver"),
    (json.dumps({"task": "once"}), "is not a task of ab's driver"),
])
def test_a_task_of_another_version_or_malformed_is_refused_naming_it(raw: str, said: str) -> None:
    with pytest.raises(ProtocolError, match=said.replace("(", r"\(")):
        task_from({TASK_VARIABLE: raw})

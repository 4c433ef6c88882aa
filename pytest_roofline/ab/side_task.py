"""What ``pytest-roofline ab``'s driver starts a side's process for, where that process serves no requests: one typed
:class:`SideTask` in one environment variable (so that xdist's workers, which inherit it, see it too), with the
protocol's version (:data:`~.protocol.VERSION`). Pure.

The variable holds one JSON object, ``{"version": 5, "task": TASK, "path": FILE}``, where TASK is

- ``once``: a round's side that runs to its end, every kernel measured once;
- ``programs``: the programs pass (:mod:`.same_programs`), every kernel compiled and fingerprinted, nothing timed,
  the pass written to ``path``;
- ``verdicts``: the head's process that ab starts once its verdicts are in: the comparison in the JSON file ``path``
  handed to the suite's ``pytest_roofline_ab`` hooks, nothing collected.

A base revision's plugin from before this variable (protocol 4 and older) read one variable a task: the driver sets
those too (:meth:`SideTask.environment`), and a plugin started by such a driver finds its task there
(:func:`task_from`). A task of another version is a :class:`~.protocol.ProtocolError` that names both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from .protocol import VERSION, ProtocolError

__all__ = ["TASK_VARIABLE", "Task", "SideTask", "task_from"]

TASK_VARIABLE = "PYTEST_ROOFLINE_AB_TASK"
Task = Literal["once", "programs", "verdicts"]
# The variables of protocol 4 and older, one a task: the value each held
_OLDER: dict[str, str] = {"once": "PYTEST_ROOFLINE_AB_MODE", "programs": "PYTEST_ROOFLINE_PROGRAMS_PASS",
                          "verdicts": "PYTEST_ROOFLINE_AB_VERDICTS"}


@dataclass(frozen=True)
class SideTask:
    task: Task
    path: str = ""  # the file the programs pass writes, or the verdicts are read from ("" for once)

    def environment(self) -> dict[str, str]:
        """The variables that start a side's process on this task: ours, and the one an older plugin reads."""
        value = json.dumps({"version": VERSION, "task": self.task, "path": self.path})
        return {TASK_VARIABLE: value, _OLDER[self.task]: self.path or self.task}


def task_from(environ: Mapping[str, str]) -> SideTask | None:
    """The task this process was started for (None: a plain run, or a serving process)."""
    raw = environ.get(TASK_VARIABLE)
    if not raw:
        return _older(environ)
    try:
        data = json.loads(raw)
        version, task, path = data["version"], data["task"], data.get("path", "")
    except (ValueError, TypeError, KeyError):
        raise ProtocolError(f"{TASK_VARIABLE}={raw!r} is not a task of ab's driver") from None
    if version != VERSION or task not in get_args(Task) or not isinstance(path, str):
        raise ProtocolError(f"ab's driver asks this side for {task!r} in protocol version {version}; this side's "
                            f"pytest-roofline speaks version {VERSION}")
    return SideTask(task, path)


def _older(environ: Mapping[str, str]) -> SideTask | None:
    """A task set the older way (a driver of protocol 4 or older)."""
    if environ.get(_OLDER["once"]) == "once":
        return SideTask("once")
    tasks: tuple[Task, ...] = ("programs", "verdicts")
    for task in tasks:
        if path := environ.get(_OLDER[task]):
            return SideTask(task, path)
    return None

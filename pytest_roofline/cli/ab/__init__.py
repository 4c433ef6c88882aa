"""``pytest-roofline ab``, the driver's side, one role a file: ``driver`` (the steps: the base checked out, the
programs pass, the rounds, the comparison), ``job`` (what the steps share, and the schedule interface), ``programs``
(the programs pass), ``pairs`` and ``fresh`` (the two schedules), ``served`` (the driver's end of a serving
process), ``sides`` (how a side's process is started) and ``worktree`` (the base's checkout). The other end is
``plugin/ab/``; the messages between them are :mod:`pytest_roofline.ab.protocol`."""

"""``python -m pytest_roofline``: the same as the ``pytest-roofline`` command."""

from __future__ import annotations

import sys

from .cli.main import main

sys.exit(main())

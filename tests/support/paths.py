"""Where the repository's parts are, for tests in any folder of tests/."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent  # on sys.path (tox.ini's pythonpath): what a pytest a test starts needs
ROOT = SUPPORT.parent.parent  # the repository
DATA = ROOT / "tests" / "data"  # real profiles and recorded outputs
PACKAGE = ROOT / "pytest_roofline"

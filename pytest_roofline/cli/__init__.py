"""The ``pytest-roofline`` command (also ``python -m pytest_roofline``): tools that work on files, with no test
run. Imports no pytest; JAX only where a command needs XLA (reading a profile's embedded HLO)."""

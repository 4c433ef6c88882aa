"""Runs over time: report files read back, series per kernel, baselines, paired revisions (ab), the programs
pass's fingerprints, compile times. Pure (no JAX, no pytest); the current run's records are in
:mod:`pytest_roofline.records`."""

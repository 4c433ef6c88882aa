"""Traces and runs: reading a profile into each run's device time, per process, idle and exposed time."""

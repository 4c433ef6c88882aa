"""Traces and runs: reading a profile into each run's device time, per process and idle time. Imports
nothing of analysis/ but program/."""

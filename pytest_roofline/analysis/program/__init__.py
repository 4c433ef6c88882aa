"""A compiled program's counts, read from its optimized HLO: per op, per program, library and Pallas calls, memory.
The first of analysis/'s folders: imports none of the others."""

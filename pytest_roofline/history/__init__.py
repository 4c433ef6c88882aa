"""A run's records and runs over time: the typed record of each kernel (what every report reads, and what a
report file is read back into), reading reports, series per kernel, regression detection, baselines. Pure (no
JAX, no pytest)."""

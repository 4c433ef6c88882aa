"""Runs over time: reading reports, series per kernel, regression detection, baselines. Pure (no JAX, no
pytest); works on the JSON reports the plugin writes."""

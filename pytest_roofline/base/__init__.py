"""Shared by every layer: the typed kinds, errors, files, units, quantiles, labels, call checks and dependency
floors."""

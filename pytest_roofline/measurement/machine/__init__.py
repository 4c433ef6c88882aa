"""The machine under the measurement (imports JAX): device detection, calibration and reference kernels, cache eviction,
clocks."""

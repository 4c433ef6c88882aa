"""Hardware ceilings: the table (``hardware.yaml``) and overrides, peak selection, the CPU's description and
the calibration cache. No JAX (calibration kernels and device detection are in :mod:`pytest_roofline.measurement`),
no pytest."""

"""Measuring kernels: the only folder that imports JAX (compile, profiler session, timing, calibration
kernels, hardware detection, the ``measure()`` pipeline). This file imports nothing, so that pure modules
here (:mod:`.options`) can be used without JAX."""

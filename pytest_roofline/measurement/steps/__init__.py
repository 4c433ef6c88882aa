"""The steps of a measurement after the compile (:func:`~pytest_roofline.measurement.pipeline.measure_call` reads as
them), a module each: :mod:`.planning`, :mod:`.timed_runs`, :mod:`.assembly`."""

"""What the two sides of ``pytest-roofline ab`` and its driver share: the messages between them
(:mod:`~pytest_roofline.ab.protocol`, versioned) and the programs pass that tells which tests compile the same
programs on both revisions (:mod:`~pytest_roofline.ab.same_programs`). Pure (no JAX, no pytest): the driver is in
``cli/ab/``, a side's serving process in ``plugin/ab/``, the paired verdicts in ``history/paired.py``."""

"""``--roofline-survey``: every jitted program the tests run (:mod:`.watcher`)."""

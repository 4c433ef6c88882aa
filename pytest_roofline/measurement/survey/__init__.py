"""The survey of every jitted program a test runs: a profiler session around each test (:mod:`.watch`) and the
programs read from it (:mod:`.sightings`)."""

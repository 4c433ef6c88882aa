"""pytest-xdist: which device each worker sees and how workers share a CPU (:mod:`.workers`, pure), and the
controller's side, which takes in each worker's records test by test (:mod:`.controller`)."""

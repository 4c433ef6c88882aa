"""Loops of unknown trip count counted by the iterations that ran (pytest_roofline.analysis.program.trips_ran):
constructed HLO and event counts for nesting (the outer loop first, then the one inside it, and a known loop
around them), and the counts charged that many times. The real trace of a real loop is in tests/measurement/test_measure.py
and tests/frameworks/test_diffrax.py. Pure."""

from __future__ import annotations

from pytest_roofline.analysis.program.counts import hlo_counts
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.program.trips_ran import trips_ran, with_trips_ran

# (Names are unique in a module, as XLA writes them.) A known loop of 2 trips around an unknown loop, around another unknown loop; each body doubles an f32[1024].
HLO = """HloModule nested

inner_body {
  p = f32[1024]{0} parameter(0)
  c = f32[] constant(2)
  b = f32[1024]{0} broadcast(c), dimensions={}
  ROOT m = f32[1024]{0} multiply(p, b)
}

inner_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

middle_body {
  p = f32[1024]{0} parameter(0)
  e = f32[1024]{0} exponential(p)
  ROOT w_inner = f32[1024]{0} while(e), condition=inner_cond, body=inner_body
}

middle_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

outer_body {
  p = f32[1024]{0} parameter(0)
  ROOT w_middle = f32[1024]{0} while(p), condition=middle_cond, body=middle_body
}

outer_cond {
  p = f32[1024]{0} parameter(0)
  ROOT t = pred[] constant(true)
}

ENTRY main {
  x = f32[1024]{0} parameter(0)
  ROOT w_outer = f32[1024]{0} while(x), condition=outer_cond, body=outer_body, backend_config={"known_trip_count":{"n":"2"}}
}
"""


def test_nested_loops_are_read_outermost_first_and_charged_as_they_ran() -> None:
    module = parse_hlo(HLO)
    middle = module.computations["outer_body"].root.name
    inner = module.computations["middle_body"].root.name
    # Per run: the known loop runs the middle loop twice; the middle loop ran 3 iterations each time, the inner 5.
    events = {"e": 2 * 3, "m": 2 * 3 * 5}
    assert trips_ran(module, events) == {middle: 3}  # the inner loop waits for the one around it
    ran, trips = with_trips_ran(module, events)
    assert trips == {middle: 3, inner: 5}
    before, after = hlo_counts(module), hlo_counts(ran)
    assert before.lower_bound and not after.lower_bound
    assert after.transcendentals == 2 * 3 * 1024 == 6 * before.transcendentals / 2
    assert after.flops == 2 * 3 * 5 * 1024
    assert sorted(after.loops) == sorted(["w_outer: trip count 2", f"{middle}: 3 iterations ran (from the trace)",
                                          f"{inner}: 5 iterations ran (from the trace)"])


def test_a_loop_whose_body_shows_no_event_stays_unknown() -> None:
    module = parse_hlo(HLO)
    ran, trips = with_trips_ran(module, {})
    assert trips == {} and hlo_counts(ran).lower_bound

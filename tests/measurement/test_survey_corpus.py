"""The survey's reader on real GPU profiles: the recorded H200 programs of tests/data/corpus (their provenance is in
the README there), each read from its profile as ``--roofline-survey`` reads a test's (JAX's trace reader, the HLO
the profile embeds, the runtime's bookkeeping left out), found once with its runs and counted as the live
measurement counts it: loops and branches as they ran."""

from __future__ import annotations

import gzip

import pytest
from corpus import Recording, recordings, replay

from pytest_roofline.measurement.survey.sightings import Programs, read_sightings

pytest.importorskip("jax")

# The quick loop reads four (a conditional, a data-dependent loop, a cond inside a loop, a library's program); the
# full run every recording.
QUICK = {"cond_cheap", "while_power", "cond_in_loop", "numpyro_nuts"}
RECORDED = [pytest.param(r, marks=() if r.name in QUICK else pytest.mark.slow, id=r.id)
            for r in recordings() if r.has("nocb")]


@pytest.mark.parametrize("recording", RECORDED)
def test_the_survey_counts_a_recorded_gpu_program_as_the_live_path_does(recording: Recording) -> None:
    variant = recording.entry["variants"]["nocb"]  # every kernel an event of its own, as a test's own runs are
    data = gzip.decompress((recording.folder / variant["xplane"]).read_bytes())
    found, problems, _ = read_sightings(data, "corpus", None, Programs())
    assert problems == []
    (seen,) = [s for s in found if s.module == variant["module"]]
    assert len(seen.per_run_s) == int(recording.entry["runs"]) and not seen.small
    assert seen.platform == "gpu"
    assert seen.flops == pytest.approx(replay(recording).as_ran.counts.flops, rel=0.01)

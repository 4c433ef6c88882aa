"""The recorded GPU programs (tests/data/corpus; bench/record_corpus.py; provenance in the README there) replayed on
every run: each is read, matched and counted as a live GPU measurement reads and counts its runs
(tests/support/corpus.py), and held to its analytic counts, so every GPU behaviour once seen stays tested on a CPU.

What the recordings showed, and each test holds: XLA:GPU runs small programs as command buffers (CUDA graphs) whose
kernels the timed runs' trace hides, so loop trips are read from the second pass (the program with command buffers
off), never counted once; a library call (a cuSOLVER LU) launches several kernels an execution, each an event of its
op, so loop trips are read from the body's own ops; XLA:GPU turns a ``lax.cond`` inside a loop into a select, so both
of its branches ran every trip (what ran, and what is counted); a matrix-vector product there is a reduction fusion
(vector work), not a matmul. ``pytest-roofline analyze`` counts the same recordings as the live path does."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from corpus import Recording, counted, recordings, replay

from pytest_roofline.analysis.model.recorded_profile import summarize_program
from pytest_roofline.analysis.program.counts import Counts
from pytest_roofline.analysis.program.hlo_reader import HloModule
from pytest_roofline.analysis.runs.trace_events import ProgramKey

pytest.importorskip("jax")

N = 1024
ALL = recordings()


def _conditionals(module: HloModule) -> int:
    return sum(i.opcode == "conditional" for c in module.computations.values() for i in c.instructions)


def _trips(counts: Counts) -> list[int]:
    """The iterations of each loop counted from the trace, as its line says."""
    return sorted(int(loop.split(": ")[1].split()[0]) for loop in counts.loops if "from the trace" in loop)


def _matrix(counts: Counts) -> float:
    return sum(counts.matrix_flops.values())


def _lu(n: int) -> float:
    """An LU factorisation and its two triangular solves (one right-hand side), and the matvec beside it."""
    return 2 / 3 * n**3 + 2 * n * n + 2 * n * n


def _cond_in_loop(c: Counts, r: Recording) -> bool:
    converted = _conditionals(r.module()) == 0  # XLA:GPU made the cond a select: both branches ran every trip
    matvecs = 20 if converted else 2
    return bool(c.flops == pytest.approx(matvecs * 2 * N * N, rel=0.02))


def _products(trips: int, r: Recording, n: int, every: int = 10) -> float:
    """A CG's matrix-vector products: one a step, and the stabilising one every tenth step, or every step where the
    compiled program has no conditional left (XLA:GPU made it a select: both ran)."""
    extra = trips if _conditionals(r.module()) == 0 else trips // every
    return (trips + extra) * 2.0 * n * n


# program -> what its counts must hold (a recording of another program fails: add its check here)
CHECKS: dict[str, Callable[[Counts, Recording], bool]] = {
    # Branch 0 is lax.cond's false_fun, as on the CPU (XLA:GPU writes the cond with its true branch first)
    "cond_cheap": lambda c, r: (c.flops == pytest.approx(N * N, rel=0.01) and _matrix(c) == 0
                                and c.branches.lines[0].endswith(": ran branch 0 1 times per run (from the trace)")),
    "cond_dear": lambda c, r: (_matrix(c) == pytest.approx(2 * 2.0 * N**3, rel=0.01)
                               and c.transcendentals == pytest.approx(N * N, rel=0.01)
                               and c.branches.lines[0].endswith(": ran branch 1 1 times per run (from the trace)")),
    "cond_in_loop": _cond_in_loop,
    "while_power": lambda c, r: (_trips(c) == [r.facts["trips"]]
                                 and c.flops == pytest.approx(r.facts["trips"] * 2.0 * N * N, rel=0.02)),
    "scan_matmuls": lambda c, r: (_matrix(c) == pytest.approx(8 * 2.0 * 256 * 512 * 512, rel=0.01)
                                  and c.transcendentals == pytest.approx(8 * 256 * 512, rel=0.01)),
    "cg_loop": lambda c, r: (_trips(c) == [r.facts["trips"]]
                             and c.flops == pytest.approx(_products(r.facts["trips"], r, N), rel=0.05)),
    "lu_newton": lambda c, r: (_trips(c) == [r.facts["trips"]]
                               and c.flops == pytest.approx(r.facts["trips"] * _lu(256), rel=0.1)),
    "pallas_scale": lambda c, r: (c.lower_bound and any("Pallas" in u or "triton" in u.lower() for u in c.uncounted)),
    "many_small": lambda c, r: c.transcendentals == pytest.approx(6 * 64 * 256, rel=0.01),
    "two_jits": lambda c, r: (_matrix(c) == pytest.approx(2 * 2.0 * 512**3, rel=0.01)
                              and c.transcendentals == pytest.approx(512 * 512, rel=0.01)),
    "diffrax_tsit5": lambda c, r: (_trips(c) == sorted([r.facts["trips"], r.facts["stages"]])
                                   and _matrix(c) == pytest.approx(r.entry["analytic"]["matrix_flops"], rel=0.05)),
    "lineax_cg": lambda c, r: (_trips(c) == [r.facts["trips"]]
                               and c.flops == pytest.approx(_products(r.facts["trips"], r, 512), rel=0.05)),
    # Newton's Jacobian comes from jax.jacfwd: 128 products of a 128^2 matvec, a 128^3 matmul a step, then its LU.
    "optimistix_newton": lambda c, r: (_trips(c) == [r.facts["trips"]]
                                       and _matrix(c) == pytest.approx(r.facts["trips"] * 2.0 * 128**3, rel=0.01)
                                       and c.flops == pytest.approx(r.facts["trips"] * (2.0 * 128**3 + _lu(128)),
                                                                    rel=0.1)),
    "numpyro_nuts": lambda c, r: (not c.lower_bound
                                  and c.flops == pytest.approx(r.entry["analytic"]["matrix_flops"], rel=0.1)),
}


def _described(c: Counts) -> str:
    return (f"flops {c.flops:.6g}, matrix {dict(c.matrix_flops)}, transcendentals "
            f"{c.transcendentals:.6g}, loops {c.loops}, conditionals {c.branches.lines}, uncounted "
            f"{c.uncounted}")


def test_the_corpus_holds_a_recorded_gpu_with_its_provenance() -> None:
    gpus = {r.folder.name: r.provenance for r in ALL if r.provenance["platform"] == "gpu"}
    assert gpus, "no GPU recording in tests/data/corpus"
    for provenance in gpus.values():
        assert provenance["device_kind"] and provenance["jax"] and "nvidia_smi" in provenance


@pytest.mark.parametrize("recording", ALL, ids=lambda r: r.id)
def test_a_recorded_program_counts_what_ran_as_a_live_measurement_does(recording: Recording) -> None:
    found = replay(recording)
    assert CHECKS[recording.name](found.as_ran.counts, recording), _described(found.as_ran.counts)
    assert not any("unknown" in loop for loop in found.as_ran.counts.loops), found.as_ran.counts.loops


@pytest.mark.parametrize("recording", [r for r in ALL if r.has("nocb")], ids=lambda r: r.id)
def test_where_command_buffers_hid_the_kernels_the_second_pass_tells_what_ran(recording: Recording) -> None:
    """The default recording of a program XLA ran as command buffers shows no per-kernel event inside its loops; its
    loops are read from the recording with command buffers off (the live second pass), whose HLO is the same."""
    found = replay(recording)
    if not found.second_pass:
        pytest.skip("its kernels were not hidden: the timed runs' trace tells what ran")
    assert recording.module("default").name == recording.module("nocb").name
    hidden = counted(recording, "default")
    loops = [i for c in recording.module().computations.values() for i in c.instructions if i.opcode == "while"
             and i.known_trip_count is None]
    # What the hidden trace alone tells: the trips of loops whose kernels it still shows (those outside the command
    # buffers), the same as the second pass reads; of the others nothing, and the counts say they are a lower bound.
    told = found.as_ran.control.trips
    assert all(told[name] == trips for name, trips in hidden.control.trips.items())
    if any(loop.name not in hidden.control.trips for loop in loops):
        assert hidden.counts.lower_bound


@pytest.mark.parametrize("recording", [r for r in ALL if r.has("nocb")], ids=lambda r: r.id)
def test_analyze_counts_a_recorded_profile_as_the_live_path_does(recording: Recording) -> None:
    """``pytest-roofline analyze`` on the profile with every kernel on its own (command buffers off) counts the same
    loops and branches as the replay of the live path."""
    key = ProgramKey(recording.entry["variants"]["nocb"]["module"], recording.runs("nocb").program_id)
    index = recording.index("nocb")
    summary = summarize_program(index.events, "gpu", key, recording.module("nocb"), None)
    live = replay(recording).as_ran.counts
    assert summary.counts is not None
    assert summary.counts.loops == live.loops and summary.counts.branches.lines == live.branches.lines
    # A profile carries no cost analysis: analyze counts the HLO alone, the live path the compiler's totals adjusted
    # to what ran (numpyro's step: 467 FLOP apart in 3.42 M)
    assert summary.counts.flops == pytest.approx(live.flops, rel=0.01)

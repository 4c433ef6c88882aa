"""The paired statistics of ``pytest-roofline ab`` on made-up ratios: the ABBA schedule, the median and its
distribution-free interval against the binomial formula, the verdicts and when they are settled, kernels on one
side only or failing on one, and which max_drop applies; and the table, JSON and HTML made from them. Pure: no
git, no pytest process, no JAX."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest
from fakes import HIDDEN, comparison, fake_result, obs, record_of

from pytest_roofline.analysis.model.per_op import OpRow
from pytest_roofline.history.paired import (
    DEFAULT_MAX_DROP,
    MIN_ROUNDS,
    KernelRounds,
    Observation,
    RoundReport,
    collect,
    judge_kernel,
    judge_pairs,
    one_side,
    same_program,
    schedule,
    settled,
    settled_tests,
)
from pytest_roofline.records.kernel_record import KernelRecord, Unmeasured
from pytest_roofline.report.ab_report import ab_document, ab_html, ab_lines
from pytest_roofline.result.recorded_result import RecordedResult, ops_note

KEY = ("t.py::test_k", "k")


def _kernel(base: list[float], head: list[float], **kw: object) -> KernelRounds:
    return KernelRounds(KEY[0], KEY[1], tuple(obs(u) for u in base), tuple(obs(u) for u in head), **kw)  # type: ignore[arg-type]


def _paired(ratios: list[float], base: float = 0.5) -> KernelRounds:
    return _kernel([base] * len(ratios), [base * r for r in ratios])


def test_schedule_alternates_abba() -> None:
    assert schedule(4) == [("base", "head"), ("head", "base"), ("base", "head"), ("head", "base")]
    order = schedule(10)
    assert sum(first == "base" for first, _ in order) == 5  # each side goes first in half of the rounds
    assert all({a, b} == {"base", "head"} for a, b in order)


def test_ratio_is_head_over_base_round_by_round() -> None:
    kernel = _kernel([0.5, 0.4, 0.8], [0.25, 0.4, 0.4])
    assert kernel.ratios == pytest.approx((0.5, 1.0, 0.5))


def test_a_clear_drop_is_a_settled_regression_after_six_rounds() -> None:
    ratios = [0.49, 0.52, 0.50, 0.51, 0.48, 0.50]
    found = judge_kernel(_paired(ratios))
    assert found.verdict == "regression" and found.settled
    assert found.median == pytest.approx(0.50)
    # Six pairs: the interval is the full range (it covers 1 - 2/2**6 = 96.9%)
    assert (found.low, found.high) == pytest.approx((0.48, 0.52))
    assert found.max_drop == DEFAULT_MAX_DROP


def test_a_drop_measured_while_contended_cannot_be_judged() -> None:
    """Made-up rounds: the same clear drop, two of the head's measurements made while other processes held the CPUs
    (their threads waited 38% and 41% of the time): not a regression, said with the waiting share."""
    ratios = [0.49, 0.52, 0.50, 0.51, 0.48, 0.50]
    kernel = _paired(ratios)
    busy = tuple(replace(o, waiting=w) if o is not None and w else o
                 for o, w in zip(kernel.head, (0.38, 0.41, 0, 0, 0, 0), strict=True))
    found = judge_kernel(replace(kernel, head=busy))
    assert found.verdict == "unchanged" and not found.settled and found.undecided
    assert found.contended == ("2 of 12 measurements were made while contended (at most, the kernel's threads "
                               "waited for a CPU held by another process during 41% of the time they were ready to "
                               "run); their rounds are left out")
    assert found.ratios == pytest.approx(ratios[2:])  # four uncontended rounds: fewer than six, no verdict
    [row] = [line for line in ab_lines(comparison([replace(kernel, head=busy)])) if line.startswith("t.py::test_k")]
    assert "cannot judge: contended (2 of 12 measurements" in row and "REGRESSION" not in row
    assert comparison([replace(kernel, head=busy)]).exit_status == 0


def test_rounds_measured_while_contended_are_left_out_and_the_rest_judge() -> None:
    """Made-up rounds: a clear drop over twelve rounds, one head and one base measurement made while other
    processes held the CPUs. A contended base would hide a drop (a slower base raises the ratio: 0.95 here), a
    contended head would feign one; both rounds are left out and the ten others settle the regression."""
    ratios = [0.49, 0.95, 0.50, 0.51, 0.48, 0.50, 0.52, 0.49, 0.50, 0.51, 0.20, 0.50]
    kernel = _paired(ratios)
    waits = (0, 0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.11, 0)
    base, head = (tuple(replace(o, waiting=w) if o is not None and w else o for o, w in zip(side, ws, strict=True))
                  for side, ws in zip((kernel.base, kernel.head), waits, strict=True))
    found = judge_kernel(replace(kernel, base=base, head=head))
    assert found.ratios == pytest.approx([r for i, r in enumerate(ratios) if i not in (1, 10)])
    assert found.verdict == "regression" and found.settled and found.high is not None and found.high < 0.6
    assert found.contended.startswith("2 of 24 measurements were made while contended (at most, the kernel's "
                                      "threads waited for a CPU held by another process during 30%")
    lines = ab_lines(comparison([replace(kernel, base=base, head=head)]))
    assert any(line.startswith("t.py::test_k") and "REGRESSION" in line for line in lines)
    assert any("their rounds are left out; the verdict stands on the uncontended rounds" in line for line in lines)


def test_interval_of_nine_rounds_follows_the_binomial_formula() -> None:
    # k is the largest with P(Binomial(9, 1/2) < k) <= 2.5%: P(X <= 1) = 10/512 = 1.95%, P(X <= 2) = 46/512 = 9.0%
    assert sum(math.comb(9, i) for i in range(2)) / 2**9 <= 0.025 < sum(math.comb(9, i) for i in range(3)) / 2**9
    ratios = [0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.82, 0.84, 0.86]
    found = judge_kernel(_paired(list(reversed(ratios))))
    assert (found.low, found.high) == pytest.approx((0.72, 0.84))  # 2nd and 8th of the sorted ratios
    assert found.verdict == "regression"


def test_fewer_than_six_rounds_call_nothing() -> None:
    found = judge_kernel(_paired([0.5] * (MIN_ROUNDS - 1)))
    assert found.verdict == "unchanged" and not found.settled
    assert found.low is None and found.median == pytest.approx(0.5)


def test_within_the_band_is_a_settled_unchanged() -> None:
    found = judge_kernel(_paired([0.99, 1.01, 1.02, 0.98, 1.0, 1.03]))
    assert found.verdict == "unchanged" and found.settled


def test_one_noisy_round_leaves_unchanged_unsettled() -> None:
    found = judge_kernel(_paired([0.99, 1.01, 1.02, 0.70, 1.0, 1.03]))
    assert found.verdict == "unchanged" and not found.settled  # the interval reaches 0.70, below 1 - 0.05


def test_improvement_above_the_band() -> None:
    found = judge_kernel(_paired([1.3, 1.4, 1.35, 1.28, 1.31, 1.33]))
    assert found.verdict == "improvement" and found.settled


def test_a_drop_inside_max_drop_is_not_a_regression() -> None:
    ratios = [0.90, 0.91, 0.92, 0.90, 0.91, 0.92]
    assert judge_kernel(_paired(ratios)).verdict == "regression"  # below 0.95 with the default 5%
    assert judge_kernel(_paired(ratios), max_drop=0.2).verdict == "unchanged"


def test_max_drop_from_the_head_setting_then_the_option() -> None:
    base = tuple(obs(0.5) for _ in range(6))
    head = tuple(obs(0.45, 0.2, "max_drop in the marker of t.py::test_k") for _ in range(6))
    kernel = KernelRounds(KEY[0], KEY[1], base, head)
    found = judge_kernel(kernel)
    assert (found.max_drop, found.max_drop_origin) == (0.2, "max_drop in the marker of t.py::test_k")
    assert found.verdict == "unchanged"
    forced = judge_kernel(kernel, max_drop=0.05)
    assert forced.max_drop_origin == "--max-drop=0.05" and forced.verdict == "regression"


def test_work_and_time_ratios() -> None:
    base = tuple(obs(0.5, nbytes=1e6) for _ in range(6))
    head = tuple(obs(0.5, nbytes=2e6) for _ in range(6))  # twice the counted work, same efficiency
    found = judge_kernel(KernelRounds(KEY[0], KEY[1], base, head))
    assert found.verdict == "unchanged"
    assert found.bytes_ratio == pytest.approx(2.0) and found.time_ratio == pytest.approx(2.0)
    assert found.flops_ratio is None  # no FLOPs on either side


def _report(*kernels: tuple[str, float], unmeasured: tuple[tuple[str, str], ...] = ()) -> RoundReport:
    records = [record_of("t.py::test_k", label, fake_result(u), "pass") for label, u in kernels]
    return RoundReport.of(records, [Unmeasured("t.py::test_k", label, error) for label, error in unmeasured])


def test_collect_names_added_removed_and_failing_kernels() -> None:
    base = _report(("same", 0.5), ("gone", 0.5), ("broken", 0.5))
    head = _report(("same", 0.5), ("new", 0.5), unmeasured=(("broken", "XlaRuntimeError: out of memory"),))
    kernels = {k.label: judge_kernel(k) for k in collect([(base, head)] * 6)}
    assert {label: k.verdict for label, k in kernels.items()} == {
        "broken": "error", "gone": "removed", "new": "added", "same": "unchanged"}
    assert kernels["broken"].error == "head: XlaRuntimeError: out of memory"
    assert kernels["same"].ratios == pytest.approx((1.0,) * 6)
    assert settled(list(kernels.values()))  # added, removed and failing kernels do not hold the rounds back


def test_observation_keeps_the_records_max_drop() -> None:
    record = record_of("t.py::test_k", "k", fake_result(0.4), "pass", max_drop=0.3,
                       max_drop_origin="--roofline-max-drop=0.3 on the command line")
    again = KernelRecord.from_dict(record.to_dict())
    assert (again.max_drop, again.max_drop_origin) == (0.3, "--roofline-max-drop=0.3 on the command line")
    found = Observation.of(again)
    assert found.max_drop == 0.3 and found.utilization == pytest.approx(0.4)
    assert KernelRecord.from_dict(record_of("a", "b", fake_result(0.4), "pass").to_dict()).max_drop is None


def test_table_json_and_html_of_a_comparison() -> None:
    slow = KernelRounds("t.py::test_a", "a<b>", tuple(obs(0.5) for _ in range(6)),
                        tuple(obs(0.25, nbytes=2e6) for _ in range(6)))
    same = KernelRounds("t.py::test_b", "b", tuple(obs(0.5) for _ in range(6)), tuple(obs(0.5) for _ in range(6)))
    c = comparison([same, slow])
    lines = ab_lines(c)
    assert lines[0] == "pytest-roofline ab: base origin/main (aaaaaaaaaaaa) vs head bbbbbbbbbbbb + uncommitted " \
                       "changes on fake CPU"
    rows = [line for line in lines if line.startswith("t.py::")]
    assert rows[0].startswith("t.py::test_a [a<b>]") and "0.50 [0.50, 0.50]" in rows[0]  # regressions first
    assert rows[0].endswith("REGRESSION (below 0.95)") and rows[1].endswith("unchanged")
    assert any("the head counts other work than the base (bytes 2.00x)" in line for line in lines)
    assert lines[-1] == "1 kernel regressed" and c.exit_status == 1
    document = ab_document(c)
    assert document["exit_status"] == 1 and document["order"] == "ABBA" and document["rounds"] == 6
    entry = next(k for k in document["kernels"] if k["label"] == "a<b>")
    assert entry["verdict"] == "regression" and entry["interval"] == [0.5, 0.5] and len(entry["ratios"]) == 6
    assert entry["max_drop_origin"] == "the default of ab (0.05)"
    page = ab_html(c)
    assert "a&lt;b&gt;" in page and "<b>REGRESSION (below 0.95)</b>" in page  # names escaped


def test_nothing_regressed_exits_zero() -> None:
    same = KernelRounds("t.py::test_b", "b", tuple(obs(0.5) for _ in range(6)), tuple(obs(0.5) for _ in range(6)))
    c = comparison([same])
    assert c.exit_status == 0 and ab_lines(c)[-1] == "no kernel regressed"


def _pair(*ratios: float) -> list[tuple[RoundReport, RoundReport]]:
    """One pair of processes' rounds of the kernel "k" (base 0.5, head 0.5 x ratio)."""
    return [(_report(("k", 0.5)), _report(("k", 0.5 * r))) for r in ratios]


def test_a_pairs_own_offset_is_one_unit_not_twelve() -> None:
    """Twelve rounds of one pair of processes at 0.85 call a regression when each round counts; as one pair's
    rounds they are a single unit of the interval, and one unit calls nothing."""
    rounds = _pair(*[0.85] * 12)
    assert judge_kernel(collect(rounds)[0]).verdict == "regression"
    (found,) = judge_pairs([rounds])
    assert found.verdict == "unchanged" and not found.settled and found.low is None
    assert found.ratios == pytest.approx((0.85,))


def test_six_pairs_are_six_units_each_the_geometric_mean_of_its_rounds() -> None:
    pairs = [_pair(0.4, 0.625)] * 5 + [_pair(0.5, 0.5)]  # sqrt(0.4 * 0.625) = 0.5
    (found,) = judge_pairs(pairs)
    assert found.ratios == pytest.approx((0.5,) * 6)
    assert found.verdict == "regression" and found.settled and found.median == pytest.approx(0.5)
    assert found.base_utilization == pytest.approx(0.5)  # the medians are over every round
    assert found.head_utilization == pytest.approx(statistics.median([0.2, 0.3125] * 5 + [0.25, 0.25]))
    (same,) = judge_pairs([_pair(0.5, 2.0)] * 6)  # a round at half and one at double: unchanged on average
    assert same.ratios == pytest.approx((1.0,) * 6) and same.verdict == "unchanged" and same.settled


def test_a_pair_that_did_not_measure_the_kernel_gives_no_unit() -> None:
    missing = [(_report(("k", 0.5)), _report(unmeasured=(("k", "boom"),)))] * 2
    kernels = judge_pairs([_pair(1.0, 1.0)] * 5 + [missing])
    assert kernels[0].verdict == "error" and kernels[0].ratios == pytest.approx((1.0,) * 5)
    (found,) = judge_pairs([_pair(1.0, 1.0)] * 5 + [[(_report(("k", 0.5)), _report())] * 2])
    assert found.ratios == pytest.approx((1.0,) * 5) and found.low is None  # five units: no interval yet


def _op(name: str, ms: float, opcode: str = "fusion") -> OpRow:
    """A made-up op row: 8 MiB moved (roofline time 0.84 ms at 10 GB/s), measured ``ms`` per run."""
    nbytes = 8 * 2**20
    return OpRow(name, opcode, "kLoop" if opcode == "fusion" else None, "main", "f32[1024,1024]",
                 ("f32[1024,1024]",), dtype="vector", executions=1, flops=0.0, transcendentals=0.0, bytes=nbytes,
                 collective_bytes=0.0, compute_time_s=0.0, memory_time_s=nbytes / 1e10, comms_time_s=0.0,
                 measured_s=ms * 1e-3, events_per_run=1.0,
                 family="copy" if opcode == "copy" else "XLA fusion")


def _with_ops(utilization: float, *ops: OpRow, gaps_ms: float = 0.0) -> Observation:
    return Observation(utilization, sum(o.measured_s or 0.0 for o in ops) + gaps_ms * 1e-3, 0.0, 1e6, ops=ops)


def test_a_regression_names_the_op_the_head_added_with_its_share() -> None:
    """Base: one fusion of 4 ms; head: the same fusion renumbered, a new copy of 4 ms and 0.2 ms of gaps between
    ops (rounds jitter the op times; the diff takes each op's median over the rounds)."""
    base = tuple(_with_ops(0.5, _op("fusion.1", 4.0 + 0.1 * (i % 3))) for i in range(6))
    head = tuple(_with_ops(0.25, _op("fusion.7", 4.1), _op("copy.3", 4.0 - 0.1 * (i % 2), opcode="copy"),
                           gaps_ms=0.2) for i in range(6))
    found = judge_kernel(KernelRounds("t.py::test_a", "a", base, head))
    assert found.verdict == "regression" and found.ops_diff is not None
    added = found.ops_diff.changes[0]
    assert (added.kind, added.name) == ("added", "copy.3") and added.head_s == pytest.approx(3.95e-3)
    assert found.ops_diff.share(added) == pytest.approx(3.95 / 4.15)
    assert found.ops_diff.between_ops_s == pytest.approx(0.2e-3)
    c = comparison([KernelRounds("t.py::test_a", "a", base, head)])
    lines = ab_lines(c)
    start = lines.index("t.py::test_a [a]: op by op:")
    assert lines[start + 1].startswith("  the head's program: 1 op added, 1 the same; device time 4.1 ms -> 8.25 ms")
    assert lines[start + 2] == "    census: device ops per run 1 -> 2: +1 copy"
    start += 1
    assert lines[start + 2].startswith(
        "    added copy.3, copy f32[1024,1024] -> f32[1024,1024]: 3.95 ms, 48% of the run"
    )
    assert lines[start + 2].endswith("; 95% of the change")
    assert lines[start + 3] == "    between ops (gaps, launches): +200 us; 5% of the change"
    entry = ab_document(c)["kernels"][0]
    assert [(ch["kind"], ch["name"]) for ch in entry["ops_diff"]["changes"]] == [("added", "copy.3")]
    assert "<h3>t.py::test_a [a]: op by op</h3>" in ab_html(c) and "copy.3" in ab_html(c)


def test_an_unchanged_kernel_whose_program_changed_says_so_in_one_line() -> None:
    base = tuple(_with_ops(0.5, _op("fusion.1", 4.0)) for _ in range(6))
    head = tuple(_with_ops(0.5, _op("fusion.2", 2.0), _op("fusion.3", 2.0, opcode="copy")) for _ in range(6))
    c = comparison([KernelRounds("t.py::test_b", "b", base, head)])
    assert c.kernels[0].verdict == "unchanged"
    notes = [line for line in ab_lines(c) if line.startswith("t.py::test_b [b]:")]
    assert notes == ["t.py::test_b [b]: the head's program: 1 op added, 1 the same; device ops per run 1 -> 2: "
                     "+1 copy, at no cost in time (verdict unchanged)"]
    # the same change where the noise leaves the verdict open claims no cost either way
    noisy = comparison([KernelRounds("t.py::test_b", "b", base, tuple(_with_ops(0.5 * r, _op("fusion.2", 2.0),
                                                                                  _op("fusion.3", 2.0, "copy"))
                                                                         for r in (1, 1, 0.7, 1, 0.7, 1)))])
    assert noisy.kernels[0].undecided
    (line,) = [line for line in ab_lines(noisy) if line.startswith("t.py::test_b [b]:")]
    assert line.endswith("+1 copy, whether it costs time the noise hides (undecided)")


def test_no_op_times_on_a_side_no_diff() -> None:
    found = judge_kernel(_paired([0.5] * 6))
    assert found.ops_diff is None


# How a GPU result reads when XLA ran its kernels as command buffers (the note run_times writes for a trace whose
# kernels carry no hlo_op, or a cuGraphLaunch), and when a second pass with command buffers off timed its ops.
def test_ab_says_why_a_regression_has_no_op_lines_under_command_buffers() -> None:
    base = tuple(Observation(0.5, 4e-3, 0.0, 1e6, ops=(replace(_op("fusion.1", 4.0), measured_s=None),),
                             ops_note=f"not shown: {HIDDEN}") for _ in range(6))
    head = tuple(replace(o, utilization=0.25, device_time_s=8e-3) for o in base)
    lines = ab_lines(comparison([KernelRounds("t.py::test_a", "a", base, head)]))
    assert f"t.py::test_a [a]: op by op: not shown: {HIDDEN}" in lines


def test_ab_names_the_pass_its_op_times_come_from() -> None:
    second = "times from a second profiled pass with command buffers off (...)"
    base = tuple(replace(_with_ops(0.5, _op("fusion.1", 4.0)), ops_note=second) for _ in range(6))
    head = tuple(replace(_with_ops(0.25, _op("fusion.1", 4.0), _op("copy.3", 4.0, opcode="copy")), ops_note=second)
                 for _ in range(6))
    lines = ab_lines(comparison([KernelRounds("t.py::test_a", "a", base, head)]))
    assert f"t.py::test_a [a]: op by op ({second}):" in lines


def test_a_record_tells_where_its_op_times_come_from() -> None:
    hidden = record_of("t.py::test_a", "a", fake_result(0.5, notes=(HIDDEN,)), "pass").result
    assert ops_note(hidden) == f"not shown: {HIDDEN}"
    second = RecordedResult.from_dict({**fake_result(0.5).to_dict(), "ops_times_from": "a second pass"})
    assert ops_note(second) == "times from a second pass"
    assert ops_note(record_of("t.py::test_a", "a", fake_result(0.5), "pass").result) == ""


def test_a_kernel_whose_interval_still_reaches_past_the_gate_is_undecided_not_unchanged() -> None:
    """Made-up rounds: a 2x slowdown in most rounds, but two rounds at par: the interval reaches past the gate after
    the last round. Not "unchanged": undecided, counted in the closing line, exit 0 unless --strict."""
    kernel = _paired([0.5, 0.5, 1.0, 0.5, 1.0, 0.5])
    c = comparison([kernel])
    (judged,) = c.kernels
    assert judged.undecided and c.undecided == 1 and c.exit_status == 0
    (row,) = [line for line in ab_lines(c) if line.startswith("t.py::")]
    assert row.endswith("undecided (median below 0.95, interval straddles 0.95)")
    assert ab_lines(c)[-1] == ("no kernel regressed; 1 undecided (the noise hides whether it regressed; more --rounds "
                               "narrow the interval, --strict fails them)")


def test_an_interval_wholly_above_the_gate_settles_even_where_it_reaches_past_the_band() -> None:
    """The gate is 1 - max_drop: an interval of [0.97, 1.20] cannot become a regression, so more rounds are not run
    for it (it used to need to lie within 0.95-1.05, which a noisy kernel rarely reached in 20 rounds)."""
    found = judge_kernel(_paired([0.97, 1.2, 1.1, 1.0, 1.05, 1.15]))
    assert found.verdict == "unchanged" and found.settled and not found.undecided
    assert (found.low, found.high) == pytest.approx((0.97, 1.2))


def test_too_few_rounds_when_the_rounds_stop_is_undecided_not_unchanged() -> None:
    """A budget that ran out after five rounds: no interval, and not a silent pass."""
    c = comparison([_paired([0.5] * (MIN_ROUNDS - 1))])
    (judged,) = c.kernels
    assert judged.undecided and c.undecided == 1
    (row,) = [line for line in ab_lines(c) if line.startswith("t.py::")]
    assert row.endswith(f"undecided (fewer than {MIN_ROUNDS} rounds ran)")


def test_settled_tests_are_those_whose_every_kernel_is_settled() -> None:
    done = judge_kernel(_paired([0.5] * 6))
    still = judge_kernel(_paired([0.99, 1.01, 1.02, 0.70, 1.0, 1.03]))
    kernels = [replace(done, nodeid="t::a"), replace(still, nodeid="t::b"), replace(done, nodeid="t::b"),
               replace(done, nodeid="t::c", verdict="error", settled=False), same_program("t::d", "k")]
    assert settled_tests(kernels) == ["t::a", "t::c", "t::d"]


def test_same_program_kernels_are_listed_last_and_not_judged() -> None:
    c = replace(comparison([_paired([0.5] * 6)]), kernels=(*comparison([_paired([0.5] * 6)]).kernels,
                                                             same_program("t.py::test_b", "b"),
                                                             one_side("t.py::test_c", "c", "added")))
    lines = ab_lines(c)
    rows = [line for line in lines if line.startswith("t.py::")]
    assert rows[-1].startswith("t.py::test_b [b]") and rows[-1].endswith("same program: not timed")
    assert any(r.endswith("added (head only)") for r in rows)
    assert "max_drop: 0.05 (the default of ab (0.05))" in lines  # the untimed kernels add no floor of their own
    assert not c.undecided and c.exit_status == 1

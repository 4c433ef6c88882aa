"""measure() end to end on this machine's CPU: real compile, real profiler trace, real calibration."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline
import pytest_roofline.base.calls
from pytest_roofline.hardware.spec import Ceiling, HardwareSpec

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.slow
jnp = jax.numpy

FAST = {"min_runs": 3, "max_runs": 5, "budget_s": 0.3, "warmup": 1}


def test_importing_the_package_does_not_import_jax() -> None:
    code = "import sys, pytest_roofline; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_matmul_result_fields() -> None:
    a = jnp.ones((512, 512), jnp.float32)
    r = pytest_roofline.measure(lambda x, y: x @ y, a, a, name="mm", **FAST)
    assert r.name == "mm"
    assert r.flops == 2 * 512**3 and r.flops_source == "compiler"
    assert r.bytes_accessed == 3 * 4 * 512 * 512 and r.bytes_source == "compiler"
    assert r.intensity == pytest.approx(r.flops / r.bytes_accessed)
    assert r.hardware.platform == "cpu" and r.ceilings == "live"  # auto is live on a CPU
    assert r.bound == "compute"  # intensity 85 FLOP/B is far above a CPU's critical intensity
    assert r.timer == "profiler" and r.timer_fallback_reason == ""
    assert 3 <= r.runs <= 5 and len(r.per_run_s) == r.runs
    assert r.min_s <= r.device_time_s <= max(r.per_run_s)
    assert r.utilization_calibrated == pytest.approx(r.roofline_time_s / r.device_time_s)
    # Live: an f32 matmul reference ran before and after every run, read from the same trace; or, on a busy
    # machine where the reference ran implausibly fast, the calibrated ceilings, with a note that says why.
    if r.live is None:
        assert any("calibrated ceilings used" in n for n in r.notes), r.notes
    else:
        assert r.live.reference.startswith("f32 matmul") and r.live.resource == "compute"
        # One before the first run and one after the last; between them, one each 100 ms of runs
        assert 2 <= len(r.live.reference_s) <= r.runs + 1 and r.drift is not None and r.drift > 0
        assert r.utilization == pytest.approx(statistics.median(r.per_run_utilization))
    low, high = r.utilization_interval
    assert low <= r.utilization <= high and not r.marginal
    assert r.compile_time_s > 0
    uses = {u.work: u for u in r.ceilings_used}
    assert uses["f32 matrix FLOPs"].key == "f32" and uses["f32 matrix FLOPs"].ceiling.origin == "calibration"
    # Its 3 MiB working set fits the last-level cache: measured cold by default (the cache evicted before every
    # run), its bytes meet main memory but for the 1 MiB it writes, which the write-back cache keeps until after
    # the run; warm runs after the cold ones check the eviction.
    llc = r.hardware.cache_bytes
    assert r.cache is not None and uses["bytes"].key == "memory"
    if r.hardware.cache_bandwidth is not None:
        kept, dram = 4 * 512 * 512, r.hardware.memory_bandwidth.value
        assert uses["bytes"].ceiling.value == pytest.approx(
            r.bytes_accessed / ((r.bytes_accessed - kept) / dram + kept / r.hardware.cache_bandwidth.value))
        assert uses["bytes"].note.startswith("cold: the 1.05 MB the run writes stay in the cache")
    if llc is not None:
        assert r.cache.state == "cold" and r.cache.evicted_bytes == 2 * min(llc, 64 * 2**20) and r.cache.checked
        assert r.cache.cold_s == r.device_time_s and r.cache.warm_s is not None and r.cache.warm_s > 0
    # Warm, its bytes meet the cache's measured bandwidth, and say so.
    warm = pytest_roofline.measure(lambda x, y: x @ y, a, a, name="mm", cache="warm", **FAST)
    assert warm.cache is not None and warm.cache.state == "warm" and not warm.cache.checked
    warm_bytes = {u.work: u for u in warm.ceilings_used}["bytes"]
    if llc is not None and r.hardware.cache_bandwidth is not None and 3 * 2**20 <= llc / 2:
        assert warm_bytes.key == "cache" and warm_bytes.ceiling == warm.hardware.cache_bandwidth
        assert "fits the" in warm_bytes.note and warm_bytes.note in warm.notes
    data = json.loads(json.dumps(r.to_dict()))
    assert data["utilization"] == r.utilization and data["hardware"]["platform"] == "cpu"
    assert data["drift"] == r.drift and data["marginal"] is False
    assert data["cache"]["state"] == r.cache.state and data["cache"]["text"] == r.cache.text()
    if r.live is not None:
        assert data["ceilings"] == "live"
    assert data["utilization_interval"] == [low, high] and data["utilization_calibrated"] == r.utilization_calibrated
    text = str(r)
    live = ("of its calibrated speed during this measurement", "against the calibration alone") if r.live else ()
    for fragment in ("mm on CPU", "compute-bound", "utilization", "profiler", "critical", "95% interval", *live):
        assert fragment in text


def test_calibrated_ceilings_run_no_reference_and_a_threshold_is_carried() -> None:
    a = jnp.ones((256, 256), jnp.float32)
    r = pytest_roofline.measure(lambda x: x @ x, a, ceilings="calibrated", threshold=0.01, **FAST)
    assert r.ceilings == "calibrated" and r.live is None and r.drift is None
    assert r.utilization == r.utilization_calibrated and r.threshold == 0.01
    with pytest.raises(ValueError, match="threshold= must be a non-negative number"):
        pytest_roofline.measure(lambda x: x @ x, a, threshold="high", **FAST)
    with pytest.raises(AttributeError):
        r.flops = 1.0


def test_user_overrides_replace_compiler_counts() -> None:
    a = jnp.ones((256, 256), jnp.float32)
    r = pytest_roofline.measure(lambda x: x @ x, a, flops=1e6, bytes=1e9, **FAST)
    assert (r.flops, r.flops_source, r.bytes_accessed, r.bytes_source) == (1e6, "user", 1e9, "user")
    assert r.bound == "memory"


def test_donated_input_gets_a_fresh_copy_per_run() -> None:
    x = jnp.ones((1 << 20,), jnp.float32)
    scale = jax.jit(lambda v: v * 2.0, donate_argnums=0)
    r = pytest_roofline.measure(scale, x, **FAST)
    assert r.runs >= 3 and not x.is_deleted()
    assert any("donated" in n for n in r.notes)


def test_static_arguments_and_kwargs_reach_the_kernel() -> None:
    @partial(jax.jit, static_argnums=1)
    def power(v: Any, n: int, *, bias: Any) -> Any:
        return v**n + bias

    x = jnp.ones((1024,), jnp.float32)
    cube = pytest_roofline.measure(power, x, 3, bias=jnp.ones((1024,), jnp.float32), **FAST)
    square = pytest_roofline.measure(power, x, 2, bias=jnp.float32(1.0), **FAST)
    # The static n is compiled in: x*x*x + bias is 3 FLOP per element, x*x + bias 2.
    assert (cube.flops, square.flops) == (3 * 1024, 2 * 1024)
    # The keyword bias is an input of the program: a 1024-element bias is read (x, bias, out), a scalar one not.
    assert cube.bytes_accessed == 3 * 4 * 1024 and square.bytes_accessed == 2 * 4 * 1024 + 4


def test_wallclock_timer_on_request() -> None:
    r = pytest_roofline.measure(jnp.sin, jnp.ones((4096,)), timer="wallclock", **FAST)
    assert r.timer == "wallclock" and "requested" in r.timer_fallback_reason
    assert "wallclock" in str(r)


def test_falls_back_to_wall_clock_when_another_profiler_session_is_active(tmp_path: Path) -> None:
    with jax.profiler.trace(str(tmp_path)):
        r = pytest_roofline.measure(jnp.cos, jnp.ones((4096,)), **FAST)
    assert r.timer == "wallclock"
    # XLA reports the clash when the session stops (raise_error_on_start_failure does not catch it).
    assert "Another profiling session active" in r.timer_fallback_reason
    with pytest.raises(pytest_roofline.MeasureError, match="profiler"):
        with jax.profiler.trace(str(tmp_path / "again")):
            pytest_roofline.measure(jnp.cos, jnp.ones((4096,)), timer="profiler", **FAST)


def test_kernel_that_raises_leaves_no_profiler_session_open() -> None:
    calls = {"n": 0}

    def flaky(v: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 2:  # the warm-up runs pass, the first timed run raises
            raise RuntimeError("kernel exploded")
        return v

    def kernel(v: Any) -> Any:
        return jax.pure_callback(flaky, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

    # XLA's cost analysis gives -1 for programs with host callbacks: the counts come from the HLO, where the
    # callback is work of the host's, not the device's: its operands and result are bytes, and no FLOP is missing.
    r0 = pytest_roofline.measure(kernel, jnp.ones((8,)), warmup=1, min_runs=1, max_runs=1, timer="wallclock",
                                 cache="warm")  # warm: no check runs after the one timed run
    assert r0.flops_source == "hlo" and not r0.counts_lower_bound
    assert r0.flops == 0 and r0.bytes_accessed >= 2 * 8 * 4
    assert r0.source is not None and not r0.source.unknown  # the source's callback is the host's work too
    calls["n"] = 0
    with pytest.raises(pytest_roofline.MeasureError, match="kernel exploded"):
        pytest_roofline.measure(kernel, jnp.ones((8,)), flops=8, bytes=64, warmup=2, min_runs=3, max_runs=3)
    r = pytest_roofline.measure(jnp.exp, jnp.ones((4096,)), **FAST)  # a new session can start
    assert r.timer == "profiler"


def test_compile_failure_and_non_array_arguments_are_clear_errors() -> None:
    with pytest.raises(pytest_roofline.MeasureError, match="bad_shapes: cannot trace it.*contracting dimensions"):
        pytest_roofline.measure(lambda a, b: a @ b, jnp.ones((3, 4)), jnp.ones((5, 6)), name="bad_shapes")
    with pytest.raises(pytest_roofline.MeasureError, match=r"not arrays: argument 1 \(builtins.object\)"):
        pytest_roofline.measure(lambda a, b: a + b, jnp.ones(3), object())  # static, but not something to add
    with pytest.raises(ValueError, match="flops= must be a non-negative number"):
        pytest_roofline.measure(jnp.sin, jnp.ones(3), flops=-1)
    with pytest.raises(ValueError, match="min_runs"):
        pytest_roofline.measure(jnp.sin, jnp.ones(3), min_runs=0)


def test_loop_counts_in_result() -> None:
    x = jnp.ones((128, 128), jnp.float32)
    r = pytest_roofline.measure(lambda v: jax.lax.fori_loop(0, 5, lambda i, y: y @ y, v), x, **FAST)
    assert r.flops >= 5 * 2 * 128**3 and not r.counts_lower_bound
    # A trip count the compiler cannot know: 16,384 doubled until the sum reaches 1e9 is 16 iterations, read from
    # the trace (each body op's events per run) and charged 16 times.
    r = pytest_roofline.measure(lambda v: jax.lax.while_loop(lambda s: s.sum() < 1e9, lambda s: s * 2.0, v), x, **FAST)
    assert not r.counts_lower_bound and "lower bound" not in str(r)
    assert [loop.split(": ", 1)[1] for loop in r.work.loops] == ["16 iterations ran (from the trace)"]
    body = [op for op in r.ops if op.computation != "main" and op.flops]
    # The body's ops ran 16 times; the condition's 17 (it is checked once more, and its events say so).
    assert sorted({op.executions for op in body}) == [16, 17], [(op.name, op.executions) for op in body]
    assert r.flops >= 16 * 128 * 128 and any("from the trace" in h and ": 16" in h for h in r.hints)


def test_impossible_utilization_is_reported_with_its_suspect() -> None:
    # Fake hardware: a CPU spec with a peak 1000x too low, so the measured time beats the roofline.
    fake = HardwareSpec("fake slow CPU", "cpu",
                        {"f32": Ceiling(1e8, "override", "test fake", "2026-11-22")},
                        Ceiling(1e12, "override", "test fake", "2026-11-22"))
    a = jnp.ones((256, 256), jnp.float32)
    r = pytest_roofline.measure(lambda x: x @ x, a, hardware=fake, **FAST)
    from pytest_roofline.analysis.verdict.decide import decide

    assert r.impossible and decide(r.figures, 0.5).verdict == "impossible"
    assert "compute peak is too low" in r.suspect and "IMPOSSIBLE" in str(r)
    assert r.to_dict()["impossible"] is True


def test_forced_accelerator_entry_on_cpu() -> None:
    # Fake: measuring a CPU kernel against the H100 datasheet, as --roofline-hardware would force.
    r = pytest_roofline.measure(jnp.sin, jnp.ones((4096,)), hardware="H100 SXM", **FAST)
    assert r.hardware.name == "H100 SXM" and r.ceilings == "datasheet"
    assert r.utilization < 0.05


def test_artifacts_are_complete_or_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.measurement import profiler
    from pytest_roofline.measurement.artifacts import save_artifacts

    r = pytest_roofline.measure(jnp.sin, jnp.ones((4096,)), **FAST)
    paths = save_artifacts(r, tmp_path, "t.py::test_x", "sin")
    assert paths["perfetto"].endswith("perfetto_trace.json.gz") and paths["xplane"].endswith(".xplane.pb")
    assert "sine" in (tmp_path / "t.py_test_x__sin" / "hlo.txt").read_text()

    def broken_export(xspace: bytes, directory: str) -> None:  # a fake: the disk fills up mid-export
        raise OSError("disk full")

    monkeypatch.setattr(profiler, "export_xspace", broken_export)
    with pytest.raises(OSError, match="disk full"):
        save_artifacts(r, tmp_path, "t.py::test_y", "sin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.py_test_x__sin"]  # nothing half-written


def test_a_kernel_keyword_named_like_a_setting_reaches_the_kernel() -> None:
    @partial(jax.jit, static_argnames="name")
    def repeat(v: Any, name: int) -> Any:  # ``name`` multiplies ``name`` times: the FLOP count shows it took
        out = v
        for _ in range(name):
            out = out * v
        return out

    x = jnp.ones((1024,), jnp.float32)
    r = pytest_roofline.measure(repeat, x, name=3, roofline_name="label", **FAST)
    assert r.name == "label" and r.flops == 3 * 1024
    assert r.notes[0] == ("name= went to kernel 'repeat', a parameter of it, not to the setting name= (write "
                          "roofline_name= for the setting)")
    r = pytest_roofline.measure(repeat, args=(x,), kwargs={"name": 2}, name="label", **FAST)
    assert r.name == "label" and r.flops == 2 * 1024


def test_compile_time_is_measured_once_and_a_cached_program_says_so() -> None:
    """XLA compiles a new program (JAX reports a backend compile); measuring it again, or a kernel the test ran
    before, takes it from JAX's in-memory cache, and the result says the compile time was not measured."""
    def fresh_kernel(x: Any) -> Any:
        return jnp.sin(x) * 3.0 + 0.5

    x = jnp.ones((4096,), jnp.float32)
    first = pytest_roofline.measure(fresh_kernel, x, **FAST)
    again = pytest_roofline.measure(fresh_kernel, x, **FAST)
    assert not first.compile_cached and first.compile_time_s > 0
    assert again.compile_cached
    data = first.to_dict()
    assert data["compile_time_s"] == first.compile_time_s and data["compile_cached"] is False
    assert again.to_dict()["compile_cached"] is True


def test_an_int8_matmul_is_held_to_the_int8_rate_the_calibration_measured() -> None:
    """On this machine's CPU, calibrated: an int8 matmul accumulating in int32, as a quantized layer runs it. Held
    to the f32 peak before, it read 732% "impossible" on a Xeon with AMX (int8 at 12x its f32 rate)."""
    jnp = jax.numpy
    n = 512
    ints = partial(jax.random.randint, shape=(n, n), minval=-100, maxval=100, dtype=jnp.int8)
    a, b = ints(jax.random.key(0)), ints(jax.random.key(1))
    r = pytest_roofline.measure(partial(jnp.matmul, preferred_element_type=jnp.int32), a, b, **FAST)
    assert "int8" in r.hardware.peaks and r.hardware.peaks["int8"].origin == "calibration"
    assert any(note.startswith("int8 matrix work held to the int8 matmul rate") for note in r.notes), r.notes
    assert r.flops == pytest.approx(2 * n**3, rel=0.01) and not r.impossible

"""Per-op roofline: each op's FLOPs and bytes against analytic formulas, the join with a real CPU trace,
the sum-over-ops check, collectives, and hints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from pytest_roofline.analysis.model.compiler_agreement import ops_check
from pytest_roofline.analysis.model.per_op import OpRow, op_rows
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.runs.idle import IdleTime
from pytest_roofline.analysis.verdict.hints import RunFacts, hints

jax = pytest.importorskip("jax")

# What XLA's CPU backend makes of these programs: compiled for the CPU device wherever the tests run.
pytestmark = pytest.mark.cpu_backend
jnp = jax.numpy

PEAK, BW = 1e11, 1e10  # made-up ceilings: only the counts matter in these tests


def rows_of(fn: Callable[..., Any], *args: Any) -> tuple[list[OpRow], Any]:
    compiled = jax.jit(fn).lower(*args).compile()
    module = parse_hlo(compiled.as_text())
    return op_rows(module, lambda cls: PEAK, PEAK, BW), compiled


def the_op(rows: list[OpRow], predicate: Callable[[OpRow], bool]) -> OpRow:
    found = [r for r in rows if predicate(r)]
    assert len(found) == 1, [(r.name, r.opcode, r.fusion_kind) for r in rows]
    return found[0]


def test_matmul_op() -> None:
    m, k, n = 256, 512, 128
    rows, _ = rows_of(lambda a, b: a @ b, jnp.ones((m, k)), jnp.ones((k, n)))
    op = the_op(rows, lambda r: r.flops > 0)
    assert op.flops == 2 * m * n * k and op.bytes == 4 * (m * k + k * n + m * n)
    assert op.dtype == "f32" and op.bound == "compute"
    assert op.compute_time_s == pytest.approx(2 * m * n * k / PEAK)


def test_batched_matmul_op() -> None:
    b, m, k, n = 8, 64, 128, 32
    rows, _ = rows_of(jnp.matmul, jnp.ones((b, m, k)), jnp.ones((b, k, n)))
    op = the_op(rows, lambda r: r.flops > 0)
    assert op.flops == 2 * b * m * n * k and op.bytes == 4 * b * (m * k + k * n + m * n)


def test_convolution_op() -> None:
    n, c, h, w, o, kh, kw = 2, 3, 32, 32, 8, 3, 3
    x, kernel = jnp.ones((n, c, h, w)), jnp.ones((o, c, kh, kw))
    rows, _ = rows_of(lambda a, b: jax.lax.conv(a, b, (1, 1), "VALID"), x, kernel)
    op = the_op(rows, lambda r: r.flops > 0)
    out = n * o * (h - kh + 1) * (w - kw + 1)
    assert op.flops == 2 * out * c * kh * kw
    assert op.bytes == 4 * (x.size + kernel.size + out)


def test_fused_elementwise_chain_is_one_op() -> None:
    size = 1 << 20
    rows, _ = rows_of(lambda v: jnp.tanh(v * 2.0 + 1.0) * 3.0, jnp.ones((size,)))
    op = the_op(rows, lambda r: r.opcode == "fusion")
    assert op.flops == 3 * size and op.transcendentals == size
    assert op.bytes == 2 * 4 * size  # one read, one write: the temporaries stay inside the fusion
    assert op.bound == "memory"


def test_reduction_op() -> None:
    rows, _ = rows_of(lambda v: v.sum(axis=1), jnp.ones((1024, 512)))
    working = [r for r in rows if r.flops > 0]
    assert sum(r.flops for r in working) == 1024 * 511
    if len(working) == 1:
        assert working[0].bytes == 4 * (1024 * 512 + 1024)
    else:  # XLA:CPU of jax 0.9 and older: reduce-window over blocks of each row, then reduce
        assert [r.name.split(".")[0] for r in working] == ["wrapped_reduce-window", "wrapped_reduce"]
        assert working[0].bytes > 4 * 1024 * 512 and working[1].bytes < working[0].bytes


def test_softmax_ops_sum_to_the_compiler_totals() -> None:
    rows, compiled = rows_of(lambda v: jax.nn.softmax(v, axis=-1), jnp.ones((256, 1024)))
    assert sum(r.transcendentals for r in rows) == 256 * 1024
    check = ops_check(parse_hlo(compiled.as_text()), compiled.cost_analysis())
    assert check.ok, check.mismatches


def test_bf16_matvec_ops_sum_to_the_compiler_totals() -> None:
    # XLA:CPU converts bf16 operands to f32; the compiler counts one FLOP per converted element.
    rows, compiled = rows_of(lambda a, b: a @ b, jnp.ones((1, 512), jnp.bfloat16), jnp.ones((512, 256), jnp.bfloat16))
    check = ops_check(parse_hlo(compiled.as_text()), compiled.cost_analysis())
    assert check.ok, check.mismatches
    assert [r.dtype for r in rows if r.flops >= 2 * 512 * 256] == ["bf16"]


def test_mlp_block_ops() -> None:
    t, d, h = 128, 256, 1024
    x, w1, w2 = jnp.ones((t, d)), jnp.ones((d, h)), jnp.ones((h, d))
    rows, compiled = rows_of(lambda a, b, c: jax.nn.relu(a @ b) @ c, x, w1, w2)
    dots = sorted(r.flops for r in rows if r.dtype == "f32")
    assert dots == [2 * t * d * h, 2 * t * d * h]
    assert ops_check(parse_hlo(compiled.as_text()), compiled.cost_analysis()).ok


def test_loop_body_ops_are_counted_per_iteration() -> None:
    rows, _ = rows_of(lambda v: jax.lax.fori_loop(0, 6, lambda i, y: y @ y, v), jnp.ones((64, 64)))
    op = the_op(rows, lambda r: r.flops >= 2 * 64**3)
    assert op.executions == 6 and op.flops == 6 * 2 * 64**3 and op.computation != "main"


def test_sum_check_reports_a_discrepancy() -> None:
    compiled = jax.jit(lambda a: a @ a).lower(jnp.ones((64, 64))).compile()
    module = parse_hlo(compiled.as_text())
    wrong = dict(compiled.cost_analysis(), flops=1.0)  # a constructed, wrong compiler analysis
    check = ops_check(module, wrong)
    assert not check.ok and "flops: sum over ops 524288 vs compiler 1" in check.mismatches[0]


@pytest.mark.slow
def test_join_with_a_real_cpu_trace() -> None:
    from pytest_roofline import measure

    t, d, h = 256, 512, 2048
    r = measure(lambda a, b, c: jax.nn.relu(a @ b) @ c, jnp.ones((t, d)), jnp.ones((d, h)), jnp.ones((h, d)),
                min_runs=3, max_runs=3, warmup=1)
    assert r.timer == "profiler" and r.ops_check is not None and r.ops_check.ok
    timed = [row for row in r.ops if row.measured_s]
    assert {row.name for row in timed} <= {row.name for row in r.ops}
    dots = [row for row in timed if row.flops >= 2 * t * d * h]
    assert len(dots) == 2 and all(row.events_per_run == 1 for row in dots)
    # The two matmuls are most of the program's time; no op takes longer than the whole run.
    assert sum(row.measured_s or 0.0 for row in dots) > 0.5 * r.device_time_s
    assert all((row.measured_s or 0.0) <= r.device_time_s * 1.01 for row in timed)
    # A sum of maxima is at least the max of sums; the first touch of fresh pages is the program's term alone (CI
    # once charged it here: 5.18 ms of ops against 5.22 ms with the first touch).
    assert r.ops_roofline_time_s >= r.roofline.core_time_s * 0.999
    data = r.to_dict()
    assert data["ops"] and data["ops_check"]["ok"] and "ops_utilization" in data


COLLECTIVE_SCRIPT = r"""
import json, os
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from pytest_roofline.analysis.program.hlo_reader import parse_hlo
from pytest_roofline.analysis.runs.idle import IdleTime
from pytest_roofline.analysis.model.per_op import op_rows
mesh = Mesh(jax.devices(), ("x",))
f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))
x = jnp.ones((4 * 1024, 256), jnp.float32)
module = parse_hlo(f.lower(x).compile().as_text())
rows = op_rows(module, lambda c: 1e12, 1e12, 1e11, interconnect=1e10, devices=4)
print(json.dumps([r.to_dict() for r in rows if r.collective_bytes]))
"""


@pytest.mark.slow
def test_all_reduce_collective_bytes_on_four_cpu_devices() -> None:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", COLLECTIVE_SCRIPT], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    (row,) = json.loads(out.stdout.strip().splitlines()[-1])
    shard = 1024 * 256 * 4  # each device all-reduces its 1 MiB shard
    assert row["opcode"].startswith("all-reduce")
    assert row["collective_bytes"] == pytest.approx(2 * 3 / 4 * shard)  # ring: 2(n-1)/n of the buffer
    assert row["comms_time_s"] == pytest.approx(row["collective_bytes"] / 1e10)


def test_hints() -> None:
    def row(name: str, opcode: str, measured: float, executions: int = 1, computation: str = "main") -> OpRow:
        return OpRow(name, opcode, None, computation, "f32[8]", (), dtype="vector", executions=executions, flops=0,
                     transcendentals=0, bytes=64, collective_bytes=0, compute_time_s=0, memory_time_s=1e-9,
                     comms_time_s=0,
                     measured_s=measured)

    layout = hints([row("copy.1", "copy", 5e-3), row("fusion", "fusion", 5e-3)],
                   RunFacts("cpu", 10e-3, "memory", donated=False, output_bytes=64 * 2**20,
                            working_set_bytes=128 * 2**20, idle=IdleTime(10e-3, 6e-3, 5.5e-3, "made up", 199)))
    text = "\n".join(layout)
    assert "layout changes: copy/transpose ops (copy.1) take 50%" in text
    assert "fresh 64 MiB output buffer" in text and "donate" in text
    assert ("idle device: the device ran no op for 60% of each run (6 ms of 10 ms, 199 gaps): 55% waiting on the "
            "host, 5% other; the host launches ops more slowly than the device runs them") in text
    waiting = hints([], RunFacts("tpu", 10e-3, "memory", donated=True, output_bytes=8, working_set_bytes=8,
                                 idle=IdleTime(10e-3, 4e-3, 0.0, "made up", 3)))
    assert any("40% of each run" in h and "the device waits on itself" in h for h in waiting)
    quiet = hints([], RunFacts("tpu", 10e-3, "memory", donated=True, output_bytes=8, working_set_bytes=8,
                               idle=IdleTime(10e-3, 2.9e-3, 0.0, "made up", 3)))
    assert not any("idle" in h for h in quiet)  # 29%: under the hint's 30%
    tiny = hints([row("add", "add", 1e-3, executions=500, computation="body")],
                 RunFacts("gpu", 1e-3, "memory", donated=True, output_bytes=8, working_set_bytes=8, has_loops=True))
    assert any("many tiny ops: 500 ops per run" in h for h in tiny)
    assert any("while loop (body) runs up to 500 iterations" in h for h in tiny)
    assert not any("cache" in h for h in tiny)  # the cache hint is for CPUs


def test_the_cache_hint_names_where_the_cache_size_came_from_and_is_left_out_when_the_model_holds_the_cache() -> None:
    def cache_hints(**keywords: object) -> list[str]:
        facts = RunFacts("cpu", 1e-3, "memory", donated=True, output_bytes=8, working_set_bytes=4 * 2**20,
                         **keywords)  # type: ignore[arg-type]
        return [h for h in hints([], facts) if "last-level cache" in h]

    (told,) = cache_hints(cache_bytes=8 * 2**20)
    assert "(8 MiB, as the system reports it)" in told
    (assumed,) = cache_hints()
    assert "(32 MiB, assumed)" in assumed
    assert cache_hints(cache_bytes=8 * 2**20, cache_modelled=True) == []
    assert cache_hints(cache_bytes=2 * 2**20) == []  # the working set does not fit


MEASURE_SCRIPT = r"""
import json
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from pytest_roofline import measure
mesh = Mesh(jax.devices(), ("x",))
f = jax.jit(jax.shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()))
r = measure(f, jnp.ones((4 * 1024, 256), jnp.float32), hardware="TPU v5e", min_runs=3, max_runs=3, warmup=1)
(op,) = [o for o in r.ops if o.collective_bytes]
print(json.dumps({"collective_bytes": r.collective_bytes, "comms_time_s": r.comms_time_s, "bound": r.bound,
                  "roofline_time_s": r.roofline_time_s, "timer": r.timer, "runs": r.runs,
                  "op_s": op.measured_s, "op_events": op.events_per_run, "max_run_s": max(r.per_run_s)}))
"""


@pytest.mark.slow
def test_program_level_interconnect_time_on_four_cpu_devices() -> None:
    # Fake hardware on purpose: a 4-device CPU program measured against the TPU v5e datasheet, whose
    # interconnect figure (45 GB/s) makes the all-reduce the bound.
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", MEASURE_SCRIPT], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["collective_bytes"] == pytest.approx(2 * 3 / 4 * 1024 * 256 * 4)
    assert data["comms_time_s"] == pytest.approx(data["collective_bytes"] / 45e9)
    assert data["bound"] == "interconnect" and data["roofline_time_s"] == data["comms_time_s"]
    assert data["runs"] == 3 and data["timer"] == "profiler"
    # The op ran on all four devices: its time is the slowest device's, never the sum of the four.
    assert data["op_events"] == 1 and 0 < data["op_s"] <= data["max_run_s"]

"""Compiling a function ahead of time for example inputs, and running the compiled program for timing (imports JAX)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..analysis.program.info import SourceWork
from ..analysis.runs.time_spent import phase
from ..base.errors import MeasureError, exception_text
from .options import TimingSettings
from .pallas_calls import TracedProgram, source_work, traced_program
from .staging.jitting import stage
from .staging.staged import describe_type, is_array
from .timers import Loop, time_program
from .timing import WARM_RUNS, Agree, Beside, CacheRuns, Settled, Timed

__all__ = [
    "CompiledProgram",
    "Kept",
    "compile_program",
    "without_command_buffers",
    "NO_COMMAND_BUFFERS",
    "time_compiled",
    "allocator_stats",
    "block_until_ready",
]

# jax.block_until_ready has no annotations: typed once here.
block_until_ready: Callable[[Any], Any] = jax.block_until_ready


@dataclass
class CompiledProgram:
    name: str
    compiled: Any  # jax.stages.Compiled
    hlo_text: str
    module_name: str
    compile_time_s: float
    compile_cached: bool  # XLA did not compile: the program came from JAX's in-memory cache
    _: KW_ONLY  # fields from the seventh on are given by keyword
    leaves: list[Any]  # the dynamic argument leaves, on the device
    treedef: Any
    donated: list[bool]
    device: Any
    raw_cost_analysis: Any
    raw_memory_analysis: Any = None  # CompiledMemoryStats, or None where the backend gives none
    traced: TracedProgram = TracedProgram()  # its Pallas kernels, from the traced program
    static: tuple[str, ...] = ()  # the arguments compiled in (not arrays), in words
    staged_via: str = ""  # how it was jitted, where not as its author gave it
    donate_with: str = ""  # how its author donates an input, where not by jax.jit's donate_argnums
    source: SourceWork | None = None  # the work the program as written asks for (its jaxpr)
    lowered: Any = field(default=None, repr=False)  # jax.stages.Lowered, to compile it again with other options

    @property
    def num_devices(self) -> int:
        shardings = input_shardings(self.compiled)
        return max(len(shardings[0].device_set), 1) if shardings else 1

    @property
    def platform(self) -> str:
        return str(self.device.platform)

    @property
    def device_kind(self) -> str:
        return str(self.device.device_kind)


def input_shardings(compiled: Any) -> list[Any]:
    """The shardings of a compiled program's inputs, flat, in the order it takes them (empty where it does not say).

    Read flat: ``Compiled.input_shardings`` rebuilds the arguments' tree with a sharding for each leaf, and a custom
    pytree whose unflattening looks at its leaves cannot take them (a distrax distribution: "Too many leaves for
    PyTreeDef; expected 1"). ``_input_shardings_flat`` is JAX's private flat list behind that property (JAX
    0.4.36 to 0.10 at least); where it is missing or fails, the tree's leaves."""
    flat = getattr(compiled, "_input_shardings_flat", None)
    try:
        found = list(flat()) if callable(flat) else jax.tree_util.tree_leaves(compiled.input_shardings)
    except Exception:  # noqa: BLE001 - an input tree that cannot be rebuilt, or a JAX without either
        try:
            found = jax.tree_util.tree_leaves(compiled.input_shardings)
        except Exception:  # noqa: BLE001
            return []
    return [s for s in found if hasattr(s, "device_set")]


def compile_program(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str
) -> CompiledProgram:
    """Jit (if needed), lower and compile ``fn`` for the example inputs, and put the inputs on the device."""
    if not callable(fn):
        raise MeasureError(f"{name}: expected a function to measure, got {describe_type(fn)} ({fn!r:.60})")
    t0 = time.perf_counter()
    try:
        staged = stage(fn, tuple(args), dict(kwargs), name)
        traced = traced_program(staged.traced) if staged.traced is not None else TracedProgram()
        source = source_work(staged.traced, traced) if staged.traced is not None else None
    except MeasureError:
        raise
    except TypeError as exc:
        bad = [f"argument {i} ({describe_type(a)})" for i, a in enumerate(args)
               if not is_array(a) and not isinstance(a, (int, float, bool, complex, tuple, list, dict))]
        hint = f"; not arrays: {', '.join(bad)}" if bad else ""
        raise MeasureError(f"{name}: cannot trace it with the given arguments{hint}: {exception_text(exc)}") from exc
    except Exception as exc:
        raise MeasureError(f"{name}: tracing/lowering failed: {exception_text(exc)}") from exc
    try:
        with _BackendCompiles() as backend:
            compiled = staged.lowered.compile()
    except Exception as exc:
        raise MeasureError(f"{name}: compilation failed: {exception_text(exc)}") from exc
    compile_time = time.perf_counter() - t0
    leaves, treedef, donated = staged.leaves, staged.treedef, staged.donated
    on_device = [x for x in leaves if isinstance(x, jax.Array)]
    device = sorted(on_device[0].devices(), key=lambda d: d.id)[0] if on_device else jax.devices()[0]
    # Host arrays go to the device now, so that no run pays the transfer.
    with phase("inputs"):
        placed = [jax.device_put(x, device) if isinstance(x, (np.ndarray, np.generic)) else x for x in leaves]
        block_until_ready(placed)
    hlo_text = compiled.as_text()
    module_name = hlo_text.split(None, 2)[1].rstrip(",") if hlo_text.startswith("HloModule") else ""
    try:
        raw_cost = compiled.cost_analysis()
    except Exception as exc:  # noqa: BLE001 - reported as "no cost analysis" by the counting step
        raw_cost = exc
    try:
        raw_memory = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - the result says the compiler gave no memory analysis
        raw_memory = None
    return CompiledProgram(name, compiled, hlo_text, module_name, compile_time, backend.count == 0, leaves=placed,
                           treedef=treedef, donated=donated, device=device, raw_cost_analysis=raw_cost,
                           raw_memory_analysis=raw_memory, traced=traced, static=staged.static, staged_via=staged.via,
                           donate_with=staged.donate_with, source=source,
                           lowered=staged.lowered)


# XLA:GPU's option that lists what runs as command buffers (CUDA graphs), emptied: every kernel is launched and
# traced on its own. Other backends ignore it.
NO_COMMAND_BUFFERS = {"xla_gpu_enable_command_buffer": ""}


def without_command_buffers(program: CompiledProgram) -> CompiledProgram:
    """The same program compiled again with command buffers off (:data:`NO_COMMAND_BUFFERS`), on the same inputs."""
    if program.lowered is None:
        raise MeasureError(f"{program.name}: its lowered program was not kept, so it cannot be compiled again")
    try:
        compiled = program.lowered.compile(compiler_options=NO_COMMAND_BUFFERS)
    except Exception as exc:
        raise MeasureError(f"{program.name}: compiling it with command buffers off failed: {exception_text(exc)}") \
            from exc
    return replace(program, compiled=compiled, hlo_text=compiled.as_text())


# What JAX records each time XLA compiles a program (or loads it from the persistent cache); an in-memory cache
# hit records nothing.
_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class _BackendCompiles:
    """Counts JAX's backend-compile events while open (through ``jax.monitoring``'s public listeners)."""

    def __init__(self) -> None:
        self.count = 0

    def _listener(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == _BACKEND_COMPILE_EVENT:
            self.count += 1

    def __enter__(self) -> _BackendCompiles:
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        return self

    def __exit__(self, *exc: object) -> None:
        jax.monitoring.unregister_event_duration_listener(self._listener)


def allocator_stats(device: Any) -> dict[str, Any] | None:
    """``device.memory_stats()`` (GPU/TPU allocators: ``bytes_in_use``, ``peak_bytes_in_use`` ...); None on a
    CPU, which reports none."""
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - a backend without allocator statistics
        return None
    return dict(stats) if stats else None


def time_compiled(program: CompiledProgram, settings: TimingSettings, ops_per_run: int = 1,
                  beside: Beside | None = None, settled: Settled | None = None,
                  cache: CacheRuns = WARM_RUNS, *, agree: Agree | None = None) -> Timed:
    """Time the compiled program; donated inputs get a fresh copy before every run, outside the timing.
    ``beside``, ``settled``, ``cache`` and ``agree``: see :class:`~.timers.Loop`."""
    settings = replace(settings, ops_per_run=max(ops_per_run, 1))
    compiled = program.compiled
    treedef = program.treedef

    def prepare() -> list[Any]:
        if not any(program.donated):
            return program.leaves
        fresh = [
            x.copy() if d and isinstance(x, jax.Array) else x
            for x, d in zip(program.leaves, program.donated, strict=True)
        ]
        block_until_ready(fresh)
        return fresh

    def execute(leaves: list[Any]) -> Any:
        dyn_args, dyn_kwargs = jax.tree_util.tree_unflatten(treedef, leaves)
        return block_until_ready(compiled(*dyn_args, **dyn_kwargs))

    try:
        return time_program(Loop(prepare, execute, program.module_name, program.platform, settings, beside=beside,
                                 settled=settled, cache=cache, agree=agree))
    except MeasureError:
        raise
    except Exception as exc:
        raise MeasureError(f"{program.name}: running it failed: {exception_text(exc)}") from exc


@dataclass(frozen=True)
class _OnHost:
    """An input's values on the host and where it lives on the device."""

    values: np.ndarray
    sharding: Any


def _to_host(x: Any) -> Any:
    if not isinstance(x, jax.Array) or not x.is_fully_addressable or jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return x
    return _OnHost(np.array(x, copy=True), x.sharding)  # a copy: on a CPU, asarray would view the device buffer


@dataclass(frozen=True)
class Kept:
    """A compiled program kept for its next measurement (``measure_call(keep=...)``, what a long-lived ``ab`` side
    measures round after round) without its device inputs, and its inputs as host copies with their shardings: each
    round puts new buffers on the device, which holds them only while that test is measured (before, every kept
    test's inputs stayed in device memory until the process ended). An input that cannot be copied to the host (a
    typed PRNG key, an array spanning processes) stays on the device, and each round copies it there."""

    program: CompiledProgram
    inputs: tuple[Any, ...]

    @classmethod
    def of(cls, program: CompiledProgram) -> Kept:
        return cls(replace(program, leaves=[]), tuple(_to_host(x) for x in program.leaves))

    def on_device(self) -> CompiledProgram:
        """The program with new device buffers for its inputs (the kept values)."""
        fresh = [jax.device_put(x.values, x.sharding) if isinstance(x, _OnHost)
                 else x.copy() if isinstance(x, jax.Array) else x for x in self.inputs]
        block_until_ready(fresh)
        return replace(self.program, leaves=fresh)

"""A compiled program's fingerprint: what decides whether two revisions run the same program on this machine.

It hashes the optimized HLO as XLA compiled it (without the source locations and names it carries, which move
when unrelated lines of a file do), the device it was compiled for, the JAX and jaxlib versions, the flags that
change code generation (``XLA_FLAGS``, ``LIBTPU_INIT_ARGS``, JAX's own configuration options that reach the
compiler), and the settings that change the roofline the kernel is judged against (counts given to the test,
first touch, cache state, ceilings). Two kernels with the same fingerprint run the same machine code against the
same roofline: ``pytest-roofline ab`` does not time them (a kernel whose speed depends on its input *values*,
not only their shapes, is the exception it cannot see).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping

from ..base.calls import KernelCall
from ..base.labels import kernel_name
from .compiled import CompiledProgram, compile_program
from .options import MeasureOptions

__all__ = ["normalized_hlo", "fingerprint", "program_facts", "program_fingerprint", "compile_fingerprint",
           "FLAG_VARIABLES"]

FLAG_VARIABLES = ("XLA_FLAGS", "LIBTPU_INIT_ARGS", "JAX_DEFAULT_MATMUL_PRECISION", "JAX_ENABLE_X64")
# The debugging sections XLA prints before the computations: file names, function names, source locations.
_SECTIONS = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
_METADATA = re.compile(r',? metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_MODULE = re.compile(r"^HloModule [^,\s]+")
# Instruction and computation names (%x.1, %fused_computation.3) and the parameter names of a computation's
# signature: they come from the source (argument names, op names) and from XLA's numbering.
_NAME = re.compile(r"%[\w.\-]+")
_SIGNATURE_PARAMETER = re.compile(r"(?<=[(,] )[\w.\-]+(?=: )|(?<=\()[\w.\-]+(?=: )")


def _canonical_names(text: str) -> str:
    """Every name replaced by its order of first appearance: a renamed argument compiles the same."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return names.setdefault(match.group(0).lstrip("%"), f"n{len(names)}")

    return _NAME.sub(lambda m: "%" + rename(m), _SIGNATURE_PARAMETER.sub(rename, text))


def normalized_hlo(text: str) -> str:
    """The HLO text less what does not change the machine code: op metadata (source file, line, op names), the
    debugging sections before the computations, and the names of the module, its computations and instructions
    (a renamed function or argument compiles the same)."""
    lines: list[str] = []
    skipping = False
    for line in text.splitlines():
        if line.strip() in _SECTIONS:
            skipping = True
            continue
        if skipping:
            skipping = bool(line.strip())
            continue
        lines.append(_METADATA.sub("", line).rstrip())
    if lines:
        lines[0] = _MODULE.sub("HloModule _", lines[0])
    return _canonical_names("\n".join(line for line in lines if line))


def fingerprint(hlo_text: str, facts: Mapping[str, str]) -> str:
    """A short hex digest of the normalized program and ``facts`` (device, versions, flags, settings)."""
    digest = hashlib.sha256(normalized_hlo(hlo_text).encode("utf-8"))
    for key in sorted(facts):
        digest.update(f"\n{key}={facts[key]}".encode())
    return digest.hexdigest()[:20]


def program_facts(platform: str, device_kind: str, devices: int, settings: Mapping[str, object],
                  environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What besides the HLO text decides the machine code and the roofline: the device, the versions, the
    code-generation flags, JAX's configuration that reaches the compiler, and ``settings`` (the measurement's)."""
    import jax
    import jaxlib

    env = os.environ if environ is None else environ
    facts = {"platform": platform, "device_kind": device_kind, "devices": str(devices), "jax": jax.__version__,
             "jaxlib": str(getattr(jaxlib, "__version__", "unknown"))}
    facts.update({f"env.{name}": env.get(name, "") for name in FLAG_VARIABLES})
    for name in ("jax_default_matmul_precision", "jax_enable_x64"):
        facts[f"config.{name}"] = str(getattr(jax.config, name, ""))
    facts.update({f"setting.{key}": str(value) for key, value in settings.items()})
    return facts


def program_fingerprint(program: CompiledProgram, options: MeasureOptions) -> str:
    """The fingerprint of a compiled program measured with ``options``."""
    settings = {"flops": options.counts.flops, "bytes": options.counts.bytes,
                "transcendentals": options.counts.transcendentals, "counts_from": options.counts_from,
                "first_touch": options.first_touch, "cache": options.cache, "ceilings": options.hardware.ceilings,
                "hardware": options.hardware.name}
    return fingerprint(program.hlo_text, program_facts(program.platform, program.device_kind, program.num_devices,
                                                       settings))


def compile_fingerprint(call: KernelCall, options: MeasureOptions) -> str:
    """Compile ``call`` (nothing run, nothing timed) and return its program's fingerprint (a MeasureError where it
    cannot be compiled)."""
    program = compile_program(call.fn, call.args, dict(call.kwargs), options.name or kernel_name(call.fn))
    return program_fingerprint(program, options)

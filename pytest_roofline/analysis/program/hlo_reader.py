"""Reading optimized HLO text (``compiled.as_text()``) into computations and instructions.

The reader is strict: a line inside a computation that it cannot read raises
:class:`HloParseError` naming the line, rather than being skipped. It does not import JAX.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from math import prod
from typing import Any

from .hlo_scan import match_close, split_top, strip_comments, unclosed

__all__ = [
    "HloParseError",
    "Shape",
    "Instruction",
    "Computation",
    "HloModule",
    "parse_hlo",
    "parse_shape",
    "with_trip_counts",
    "with_branch_shares",
    "as_compiled",
    "DTYPE_BYTES",
]

# Bytes per element of each XLA primitive type (sub-byte types rounded as XLA stores them packed: ceil later).
DTYPE_BYTES: dict[str, float] = {
    "pred": 1, "s2": 0.25, "s4": 0.5, "s8": 1, "s16": 2, "s32": 4, "s64": 8,
    "u2": 0.25, "u4": 0.5, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
    "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3fnuz": 1, "f8e5m2fnuz": 1, "f8e4m3b11fnuz": 1,
    "f8e4m3": 1, "f8e3m4": 1, "f8e8m0fnu": 1, "f4e2m1fn": 0.5,
    "token": 0, "opaque": 0,
}


class HloParseError(ValueError):
    """HLO text that this reader cannot read; names the line."""

    def __init__(self, line_no: int, line: str, reason: str) -> None:
        self.line_no = line_no
        self.line = line
        self.reason = reason
        super().__init__(f"cannot read HLO line {line_no}: {reason}\n    {line.strip()[:300]}")


@dataclass(frozen=True)
class Shape:
    """An array shape (``dtype`` + ``dims``) or a tuple of shapes (``dtype == 'tuple'``)."""

    dtype: str
    dims: tuple[int, ...] = ()
    elements_of: tuple[Shape, ...] = ()

    @property
    def is_tuple(self) -> bool:
        return self.dtype == "tuple"

    @property
    def num_elements(self) -> int:
        if self.is_tuple:
            return sum(s.num_elements for s in self.elements_of)
        return prod(self.dims)

    @property
    def bytes(self) -> int:
        """Bytes of the whole (possibly tuple) shape, as stored."""
        if self.is_tuple:
            return sum(s.bytes for s in self.elements_of)
        per = DTYPE_BYTES.get(self.dtype)
        if per is None:
            raise ValueError(f"unknown HLO element type {self.dtype!r}")
        return int(-(-prod(self.dims) * per // 1))

    def leaves(self) -> Iterator[Shape]:
        if self.is_tuple:
            for s in self.elements_of:
                yield from s.leaves()
        else:
            yield self

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(str(s) for s in self.elements_of) + ")"
        return f"{self.dtype}[{','.join(str(d) for d in self.dims)}]"


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    attrs: Mapping[str, str]
    is_root: bool
    _: KW_ONLY  # fields from the seventh on are given by keyword
    line_no: int
    literal: str = ""  # the text inside constant(...) / parameter(...)

    @property
    def called(self) -> tuple[str, ...]:
        """Names of the computations this instruction calls (fusion body, loop body, reducer ...)."""
        names: list[str] = []
        # A predicate's conditional (XLA:GPU writes lax.cond so) lists its false branch first, as branch 0: the
        # branch numbers are those of lax.cond/lax.switch (index 0 is cond's false_fun) on every backend.
        for key in ("calls", "to_apply", "condition", "body", "branch_computations",
                    "false_computation", "true_computation", "called_computations"):
            value = self.attrs.get(key)
            if value:
                names.extend(n.lstrip("%") for n in re.findall(r"%?[\w.\-]+", value.strip("{}")))
        return tuple(names)

    @property
    def fusion_kind(self) -> str | None:
        return self.attrs.get("kind") if self.opcode == "fusion" else None

    @property
    def backend_config(self) -> dict[str, Any]:
        raw = self.attrs.get("backend_config")
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def known_trip_count(self) -> int | None:
        """The trip count XLA proved for a while loop, when the HLO states it."""
        if self.opcode != "while":
            return None
        known = self.backend_config.get("known_trip_count")
        if isinstance(known, dict) and "n" in known:
            return int(known["n"])
        return None

    @property
    def trip_count_source(self) -> str:
        """Where a while loop's trip count came from: "compiler", or "trace" (the iterations that ran)."""
        return self.attrs.get("trip_count_source", "compiler")

    @property
    def branch_shares(self) -> tuple[float, ...] | None:
        """For a conditional whose branches the trace told apart: the share of its executions each branch took
        (in ``called`` order); None where unknown (the costliest branch is then counted)."""
        raw = self.attrs.get("branch_shares")
        return tuple(float(x) for x in raw.split(",")) if raw else None

    def int_list(self, key: str) -> tuple[int, ...]:
        raw = self.attrs.get(key, "").strip("{}")
        return tuple(int(x) for x in raw.split(",") if x.strip())


@dataclass(frozen=True)
class Computation:
    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool
    by_name: Mapping[str, Instruction] = field(repr=False, compare=False, default_factory=dict)

    @property
    def root(self) -> Instruction:
        for inst in self.instructions:
            if inst.is_root:
                return inst
        return self.instructions[-1]


@dataclass(frozen=True)
class HloModule:
    name: str
    computations: Mapping[str, Computation]
    entry_name: str
    # Cost estimates of Pallas custom calls that do not carry their own (GPU), by instruction name: read from the
    # traced program (:func:`~.kernels.assign_estimates`); values are :class:`~.kernels.KernelEstimate`.
    kernel_estimates: Mapping[str, Any] = field(default_factory=dict)

    @property
    def entry(self) -> Computation:
        return self.computations[self.entry_name]


# A computation header: "[ENTRY] %name (params) -> shape {" as compiled.as_text() prints it, or "[ENTRY] name {"
# as XLA dumps and HloProto renderings print it (no signature, no '%').
_COMP_START = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$")
# An operand written without '%' (dumps, HloProto renderings): a bare name, possibly after its shape.
_BARE_OPERAND = re.compile(r"(?:^|\s)([A-Za-z_][\w.\-]*)$")
_LITERAL_WORDS = frozenset({"true", "false", "inf", "nan", "-inf"})
_LITERAL_OPS = frozenset({"constant", "parameter", "iota", "rng-bit-generator"})
_INST_HEAD = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_OPCODE = re.compile(r"([a-z][a-z0-9\-_]*)\(")
_ARRAY_SHAPE = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\](\{[^}]*\})?")


def _read_shape(text: str) -> tuple[Shape, int]:
    """Read one shape at the start of ``text``; returns it and the number of characters used."""
    if text.startswith("("):
        end = match_close(text, 0)
        inner = text[1:end].strip()
        elements = tuple(parse_shape(part) for part in split_top(inner)) if inner else ()
        return Shape("tuple", (), elements), end + 1
    m = _ARRAY_SHAPE.match(text)
    if not m:
        raise ValueError(f"not a shape: {text[:40]!r}")
    dtype = m.group(1)
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown element type {dtype!r}")
    dims_text = m.group(2).strip()
    dims: list[int] = []
    for d in dims_text.split(",") if dims_text else []:
        d = d.strip().lstrip("<=")  # dynamic dimensions print as <=N: use the bound
        if not d.isdigit():
            raise ValueError(f"bad dimension {d!r} in shape {m.group(0)!r}")
        dims.append(int(d))
    return Shape(dtype, tuple(dims)), m.end()


def parse_shape(text: str) -> Shape:
    shape, used = _read_shape(text.strip())
    if text.strip()[used:].strip():
        raise ValueError(f"trailing text after shape: {text!r}")
    return shape


def _parse_instruction(raw_line: str, line_no: int) -> Instruction:
    line = strip_comments(raw_line)
    head = _INST_HEAD.match(line)
    if not head:
        raise HloParseError(line_no, line, "expected '[ROOT] %name = shape opcode(operands), attrs'")
    rest = line[head.end():]
    try:
        shape, used = _read_shape(rest)
    except ValueError as exc:
        raise HloParseError(line_no, line, f"bad result shape: {exc}") from None
    rest = rest[used:].lstrip()
    op = _OPCODE.match(rest)
    if not op:
        raise HloParseError(line_no, line, "expected an opcode followed by '('")
    open_at = op.end() - 1
    try:
        close_at = match_close(rest, open_at)
    except ValueError as exc:
        raise HloParseError(line_no, line, f"operand list: {exc}") from None
    inside = rest[open_at + 1:close_at]
    operands: list[str] = []
    literal = ""
    for part in split_top(inside):
        names = re.findall(r"%([\w.\-]+)", part)
        bare = _BARE_OPERAND.search(part) if not names and op.group(1) not in _LITERAL_OPS else None
        if names:
            operands.append(names[-1])
        elif bare and bare.group(1).lower() not in _LITERAL_WORDS:
            operands.append(bare.group(1))
        else:
            literal = part if not literal else literal + "," + part
    attrs: dict[str, str] = {}
    tail = rest[close_at + 1:].strip()
    if tail:
        if not tail.startswith(","):
            raise HloParseError(line_no, line, f"unexpected text after operands: {tail[:40]!r}")
        for part in split_top(tail[1:]):
            if "=" not in part:
                raise HloParseError(line_no, line, f"attribute without '=': {part[:40]!r}")
            key, value = part.split("=", 1)
            attrs[key.strip()] = value.strip()
    return Instruction(
        name=head.group(2),
        opcode=op.group(1),
        shape=shape,
        operands=tuple(operands),
        attrs=attrs,
        is_root=bool(head.group(1)),
        line_no=line_no,
        literal=literal,
    )


def parse_hlo(text: str) -> HloModule:
    """Read an optimized HLO module as printed by ``compiled.as_text()``."""
    lines = text.splitlines()
    module_name = ""
    computations: dict[str, Computation] = {}
    entry_name = ""
    current: list[Instruction] | None = None
    current_name = ""
    current_entry = False
    pending: tuple[int, str] | None = None  # (first line number, text so far) of an instruction that goes on
    for line_no, line in enumerate(lines, start=1):
        stripped = line.strip()
        if current is not None and pending is not None:
            joined = pending[1] + "\n" + line
            if unclosed(strip_comments(joined)):
                pending = (pending[0], joined)
            else:
                current.append(_parse_instruction(joined, pending[0]))
                pending = None
            continue
        if current is None:
            if stripped.startswith("HloModule "):
                module_name = stripped.split()[1].rstrip(",")
                continue
            m = _COMP_START.match(stripped)
            if m:
                current, current_name, current_entry = [], m.group(2), bool(m.group(1))
            # Anything else outside a computation is module metadata (FileNames, StackFrames ...).
            continue
        if stripped == "}":
            if not current:
                raise HloParseError(line_no, line, f"computation {current_name} has no instructions")
            by_name = {inst.name: inst for inst in current}
            computations[current_name] = Computation(current_name, tuple(current), current_entry, by_name)
            if current_entry:
                entry_name = current_name
            current = None
            continue
        if not stripped:
            continue
        if unclosed(strip_comments(line)):
            pending = (line_no, line)
            continue
        current.append(_parse_instruction(line, line_no))
    if pending is not None:
        raise HloParseError(pending[0], pending[1].splitlines()[0], "the instruction's brackets are never closed")
    if current is not None:
        raise HloParseError(len(lines), lines[-1] if lines else "", f"computation {current_name} is not closed")
    if not module_name:
        raise HloParseError(1, lines[0] if lines else "", "no 'HloModule' header line")
    if not entry_name:
        raise HloParseError(len(lines), "", "no ENTRY computation")
    return HloModule(module_name, computations, entry_name)


def with_branch_shares(module: HloModule, shares: Mapping[str, tuple[float, ...] | None]) -> HloModule:
    """``module`` with these conditionals' branch shares stated (``Instruction.branch_shares``; None removes them)."""
    def share(inst: Instruction) -> Instruction:
        if inst.opcode != "conditional" or inst.name not in shares:
            return inst
        attrs = {k: v for k, v in inst.attrs.items() if k != "branch_shares"}
        given = shares[inst.name]
        if given is not None:
            attrs["branch_shares"] = ",".join(repr(float(x)) for x in given)
        return replace(inst, attrs=attrs)

    return _with_instructions(module, share)


def as_compiled(module: HloModule) -> HloModule:
    """``module`` as the compiler's cost analysis counts it: its conditionals at their costliest branch (the branch
    shares read from a trace taken out)."""
    read = {i.name: None for c in module.computations.values() for i in c.instructions if i.branch_shares}
    return with_branch_shares(module, read) if read else module


def _with_instructions(module: HloModule, change: Callable[[Instruction], Instruction]) -> HloModule:
    computations = {}
    for name, comp in module.computations.items():
        changed = [change(inst) for inst in comp.instructions]
        computations[name] = replace(comp, instructions=tuple(changed), by_name={i.name: i for i in changed})
    return replace(module, computations=computations)


def with_trip_counts(module: HloModule, trips: Mapping[str, int], source: str = "trace") -> HloModule:
    """``module`` with these while loops' trip counts stated (``known_trip_count``), as found elsewhere than in the
    compiler (``source``: "trace", the iterations that ran); ``Instruction.trip_count_source`` tells them apart."""
    def trip(inst: Instruction) -> Instruction:
        if inst.opcode != "while" or inst.name not in trips:
            return inst
        config = {**inst.backend_config, "known_trip_count": {"n": str(trips[inst.name])}}
        return replace(inst, attrs={**inst.attrs, "backend_config": json.dumps(config), "trip_count_source": source})

    return _with_instructions(module, trip)

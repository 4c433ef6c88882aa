"""Reading a serialized XSpace (what ``jax.profiler`` writes as ``*.xplane.pb``) without JAX or protobuf.

``jax.profiler.ProfileData`` reads events but not the metadata stats where a profile keeps each program's
optimized HLO (plane ``/host:metadata``, stat ``Hlo Proto``), and the ``protobuf`` package ships no schema for
XSpace. The schema is small (``tsl/profiler/protobuf/xplane.proto``), so this module reads the protobuf wire
format directly. Pure: bytes in, plain objects out, shaped like ``ProfileData`` (``planes[].lines[].events[]``
with ``name``, ``start_ns``, ``duration_ns``, ``stats``) so :func:`~.trace_events.flatten` reads both.

Field numbers (xplane.proto): XSpace{planes=1}; XPlane{id=1, name=2, lines=3, event_metadata=4 (map),
stat_metadata=5 (map), stats=6}; XLine{id=1, name=2, timestamp_ns=3, events=4, duration_ps=9,
display_name=11}; XEvent{metadata_id=1, offset_ps=2, duration_ps=3, stats=4, num_occurrences=5};
XStat{metadata_id=1, double=2, uint64=3, int64=4, str=5, bytes=6, ref=7}; XEventMetadata{id=1, name=2,
metadata=3, display_name=4, stats=5}; XStatMetadata{id=1, name=2}. HloProto{hlo_module=1}.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["XSpaceError", "XEvent", "XLine", "XPlane", "XSpace", "read_xspace", "hlo_module_protos",
           "hlo_protos_wanted"]

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"


class XSpaceError(ValueError):
    """The bytes are not a serialized XSpace."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    if pos < len(buf) and buf[pos] < 0x80:  # most keys and small numbers: one byte
        return buf[pos], pos + 1
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise XSpaceError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise XSpaceError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message: ints for varints, bytes for length-delimited. A profile's
    keys, lengths and most numbers are one byte: those are read inline, the rest by :func:`_varint`."""
    pos = 0
    end = len(buf)
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if number == 0:
            raise XSpaceError(f"field number 0 at byte {pos}")
        if wire == 0:
            if pos < end and buf[pos] < 0x80:
                value = buf[pos]
                pos += 1
            else:
                value, pos = _varint(buf, pos)
        elif wire == 2:
            if pos < end and buf[pos] < 0x80:
                length = buf[pos]
                pos += 1
            else:
                length, pos = _varint(buf, pos)
            if pos + length > end:
                raise XSpaceError(f"field {number} runs past the end ({length} bytes at {pos} of {end})")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 1:
            if pos + 8 > end:
                raise XSpaceError("truncated 64-bit field")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 5:
            if pos + 4 > end:
                raise XSpaceError("truncated 32-bit field")
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise XSpaceError(f"unsupported wire type {wire} for field {number}")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(raw: Any) -> str:
    return bytes(raw).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class XEvent:
    name: str
    display_name: str
    start_ns: float
    duration_ns: float
    stats: Mapping[str, Any]  # the event's own stats, then its metadata's where the event has none


@dataclass(frozen=True)
class XLine:
    name: str
    events: tuple[XEvent, ...]


@dataclass(frozen=True)
class XPlane:
    name: str
    lines: tuple[XLine, ...]
    # event metadata by name: (display name, stats) - the metadata plane keeps one per program
    metadata: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    stats: Mapping[str, Any] = field(default_factory=dict)  # the plane's own (device model, capabilities)


@dataclass(frozen=True)
class XSpace:
    planes: tuple[XPlane, ...]
    hostnames: tuple[str, ...] = ()

    def plane(self, name: str) -> XPlane | None:
        return next((p for p in self.planes if p.name == name), None)


def _stat(buf: bytes, stat_names: Mapping[int, str]) -> tuple[str, Any]:
    meta = 0
    value: Any = None
    ref = False
    for number, _wire, raw in _fields(buf):
        if number == 1:
            meta = raw
        elif number == 2:
            value = struct.unpack("<d", raw)[0]
        elif number == 3:
            value = raw
        elif number == 4:
            value = _signed(raw)
        elif number == 5:
            value = _text(raw)
        elif number == 6:
            value = bytes(raw)
        elif number == 7:
            value, ref = raw, True
    if ref:
        value = stat_names.get(value, value)  # a ref names another stat metadata entry (interned strings)
    return stat_names.get(meta, str(meta)), value


def _plane(buf: bytes) -> XPlane:
    name = ""
    line_bufs: list[bytes] = []
    meta_bufs: list[bytes] = []
    stat_names: dict[int, str] = {}
    stat_bufs: list[bytes] = []
    for number, _wire, raw in _fields(buf):
        if number == 6:
            stat_bufs.append(raw)
        elif number == 2:
            name = _text(raw)
        elif number == 3:
            line_bufs.append(raw)
        elif number == 4:
            meta_bufs.append(raw)
        elif number == 5:  # map entry: key=1, value=2 (XStatMetadata)
            for n, _w, v in _fields(raw):
                if n == 2:
                    sid, sname = 0, ""
                    for n2, _w2, v2 in _fields(v):
                        if n2 == 1:
                            sid = v2
                        elif n2 == 2:
                            sname = _text(v2)
                    stat_names[sid] = sname
    events_meta: dict[int, tuple[str, str, dict[str, Any]]] = {}
    for entry in meta_bufs:
        for n, _w, v in _fields(entry):
            if n != 2:
                continue
            mid, mname, display, mstats = 0, "", "", {}
            for n2, _w2, v2 in _fields(v):
                if n2 == 1:
                    mid = v2
                elif n2 == 2:
                    mname = _text(v2)
                elif n2 == 4:
                    display = _text(v2)
                elif n2 == 5:
                    k, val = _stat(v2, stat_names)
                    mstats[k] = val
            events_meta[mid] = (mname, display, mstats)
    lines = tuple(_line(b, events_meta, stat_names) for b in line_bufs)
    by_name = {mname: {"display_name": display, **mstats} for mname, display, mstats in events_meta.values() if mstats}
    plane_stats = dict(_stat(b, stat_names) for b in stat_bufs)
    return XPlane(name, lines, by_name, plane_stats)


def _line(buf: bytes, events_meta: Mapping[int, tuple[str, str, dict[str, Any]]],
          stat_names: Mapping[int, str]) -> XLine:
    name = ""
    display = ""
    timestamp_ns = 0
    event_bufs: list[bytes] = []
    for number, _wire, raw in _fields(buf):
        if number == 2:
            name = _text(raw)
        elif number == 11:
            display = _text(raw)
        elif number == 3:
            timestamp_ns = _signed(raw)
        elif number == 4:
            event_bufs.append(raw)
    events = []
    for eb in event_bufs:
        mid, offset_ps, duration_ps = 0, 0, 0
        stats: dict[str, Any] = {}
        for number, _wire, raw in _fields(eb):
            if number == 1:
                mid = raw
            elif number == 2:
                offset_ps = _signed(raw)
            elif number == 3:
                duration_ps = _signed(raw)
            elif number == 4:
                k, v = _stat(raw, stat_names)
                stats[k] = v
        mname, mdisplay, mstats = events_meta.get(mid, ("", "", {}))
        for k, v in mstats.items():
            stats.setdefault(k, v)
        events.append(XEvent(mname, mdisplay, timestamp_ns + offset_ps / 1e3, duration_ps / 1e3, stats))
    return XLine(name or display, tuple(events))


def _plane_name(buf: bytes) -> str:
    return next((_text(raw) for number, _wire, raw in _fields(buf) if number == 2), "")


def read_xspace(data: bytes, source: str = "the profile") -> XSpace:
    """Parse serialized XSpace bytes. Raises :class:`XSpaceError` naming ``source`` when they are not one."""
    try:
        planes = []
        hostnames = []
        for number, wire, raw in _fields(data):
            if number == 1 and wire == 2:
                planes.append(_plane(raw))
            elif number == 4 and wire == 2:
                hostnames.append(_text(raw))
            elif number not in (2, 3) or wire != 2:
                raise XSpaceError(f"field {number} (wire type {wire}) is not part of an XSpace")
    except XSpaceError as exc:
        raise XSpaceError(f"{source} is not a profiler XSpace (.xplane.pb): {exc}") from None
    if not planes:
        raise XSpaceError(f"{source} is not a profiler XSpace (.xplane.pb): it holds no planes")
    return XSpace(tuple(planes), tuple(hostnames))


def hlo_module_protos(space: XSpace) -> dict[str, bytes]:
    """Serialized HloModuleProto of each program the profile carries, by ``<module>(<program_id>)``.

    The metadata plane keeps one event metadata entry per program with a stat ``Hlo Proto`` holding an
    HloProto, whose field 1 is the HloModuleProto.
    """
    plane = space.plane(METADATA_PLANE)
    out: dict[str, bytes] = {}
    if plane is None:
        return out
    for name, stats in plane.metadata.items():
        raw = stats.get(HLO_PROTO_STAT)
        if not isinstance(raw, (bytes, bytearray)):
            continue
        module = next((v for n, w, v in _fields(bytes(raw)) if n == 1 and w == 2), None)
        if module is not None:
            out[name] = bytes(module)
    return out


def hlo_protos_wanted(data: bytes, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """:func:`hlo_module_protos` of the programs whose names ``wanted`` accepts, read straight from serialized XSpace
    bytes: the metadata plane alone, and of it only the entries asked for (a process that has compiled thousands of
    programs carries every one's HLO in each profile it records)."""
    out: dict[str, bytes] = {}
    for number, wire, raw in _fields(data):
        if number != 1 or wire != 2 or _plane_name(raw) != METADATA_PLANE:
            continue
        stat_names: dict[int, str] = {}
        entries = []
        for n, _w, v in _fields(raw):
            if n == 5:  # stat metadata: key=1, value=2 (XStatMetadata: id=1, name=2)
                for n2, _w2, v2 in _fields(v):
                    if n2 == 2:
                        found = dict((n3, v3) for n3, _w3, v3 in _fields(v2))
                        stat_names[int(found.get(1, 0))] = _text(found.get(2, b""))
            elif n == 4:
                entries.append(v)
        for entry in entries:
            for n, _w, v in _fields(entry):
                name = next((_text(v2) for n2, _w2, v2 in _fields(v) if n2 == 2), "") if n == 2 else ""
                if not name or not wanted(name):
                    continue
                stats = dict(_stat(v2, stat_names) for n2, _w2, v2 in _fields(v) if n2 == 5)
                proto = stats.get(HLO_PROTO_STAT)
                if isinstance(proto, (bytes, bytearray)):
                    module = next((m for a, w, m in _fields(bytes(proto)) if a == 1 and w == 2), None)
                    if module is not None:
                        out[name] = bytes(module)
    return out

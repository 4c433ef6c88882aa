"""Scanning HLO text: brackets and quoted strings, splitting at top-level separators, dropping ``/*...*/``
comments. Pure string work for :mod:`.hlo_reader`."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["after_quote", "unquoted", "match_close", "unclosed", "split_top", "strip_comments"]


def after_quote(text: str, start: int) -> int:
    """Index just past the quoted string that opens at ``text[start]`` (backslash escapes skipped)."""
    i = start + 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def unquoted(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``text`` from ``start``, skipping quoted strings (backslash escapes inside)."""
    i = start
    while i < len(text):
        if text[i] == '"':
            i = after_quote(text, i)
            continue
        yield i, text[i]
        i += 1


def match_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``text[start]``, skipping quoted strings."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = [pairs[text[start]]]
    for i, ch in unquoted(text, start + 1):
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")}]":
            if not stack or ch != stack[-1]:
                raise ValueError(f"unbalanced {ch!r} at column {i}")
            stack.pop()
            if not stack:
                return i
    raise ValueError(f"no closing bracket for {text[start]!r} at column {start}")


def unclosed(text: str) -> bool:
    """Whether a bracket opened in ``text`` (outside quoted strings) is still open at its end: an instruction
    whose text goes on over the next lines (a backend_config JSON printed with newlines, as Mosaic's is)."""
    depth = sum(1 if ch in "({[" else -1 for _, ch in unquoted(text) if ch in "({[)}]")
    return depth > 0


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and quotes."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in unquoted(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def strip_comments(line: str) -> str:
    """Drop ``/*...*/`` comments outside quoted strings: XLA writes ``/*index=5*/`` before every fifth
    element of a long tuple shape or operand list."""
    if "/*" not in line:
        return line
    out: list[str] = []
    kept_from = 0
    for i, _ in unquoted(line):
        if i < kept_from or not line.startswith("/*", i):
            continue
        end = line.find("*/", i + 2)
        out.append(line[kept_from:i])
        kept_from = len(line) if end < 0 else end + 2
    out.append(line[kept_from:])
    return "".join(out)

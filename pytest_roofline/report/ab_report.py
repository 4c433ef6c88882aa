"""``pytest-roofline ab`` shown: the terminal table, the JSON document for CI and the HTML section. Pure."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

from ..history.paired import CONFIDENCE, MIN_ROUNDS, Comparison, PairedKernel

__all__ = ["ab_lines", "ab_document", "ab_html", "worst_first"]

AB_SCHEMA_VERSION = 1


def _percent(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "-"


def ratio_cell(k: PairedKernel) -> str:
    """The median ratio with its interval, e.g. ``0.51 [0.49, 0.53]``."""
    if k.median is None:
        return "-"
    if k.low is None or k.high is None:
        return f"{k.median:.2f} [fewer than {MIN_ROUNDS} rounds]"
    return f"{k.median:.2f} [{k.low:.2f}, {k.high:.2f}]"


def verdict_cell(k: PairedKernel) -> str:
    if k.verdict == "regression":
        return f"REGRESSION (below {1 - k.max_drop:.2f})"
    if k.verdict == "improvement":
        return f"improvement (above {1 + k.max_drop:.2f})"
    if k.contended and k.undecided:
        return f"cannot judge: contended ({k.contended})"
    if k.undecided and k.low is None:
        return f"undecided (fewer than {MIN_ROUNDS} rounds ran)"
    if k.undecided:
        below = f"median below {1 - k.max_drop:.2f}, " if k.median is not None and k.median < 1 - k.max_drop else ""
        return f"undecided ({below}interval straddles {1 - k.max_drop:.2f})"
    return {"error": "ERROR", "added": "added (head only)", "removed": "removed (base only)",
            "same": "same program: not timed"}.get(k.verdict, k.verdict)


def worst_first(k: PairedKernel) -> tuple[int, float, str]:
    """The order kernels are shown in: regressions, errors, undecided (lowest median first), unchanged,
    improvements, removed, added, the same program."""
    rank = {"regression": 0, "error": 1}.get(k.verdict, 2 if k.undecided else
                                             {"unchanged": 3, "improvement": 4, "removed": 5, "added": 6}.get(
                                                 k.verdict, 7))
    return rank, k.median if k.median is not None else 9.0, k.kernel


def _notes(k: PairedKernel) -> list[str]:
    out = []
    if k.error:
        out.append(f"{k.kernel}: cannot be measured: {k.error}")
    if k.contended and not k.undecided:
        out.append(f"{k.kernel}: {k.contended}; the verdict stands on the uncontended rounds")
    changed = [f"{name} {ratio:.2f}x" for name, ratio in (("FLOPs", k.flops_ratio), ("bytes", k.bytes_ratio))
               if ratio is not None and abs(ratio - 1) > 0.01]
    if changed:
        out.append(f"{k.kernel}: the head counts other work than the base ({', '.join(changed)}); utilization "
                   f"compares efficiency, device time {k.time_ratio or 0:.2f}x")
    return out


def op_lines(k: PairedKernel) -> list[str]:
    """What the head's program does differently, op by op: in full for a regression or an improvement, one line
    for an unchanged kernel whose compiled program changed."""
    diff = k.ops_diff
    if diff is None:
        hidden = k.ops_note.startswith("not shown") and k.verdict in ("regression", "improvement")
        return [f"{k.kernel}: op by op: {k.ops_note}"] if hidden else []
    if k.verdict in ("regression", "improvement"):
        source = f" ({k.ops_note})" if k.ops_note else ""
        return [f"{k.kernel}: op by op{source}:", *("  " + line for line in diff.lines())]
    if k.verdict == "unchanged" and diff.program_changed:
        census = f"; {diff.census_change}" if diff.census_change else ""
        cost = ("whether it costs time the noise hides (undecided)" if k.undecided
                else "at no cost in time (verdict unchanged)")
        return [f"{k.kernel}: {diff.summary()}{census}, {cost}"]
    return []


def _header(c: Comparison) -> list[str]:
    head = f"{c.head_commit[:12]}{' + uncommitted changes' if c.head_dirty else ''}"
    base_s, head_s = c.side_seconds
    if c.rounds == 0:
        how = f"nothing timed: {c.stopped}; {c.seconds:.0f} s in all"
    else:
        how = (f"kernel by kernel in one long-lived pytest process per side, ABBA rounds per test (at most "
               f"{c.rounds}), {c.stopped}" if c.schedule == "kernels" else
               f"{c.rounds} rounds in alternating order (ABBA), {c.stopped}")
        how += f"; {c.seconds:.0f} s in all (waiting on each side: base {base_s:.0f} s, head {head_s:.0f} s)"
    return [f"pytest-roofline ab: base {c.base_rev} ({c.base_commit[:12]}) vs head {head} on {c.hardware or '?'}",
            how, f"ratio = head / base utilization per round: median [{CONFIDENCE:.0%} interval]; a regression when "
            "the interval lies below 1 - max_drop"]


def ab_lines(c: Comparison) -> list[str]:
    """The terminal table, regressions first."""
    kernels = sorted(c.kernels, key=worst_first)
    rows = [("kernel", "base", "head", "ratio [interval]", "verdict")]
    rows += [(k.kernel, _percent(k.base_utilization), _percent(k.head_utilization), ratio_cell(k), verdict_cell(k))
             for k in kernels]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    table = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:<{widths[3]}}  {r[4]}"
             for r in rows]
    notes = [note for k in kernels for note in (*_notes(k), *op_lines(k))]
    drops = sorted({f"{k.max_drop:g} ({k.max_drop_origin})" for k in kernels if k.max_drop_origin})
    regressed = sum(k.verdict == "regression" for k in kernels)
    end = (f"{regressed} kernel{'s' if regressed != 1 else ''} regressed" if regressed
           else "no kernel regressed")
    if c.undecided:
        end += (f"; {c.undecided} undecided (the noise hides whether {'they' if c.undecided > 1 else 'it'} "
                f"regressed; more --rounds narrow the interval, --strict fails them)")
    gate = [f"max_drop: {', '.join(drops)}"] if drops else []
    return [*_header(c), "", *table, *(["", *notes] if notes else []), "", *gate, end]


def ab_document(c: Comparison) -> dict[str, Any]:
    """The JSON form (``--json``)."""
    kernels = []
    for k in c.kernels:
        entry = dataclasses.asdict(dataclasses.replace(k, ops_diff=None))
        entry["ops_diff"] = k.ops_diff.to_dict() if k.ops_diff is not None else None
        entry["ratios"] = list(k.ratios)
        entry["interval"] = [k.low, k.high] if k.low is not None else None
        del entry["low"], entry["high"]
        kernels.append(entry)
    return {"schema_version": AB_SCHEMA_VERSION, "base": {"rev": c.base_rev, "commit": c.base_commit},
            "head": {"commit": c.head_commit, "uncommitted_changes": c.head_dirty}, "hardware": c.hardware,
            "rounds": c.rounds, "max_rounds": c.max_rounds, "order": "ABBA", "stopped": c.stopped,
            "schedule": c.schedule,
            "confidence": CONFIDENCE, "seconds": round(c.seconds, 3),
            "pytest_seconds": {"base": round(c.side_seconds[0], 3), "head": round(c.side_seconds[1], 3)},
            "regressed": c.regressed, "exit_status": c.exit_status, "kernels": kernels}


def ab_html(c: Comparison) -> str:
    """The section the HTML report opens with when made by ``ab --html``."""
    e = html.escape
    rows = []
    for k in sorted(c.kernels, key=worst_first):
        bad = " class=bad" if k.verdict in ("regression", "error") else ""
        ratios = ", ".join(f"{r:.3f}" for r in k.ratios)
        rows.append(f"<tr><td class=name>{e(k.kernel)}</td><td class=num>{_percent(k.base_utilization)}</td>"
                    f"<td class=num>{_percent(k.head_utilization)}</td><td class=num title='{e(ratios)}'>"
                    f"{e(ratio_cell(k))}</td><td{bad}><b>{e(verdict_cell(k))}</b></td>"
                    f"<td class=meta>{e('; '.join(_notes(k)) or 'max_drop from ' + k.max_drop_origin)}</td></tr>")
    meta = "<br>".join(e(line) for line in _header(c))
    return ("<h2>Base against head (pytest-roofline ab)</h2>"
            f"<p class=meta>{meta}</p><table><thead><tr><th>test [kernel]</th><th>base</th><th>head</th>"
            "<th>head/base [interval] (hover: every round)</th><th>verdict</th><th>notes</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{_ops_html(c)}")


def _ops_html(c: Comparison) -> str:
    """Per regressed or improved kernel, the ops that moved: time on each side, roofline fraction, share."""
    e = html.escape
    parts = []
    for k in c.kernels:
        diff = k.ops_diff
        if diff is None or k.verdict not in ("regression", "improvement"):
            continue
        rows = []
        for change in diff.moved[:12]:
            share = diff.share(change)
            fractions = [f"{r.utilization:.0%}" if r is not None and r.utilization is not None else "-"
                         for r in (change.base, change.head)]
            rows.append(f"<tr><td>{e(change.kind)}</td><td class=name>{e(change.name)}</td><td>{e(change.label)}</td>"
                        f"<td class=num>{change.base_s * 1e3:.3f}</td><td class=num>{change.head_s * 1e3:.3f}</td>"
                        f"<td class=num>{fractions[0]} &rarr; {fractions[1]}</td>"
                        f"<td class=num>{'-' if share is None else f'{share:.0%}'}</td></tr>")
        said = [line.strip() for line in diff.lines(0) if not line.startswith("  ...")]
        parts.append(f"<h3>{e(k.kernel)}: op by op</h3><p class=meta>{'<br>'.join(e(line) for line in said)}</p>"
                     "<table><thead><tr><th>change</th><th>op</th><th>what it is</th><th>base ms</th>"
                     "<th>head ms</th><th>roofline fraction</th><th>share of the change</th></tr></thead>"
                     f"<tbody>{''.join(rows)}</tbody></table>")
    return "".join(parts)

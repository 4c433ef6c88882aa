"""Every link in README.md and docs/ resolves: a relative link names a file of the repository, and an anchor
(``#...``) names a heading of the page it points to, made the way GitHub makes them. Links inside code blocks are
not links; web addresses are not fetched. Also: README.md stays a front page (under 400 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            out.append(line)
    return out


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.lstrip("#").strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(page.read_text(encoding="utf-8")):
        if re.match(r"#{1,6} ", line):
            base = anchor(line)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken_links(page: Path) -> list[str]:
    out = []
    for line in _prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                out.append(f"{target}: no file {_shown(where)}")
            elif fragment and where.suffix == ".md" and fragment not in anchors(where):
                out.append(f"{target}: no heading with that anchor in {_shown(where)}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_finds_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    # Constructed pages: one good link of each kind, one missing file, one missing anchor; and one in code.
    (tmp_path / "other.md").write_text("# Title\n\n## The `ab` command: two runs\n")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#the-ab-command-two-runs) [b](missing.md) [c](other.md#nowhere) [d](#top)\n"
                    "## Top\n```\n[e](also-missing.md)\n```\n[f](https://example.com/x)\n")
    assert broken_links(page) == ["missing.md: no file " + str(tmp_path / "missing.md"),
                                  "other.md#nowhere: no heading with that anchor in " + str(tmp_path / "other.md")]


def test_readme_is_a_front_page() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines < 400, f"README.md has {lines} lines: move the detail into a guide under docs/"


def test_the_development_guide_names_every_module_in_its_folder() -> None:
    # The layout block of docs/development.md: a folder's line, then its modules by name; a module added, moved
    # or renamed without the guide fails here.
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    block = text[text.index("```text\npytest_roofline/"):]
    block = block[:block.index("\n```", 8)]
    listed: dict[str, set[str]] = {}
    folder = ""
    for line in block.splitlines()[2:]:
        head = line[:26].strip()
        if head.endswith("/"):
            folder = head.rstrip("/")
            listed[folder] = set()
        elif folder and not head:
            listed[folder].update(name.strip() for name in line.split(",") if name.strip())
    package = ROOT / "pytest_roofline"
    actual = {str(d.relative_to(package)): {p.stem for p in d.glob("*.py") if p.name != "__init__.py"}
              for d in package.rglob("*/") if d.is_dir() and (d / "__init__.py").exists()}
    assert listed == {folder: modules for folder, modules in actual.items() if modules}

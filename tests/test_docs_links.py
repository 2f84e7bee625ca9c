"""Every relative link in README.md and docs/ (*.md) points at a file or folder that exists, and a
``#anchor`` into a markdown page names one of its headings (GitHub's heading ids)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.paths import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def links(text: str) -> list[str]:
    """Link targets outside fenced code blocks and inline code."""
    text = FENCE.sub("", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def heading_ids(page: Path) -> set[str]:
    """GitHub's ids: lower case, punctuation dropped (hyphens and underscores kept), spaces -> hyphens,
    repeats numbered -1, -2, ..."""
    ids: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n, candidate = 0, slug
            while candidate in ids:
                n += 1
                candidate = f"{slug}-{n}"
            ids.add(candidate)
    return ids


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in heading_ids(dest):
            broken.append(f"{target}: no such heading in {dest.name}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page):
    assert broken_links(page) == [], f"{page.relative_to(REPO_ROOT)}: broken links"


def test_the_check_finds_broken_links_and_anchors(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## The `make demo` / CI: run times\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#the-make-demo--ci-run-times) ![missing](img/x.png) "
        "[bad anchor](other.md#nothing) [web](https://example.org/x) `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
    )
    assert broken_links(page) == ["img/x.png: no such file", "other.md#nothing: no such heading in other.md"]


def test_readme_is_a_front_page():
    """Issue 35: the README stays a page a newcomer reads in minutes; logs and tables live under docs/."""
    size = len((REPO_ROOT / "README.md").read_bytes())
    assert size <= 12 * 1024, f"README.md is {size} bytes (at most 12 KB): move detail to a page under docs/"


NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (REPO_ROOT / "docs/notebooks").glob("*.ipynb")
)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[str(p.relative_to(REPO_ROOT)) for p in NOTEBOOKS])
def test_every_relative_link_in_a_notebook_resolves(notebook):
    """Before: the executed copies in docs/notebooks/ kept the source's "executed copy" link,
    ../docs/notebooks/NAME.ipynb, which from there names docs/docs/notebooks/ (issue 51)."""
    import nbformat

    cells = nbformat.read(str(notebook), as_version=4).cells
    text = "\n\n".join(c.source for c in cells if c.cell_type == "markdown")
    relative = [t for t in links(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]
    assert relative, "a notebook's header links to its other copy"
    broken = [t for t in relative if not (notebook.parent / t.partition("#")[0]).resolve().exists()]
    assert broken == [], f"{notebook.relative_to(REPO_ROOT)}: broken links"

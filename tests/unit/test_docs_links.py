"""Every link of README.md and docs/**/*.md that points into the repository resolves: the file exists,
and an anchor (`#section`) names a heading of its document, as GitHub makes them."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import REPO
from tests.support.doccommands import documents

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")


def _prose(path: Path) -> list[str]:
    """The document's lines outside code blocks."""
    lines, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of the headings: lower case, punctuation dropped, spaces as '-', repeats -1, -2."""
    found: set[str] = set()
    for line in _prose(path):
        match = HEADING.match(line)
        if not match:
            continue
        text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        name, n = slug, 0
        while name in found:
            n += 1
            name = f"{slug}-{n}"
        found.add(name)
    return found


def test_every_link_into_the_repository_resolves():
    broken = []
    for doc in documents():
        for line in _prose(doc):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                file, _, anchor = target.partition("#")
                path = (doc.parent / file).resolve() if file else doc
                where = f"{doc.relative_to(REPO)}: {target}"
                if not path.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                    broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_lists_every_tutorial():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [
        p.name for p in sorted((REPO / "docs").glob("tutorial-*.md")) if f"docs/{p.name}" not in readme
    ]
    assert not missing, missing


def test_the_readme_is_short_enough_to_follow_in_an_incident():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail into docs/"

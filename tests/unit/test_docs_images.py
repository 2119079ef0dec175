"""Every image a document shows is in the tree (the web tutorial's screenshots are rewritten only on
request, see tests/browser/test_execute_panel.py, so nothing else keeps them present)."""

from __future__ import annotations

import re

from tests.support import REPO

IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.(?:png|svg|jpg))\)")


def test_every_image_a_document_links_exists():
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    links = [(doc, target) for doc in docs for target in IMAGE_LINK.findall(doc.read_text(encoding="utf-8"))]
    assert sum(1 for doc, _ in links if doc.name == "tutorial-web.md") == 7
    missing = [
        f"{doc.relative_to(REPO)}: {target}" for doc, target in links if not (doc.parent / target).is_file()
    ]
    assert missing == []

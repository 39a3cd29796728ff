"""Every relative link of the README and docs/*.md leads somewhere: the file or directory
exists, and a `#fragment` names a heading of the page it points to (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text()):
        heading = re.match(r"#{1,6} (.+)", line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def relative_links(page: Path) -> list[str]:
    links = []
    for line in prose_lines(page.read_text()):
        links += LINK.findall(CODE_SPAN.sub("", line))
    return [link for link in links if not re.match(r"[a-z]+:", link)]  # http:, https:, mailto:


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_relative_links_lead_somewhere(page: Path) -> None:
    broken = []
    for link in relative_links(page):
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{link}: no heading #{fragment} in {target.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_anchors_follow_githubs_rules(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n## Configuration (`[backfill]` section — never a code edit)\n## `backfill plan`\n"
        "```\n# not a heading\n```\n## Notes\n## Notes\n"
    )
    assert anchors(page) == {
        "a-page",
        "configuration-backfill-section--never-a-code-edit",
        "backfill-plan",
        "notes",
        "notes-1",
    }

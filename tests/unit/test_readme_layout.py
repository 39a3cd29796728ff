"""The README's Layout table names every top-level entry of the repository and every entry of
the shared package (a subpackage, or a top-level module other than `__init__`/`__main__`),
and nothing that does not exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "layers" / "shared" / "backfill_orchestrator"
PACKAGE_ROW = ("├", "└")  # a row naming entries of the package, not of the repository
NOT_LISTED = {".gitignore"}  # git's own file, not part of the project's layout


def layout_table(readme: str) -> tuple[set[str], set[str]]:
    """The package entries and the top-level entries the README's Layout table names."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    package, top_level = set(), set()
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| path ", "| ---")):
            continue
        cell = line.split(" | ", 1)[0].removeprefix("| ")
        names = re.findall(r"`([^`]+)`", cell)
        assert names, f"a Layout row names no path: {line}"
        if cell.startswith(PACKAGE_ROW):
            package.update(names)
        else:
            top_level.update(name.split("/", 1)[0] for name in names)
    return package, top_level


def package_entries() -> set[str]:
    entries = set()
    for path in PACKAGE.iterdir():
        if path.is_dir() and any(path.glob("*.py")):  # a subpackage (a stale __pycache__ alone is not one)
            entries.add(f"{path.name}/")
        elif path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
            entries.add(path.name)
    return entries


def tracked_top_level() -> set[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the top-level entries are git's tracked files")
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True, text=True
    ).stdout
    return {name.split("/", 1)[0] for name in files.split("\0") if name} - NOT_LISTED


def test_layout_names_every_package_entry_and_nothing_else() -> None:
    listed, _ = layout_table((REPO / "README.md").read_text())
    actual = package_entries()
    assert not actual - listed, (
        f"package entries missing from the README's Layout table: {sorted(actual - listed)}"
    )
    assert not listed - actual, (
        f"the README's Layout table names package entries that do not exist: {sorted(listed - actual)}"
    )


def test_layout_names_every_top_level_entry_and_nothing_else() -> None:
    _, listed = layout_table((REPO / "README.md").read_text())
    actual = tracked_top_level()
    assert not actual - listed, (
        f"top-level entries missing from the README's Layout table: {sorted(actual - listed)}"
    )
    assert not listed - actual, (
        f"the README's Layout table names top-level entries that do not exist: {sorted(listed - actual)}"
    )


def test_the_table_parser_sees_rows_missing_and_extra() -> None:
    readme = "\n".join(
        [
            "# x",
            "",
            "## Layout",
            "",
            "| path | what |",
            "| --- | --- |",
            "| `layers/shared/backfill_orchestrator/` | the package |",
            "| ├ `config/` | config |",
            "| └ `errors.py`, `http.py` | errors; http |",
            "| `template.yaml`, `samconfig.toml` | SAM |",
            "",
            "## Next",
            "| `ignored/` | not the layout |",
        ]
    )
    assert layout_table(readme) == (
        {"config/", "errors.py", "http.py"},
        {"layers", "template.yaml", "samconfig.toml"},
    )

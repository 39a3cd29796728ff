"""`make bench`'s report (benchmarks/report.py): docs/performance.md has one generated row per
benchmark, and a run rewrites only its own row, only between the markers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def load_report():
    spec = importlib.util.spec_from_file_location("bench_report", REPO / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


report = load_report()


def test_the_performance_page_has_one_row_per_benchmark_and_is_as_generated() -> None:
    head, table, tail = report.split_report(report.REPORT.read_text())
    rows = report.parse_rows(table)
    assert set(rows) == set(report.benchmarks())
    for name, result in rows.items():
        assert result.line.startswith(f"BENCH {name} ") or result.line == report.NOT_RUN, (name, result.line)
    assert table == report.render(rows, report.benchmarks()), (
        "the table differs from what benchmarks/report.py writes: run it with --no-run (or `make bench`)"
    )


BENCH_SCRIPT = '''"""Fake benchmark: counts to three.

More words."""
print("warming up")
print("BENCH fake first=1")
print("BENCH fake n=3 ok=true")
print("done")
'''

PAGE = f"""# Performance

Prose before.

{report.BEGIN}
{report.HEADER[0]}
{report.HEADER[1]}
| `fake.py` | Counts to three | `BENCH fake n=2` | 3.0 on 2 CPUs | 2026-01-01 |
| `other.py` | Another | `BENCH other x=1` | 1.0 on 2 CPUs | 2026-01-02 |
| `gone.py` | A benchmark since removed | `BENCH gone y=1` | 1.0 on 2 CPUs | 2026-01-02 |
{report.END}

Prose after.
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "fake.py").write_text(BENCH_SCRIPT)
    (tmp_path / "other.py").write_text('"""Other benchmark: another one."""\nprint("BENCH other x=2")\n')
    (tmp_path / "new.py").write_text('"""New benchmark: never run; its row says so."""\n')
    return tmp_path


def test_a_run_rewrites_its_own_row_and_keeps_the_rest(folder: Path, tmp_path: Path, capsys) -> None:
    page = tmp_path / "performance.md"
    page.write_text(PAGE)
    result = report.run(folder / "fake.py")
    assert "warming up" in capsys.readouterr().out  # the benchmark's output is passed through
    assert result.line == "BENCH fake n=3 ok=true"  # the last BENCH line
    assert result.load.endswith(" CPUs") and len(result.date) == 10
    report.rewrite({"fake": result}, report=page, folder=folder)
    text = page.read_text()
    assert text.startswith("# Performance\n\nProse before.\n\n") and text.endswith("\nProse after.\n")
    rows = report.parse_rows(report.split_report(text)[1])
    assert rows["fake"] == result
    assert rows["other"] == report.Result("BENCH other x=1", "1.0 on 2 CPUs", "2026-01-02")  # not run: kept
    assert rows["new"].line == report.NOT_RUN and "gone" not in rows
    assert (
        f"| `fake.py` | Counts to three | `BENCH fake n=3 ok=true` | {result.load} | {result.date} |" in text
    )
    assert "| `new.py` | Never run; its row says so |" in text


def test_a_failing_benchmark_gives_no_result(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text('print("BENCH crash n=1")\nraise SystemExit(3)\n')
    (tmp_path / "silent.py").write_text('print("nothing to report")\n')
    assert report.run(tmp_path / "crash.py") is None
    assert report.run(tmp_path / "silent.py") is None


@pytest.mark.parametrize(
    "text",
    [
        "no markers at all",
        f"{report.END}\n{report.BEGIN}\n",
        f"{report.BEGIN}\n| a row | of nothing |\n{report.END}\n",
    ],
)
def test_a_malformed_page_is_refused_with_the_reason(text: str, tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    page.write_text(text)
    with pytest.raises(report.ReportError):
        report.rewrite({}, report=page, folder=tmp_path)
    assert page.read_text() == text

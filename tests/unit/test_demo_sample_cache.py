"""The demo's sample warehouse, kept once per virtualenv (`backfill_local.demo_spark.SampleCache`):
what a later demo copies is byte for byte what was stored, another digest is another entry,
and only the newest entry is kept. No JVM: the warehouse here is a few files."""

from __future__ import annotations

from pathlib import Path

from backfill_local.demo_spark import CleanSample, SampleCache, SampleShape, sample_digest

JUNE = SampleShape(start="2021-06-01", days=21)


def tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()
    }


def warehouse(root: Path) -> Path:
    for name, body in {
        "raw/orders/day=2021-06-01/hour=0/feed=web/part-0.json": b'{"order_id": "a"}\n',
        "processed/orders/day=2021-06-01/hour=0/feed=web/part-0.parquet": b"PAR1...PAR1",
        "processed/orders/_SUCCESS": b"",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return root


def test_a_stored_sample_is_copied_back_whole(tmp_path: Path) -> None:
    cache = SampleCache(JUNE, root=tmp_path / "cache")
    assert cache.load(tmp_path / "empty") is None  # nothing stored yet
    made = warehouse(tmp_path / "made")
    cache.store(made, CleanSample(raw_rows=10, written={"orders": 10}, cached=False))

    loaded = cache.load(tmp_path / "copy")

    assert loaded == CleanSample(raw_rows=10, written={"orders": 10}, cached=True)
    assert tree(tmp_path / "copy") == tree(made)


def test_another_sample_is_another_entry_and_only_the_newest_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = SampleCache(JUNE, root=root)
    second = SampleCache(SampleShape(start="2021-06-01", days=9), root=root)
    assert first.entry != second.entry
    assert (
        SampleCache(SampleShape(start="2021-06-01", days=21, hours_per_day=12), root=root).entry
        != first.entry
    )
    assert sample_digest(JUNE) == sample_digest(JUNE)
    first.store(warehouse(tmp_path / "a"), CleanSample(raw_rows=1, written={}, cached=False))
    second.store(warehouse(tmp_path / "b"), CleanSample(raw_rows=2, written={}, cached=False))

    assert [path.name for path in root.iterdir()] == [second.entry.name]
    assert first.load(tmp_path / "gone") is None


def test_an_entry_without_its_counts_is_not_used(tmp_path: Path) -> None:
    """A copy cut short (the counts are written last, in the same rename) is never read."""
    cache = SampleCache(JUNE, root=tmp_path / "cache")
    (cache.entry / "warehouse").mkdir(parents=True)
    assert cache.load(tmp_path / "copy") is None


def test_a_reference_is_linked_to_the_cache_and_a_working_copy_is_not(tmp_path: Path) -> None:
    """The reference is only read: hard links cost no copy. The working warehouse is written
    by the backfill, so it gets files of its own, and the cache stays as stored."""
    cache = SampleCache(JUNE, root=tmp_path / "cache")
    cache.store(warehouse(tmp_path / "made"), CleanSample(raw_rows=1, written={}, cached=False))
    cache.load(tmp_path / "reference", linked=True)
    cache.load(tmp_path / "working")
    name = "processed/orders/day=2021-06-01/hour=0/feed=web/part-0.parquet"
    cached = cache.entry / "warehouse" / name
    assert (tmp_path / "reference" / name).stat().st_ino == cached.stat().st_ino
    assert (tmp_path / "working" / name).stat().st_ino != cached.stat().st_ino
    (tmp_path / "working" / name).write_bytes(b"rewritten")
    assert cached.read_bytes() == b"PAR1...PAR1"

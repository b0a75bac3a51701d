"""Result files are replaced whole or not at all (benchmarking/files.py): a failed write
leaves the previous file as it was and no partial file, and says which path and why."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from sm_peagle.benchmarking.export import RequestExporter
from sm_peagle.benchmarking.files import OutputNotWritten, partial_path, write_atomic


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    target.write_text("old\n")
    assert write_atomic(target, "new\n") == target
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_a_full_disk_keeps_the_previous_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "r.csv"
    target.write_text("previous results\n")
    real = Path.write_text

    def full_disk(self: Path, data: str, *a, **k) -> int:
        real(self, data[: len(data) // 2], *a, **k)  # half written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OutputNotWritten) as info:
        write_atomic(target, "x" * 1000)
    monkeypatch.undo()
    assert target.read_text() == "previous results\n"
    assert not partial_path(target).exists()
    assert info.value.exit_code == 1
    assert f"cannot write {target}: No space left on device" in info.value.one_line()


def test_an_interrupted_export_keeps_the_previous_file_and_what_it_measured(
    tmp_path: Path,
) -> None:
    target = tmp_path / "requests.jsonl"
    target.write_text('{"previous": true}\n')
    exporter = RequestExporter(target)
    with exporter.partial.open("a") as f:  # one level's lines, then Ctrl-C: no finish()
        f.write('{"measured": 1}\n')
    assert target.read_text() == '{"previous": true}\n'
    assert exporter.partial.read_text() == '{"measured": 1}\n'
    # A run that completes puts its file in place, whole.
    exporter.finish()
    assert target.read_text() == '{"measured": 1}\n' and not exporter.partial.exists()

"""peagle finds plugins by entry point without importing `importlib.metadata` on the plain
path (it costs more than `peagle --help`'s own work): `plugins.entry_points` reads each
distribution's entry_points.txt on sys.path. What it finds must be what
`importlib.metadata` finds, the expected value here, for every group in this environment."""

from __future__ import annotations

import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from sm_peagle import plugins

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "fixtures" / "example_plugin"


def by_metadata(group: str) -> list[tuple[str, str]]:
    return sorted((ep.name, ep.value) for ep in metadata.entry_points(group=group))


def test_every_group_is_found_as_importlib_metadata_finds_it(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    groups = set(metadata.entry_points().groups)
    assert {"console_scripts", "sm_peagle.plugins"} <= groups  # the comparison has content
    for group in sorted(groups):
        assert sorted(plugins.entry_points(group)) == by_metadata(group), group
    assert ("example", "peagle_example.plugin:PLUGIN") in plugins.entry_points("sm_peagle.plugins")


def test_the_first_distribution_of_a_name_on_the_path_wins(monkeypatch, tmp_path) -> None:
    # Two copies of one distribution: importlib.metadata keeps the first on sys.path.
    for where, value in (("a", "first:PLUGIN"), ("b", "second:PLUGIN")):
        info = tmp_path / where / "peagle_dup-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: peagle-dup\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[peagle.test]\ndup = {value}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    assert plugins.entry_points("peagle.test") == by_metadata("peagle.test")
    assert plugins.entry_points("peagle.test") == [("dup", "first:PLUGIN")]


def test_a_zip_on_the_path_is_left_to_importlib_metadata(monkeypatch, tmp_path) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("peagle_zipped-1.0.dist-info/METADATA", "Name: peagle-zipped\nVersion: 1.0\n")
        z.writestr("peagle_zipped-1.0.dist-info/entry_points.txt", "[peagle.test]\nz = m:P\n")
    monkeypatch.syspath_prepend(str(archive))
    asked: list[str] = []
    real = plugins._from_importlib_metadata

    def spy(group: str) -> list[tuple[str, str]]:
        asked.append(group)
        return real(group)

    monkeypatch.setattr(plugins, "_from_importlib_metadata", spy)
    assert plugins.entry_points("peagle.test") == [("z", "m:P")] == by_metadata("peagle.test")
    assert asked == ["peagle.test"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("os.path:join", "join"), ("os:path.join", "join"), ("os.path:join [extra]", "join")],
)
def test_an_entry_point_value_loads_as_importlib_loads_it(value: str, expected: str) -> None:
    assert plugins._load(value).__name__ == expected

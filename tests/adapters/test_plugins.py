"""Third-party adapters: a tiny plug-in package, really installed, is found through the entry-point group."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).parent / "plugin"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in installed by pip into a folder of its own (the test environment is left as it was)."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("build") / "plugin"
    shutil.copytree(PLUGIN, source)  # setuptools builds in the source folder: keep the repository clean
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)],
                   check=True, capture_output=True, cwd=source,
                   env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return target


def eebench(site: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "eebench.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


def test_an_installed_plugin_is_listed_and_a_broken_one_reported(plugin_site: Path) -> None:
    result = eebench(plugin_site, "formats", "--format", "json")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    demo = next(row for row in listing["formats"] if row["name"] == "demo-moves")
    assert demo["origin"] == "plug-in eebench_plugin_demo:DemoMovesAdapter from eebench-plugin-demo"
    assert demo["never_carries"] == ["reasoning", "observation", "tokens_in", "tokens_out", "latency_ms",
                                     "timestamp"]
    assert listing["problems"] == ["plug-in eebench_plugin_demo:DoesNotExist from eebench-plugin-demo: cannot load: "
                                   "AttributeError: module 'eebench_plugin_demo' has no attribute 'DoesNotExist'"]


def test_a_plugin_converts_by_name_and_by_auto_detection(plugin_site: Path, tmp_path: Path) -> None:
    log = tmp_path / "run7.moves"
    log.write_text("#moves v1\n0\t<action>Up</action>\n1\tNot sure yet.\n2\tmove(direction='down')\n")
    for fmt in ("demo-moves", "auto"):
        out = tmp_path / f"{fmt}.jsonl"
        result = eebench(plugin_site, "convert", log, "--from", fmt, "--instance", "x/y", "--out", out)
        assert result.returncode == 0, result.stderr
        [trajectory] = [json.loads(line) for line in out.read_text().splitlines()]
        assert trajectory["id"] == "demo/run7" and "env" not in trajectory
        assert [s["action"] for s in trajectory["steps"]] == ["up", None, "down"]
        assert trajectory["source"]["format"] == "demo-moves"


def test_without_the_plugin_the_format_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "x.moves").write_text("#moves v1\n0\tup\n")
    result = eebench(Path(tmp_path), "convert", tmp_path / "x.moves", "--from", "demo-moves", "--out",
                     tmp_path / "o.jsonl")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --from: unknown format 'demo-moves'; known: auto, ")

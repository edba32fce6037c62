"""Logged trajectories (worlds eebench cannot simulate) in the report and in `plot replay`: the states read from
the log, their visit depths and ECC, beside a simulated trajectory in the same results file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from eebench.report import load_results, write_report
from eebench.report.replay import Maps, replay_documents
from tests.conftest import rows, write_jsonl
from tests.evaluator.test_coverage_store import CHECKPOINTS, bench, logged  # noqa: F401  (bench: a fixture)
from tests.evaluator.test_grade import SOLVE, trajectory

ROOMS = ["Kitchen", "Hall", "Kitchen", "Cellar"]


@pytest.fixture
def mixed(cli: Any, bench: Path, tmp_path: Path) -> Path:  # noqa: F811
    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    text = logged("text", ROOMS)
    text["steps"].insert(2, {"action": "look"})   # no room in the observation: the state stays Hall
    runs = write_jsonl(tmp_path / "runs.jsonl", [trajectory("grid", SOLVE), text])
    db = tmp_path / "r.duckdb"
    cli("grade", runs, "--bench", bench, "--checkpoints", cp, "--db", db)
    return db


def test_a_logged_replay_is_its_states_their_depths_and_ecc(mixed: Path) -> None:
    docs = {d["id"]: d for d in replay_documents(load_results(mixed), Maps(None, load_results(mixed)))}
    doc = docs["text"]
    assert doc["env"] == "logged"
    assert doc["state"] == ["Kitchen", "Hall", "Hall", "Kitchen", "Cellar"]
    assert doc["depth"] == [0, 0, 1, 1, 0]
    assert doc["action"] == ["go", "go", "look", "go", "go"]
    assert doc["ecc"] == [v for (v,) in rows(mixed, "SELECT ecc FROM steps WHERE trajectory_id = 'text' ORDER BY t")]
    assert doc["text"]["observation"][0] == "-= Kitchen =-"
    assert docs["grid"]["x"] and "state" not in docs["grid"]   # the simulated one keeps its map replay


def test_report_and_plot_replay_of_a_logged_trajectory(cli: Any, mixed: Path, tmp_path: Path) -> None:
    cli("report", "--db", mixed, "-o", tmp_path / "r.html")
    assert (tmp_path / "r.html").stat().st_size > 0
    for step in ([], ["--step", "2"]):
        out = tmp_path / f"text{len(step)}.png"
        cli("plot", "replay", "--db", mixed, "--trajectory", "text", "--out", out, *step)
        assert out.read_bytes().startswith(b"\x89PNG")


def test_a_logged_replay_in_the_browser(mixed: Path, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    out = write_report(mixed, tmp_path / "r.html").path
    browser.get_log("browser")   # only this page's messages below
    browser.get(out.as_uri() + "#t=text")
    deadline = time.monotonic() + 10
    points = "const p = document.querySelector('#path polyline'); return p ? p.points.numberOfItems : 0"
    while browser.execute_script(points) != 5:
        assert time.monotonic() < deadline, "the replay of text did not open at its last step"
        time.sleep(0.02)
    assert [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#map > text")][:3] == ["Kitchen", "Hall", "Cellar"]
    for k in (0, 2, 4):
        browser.execute_script("const s = document.getElementById('slider'); s.value = arguments[0]; "
                               "s.dispatchEvent(new Event('input'));", k)
        assert browser.execute_script(points) == k
    assert browser.find_element(By.ID, "step-label").text == \
        'step 4 of 5 (t = 3): action "go", state "Kitchen" (earlier visits: 1)'
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-depth polyline")
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-ecc polyline")
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_a_logged_plot_replay_draws_ecc_from_0_to_1_as_every_replay_does(mixed: Path) -> None:
    """Its ECC axis followed the data (0.33 to 1 here), where the page's and the simulated worlds' are 0 to 1."""
    from eebench.report.figures import KINDS

    results = load_results(mixed, "trajectory_id = 'text'")
    figure = KINDS["replay"](results, {"seed": 0, "step": None, "bench": None, "model": None})
    ecc = next(ax for ax in figure.axes if ax.get_ylabel() == "ECC")
    assert ecc.get_ylim() == (-0.02, 1.02)


def test_a_logged_trajectory_has_no_map_to_ask_bench_for(mixed: Path, bench: Path) -> None:  # noqa: F811
    """A logged world has no instance eebench could draw: the notes spoke of its map all the same (`pass --bench
    to draw the instances` without --bench, `1 instance(s) not found in BENCH` with it)."""
    text = load_results(mixed, "trajectory_id = 'text'")
    assert Maps(None, text).docs == {} and text.notes == []
    assert Maps(bench, text).docs == {} and text.notes == []
    both = load_results(mixed)
    Maps(bench, both)
    assert both.notes == []   # the grid trajectory's instance is there; the logged one is not looked for
    Maps(None, both)
    assert both.notes == ["maps show only the cells the agents visited: pass --bench to draw the instances"]

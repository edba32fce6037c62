"""The report in a real browser (headless Chromium): no console errors, the table, Figure 1, the replay's slider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from eebench.report import write_report
from tests.report.conftest import Run

TRAJECTORY = "model-d/default/seed-0/park2026-main/high-large/seed-0"


@pytest.fixture(scope="module")
def opened(graded: Run, browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("browser") / "report.html"
    write_report(graded.db, out, bench=graded.bench)
    browser.get(out.as_uri())
    browser.get_log("browser")   # start the console log afresh for this page
    return browser


def _sql(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _open_replay(driver: Any, trajectory_id: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.ID, "traj-filter").send_keys(trajectory_id)
    driver.find_element(By.CSS_SELECTOR, "#traj-table tbody tr").click()
    WebDriverWait(driver, 10).until(
        lambda d: trajectory_id in d.find_element(By.ID, "replay-title").text)


def _set_slider(driver: Any, k: int) -> None:
    driver.execute_script("const s = document.getElementById('slider'); s.value = arguments[0]; "
                          "s.dispatchEvent(new Event('input', {bubbles: true}));", k)


def _segments(driver: Any) -> int:
    return driver.execute_script("return document.querySelectorAll('#path line.seg').length")


def test_summary_table_has_a_row_per_group_of_the_view(graded: Run, opened: Any) -> None:
    from selenium.webdriver.common.by import By

    rows = opened.find_elements(By.CSS_SELECTOR, "#summary-table tbody tr")
    view = _sql(graded.db, "SELECT agent_name, model, coalesce(prompt, '\u2013'), episodes FROM agent_summary")
    shown = [tuple(td.text for td in r.find_elements(By.CSS_SELECTOR, "td")[:5]) for r in rows]
    assert [(s[0], s[1], s[2], int(s[4])) for s in shown] == view
    # the numbers shown are the view's, to the digits shown
    rates = _sql(graded.db, "SELECT success_rate, mean_explore_error FROM agent_summary")
    for row, (success, explore) in zip(rows, rates, strict=True):
        cell = row.find_element(By.CSS_SELECTOR, 'td[data-key="success"]').text.splitlines()[0]
        assert cell == f"{success:.3f}"
        cell = row.find_element(By.CSS_SELECTOR, 'td[data-key="explore_error"]').text.splitlines()[0]
        assert cell == f"{explore:.3f}"


def test_sorting_by_a_column(opened: Any) -> None:
    from selenium.webdriver.common.by import By

    header = opened.find_element(By.CSS_SELECTOR, '#summary-table th[data-key="explore_error"]')
    header.click()
    values = [float(td.get_attribute("data-value")) for td in
              opened.find_elements(By.CSS_SELECTOR, '#summary-table td[data-key="explore_error"]')]
    assert values == sorted(values) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    values = [float(td.get_attribute("data-value")) for td in
              opened.find_elements(By.CSS_SELECTOR, '#summary-table td[data-key="explore_error"]')]
    assert values == sorted(values, reverse=True)


def test_figure_one_has_one_point_per_model(graded: Run, opened: Any) -> None:
    from selenium.webdriver.common.by import By

    models = [m for (m,) in _sql(graded.db, "SELECT DISTINCT coalesce(model, agent_name) FROM trajectories ORDER BY 1")]
    for panel in ("fig1-explore", "fig1-exploit"):
        points = opened.find_elements(By.CSS_SELECTOR, f"#{panel} circle.point")
        assert sorted(p.get_attribute("data-model") for p in points) == models
        assert "R\u00b2 = " in opened.find_element(By.CSS_SELECTOR, f"#{panel} text.fit-label").text


def test_slider_draws_k_segments_and_shows_step_k_case(graded: Run, opened: Any) -> None:
    from selenium.webdriver.common.by import By

    _open_replay(opened, TRAJECTORY)
    steps = _sql(graded.db, f"SELECT case_id, error FROM steps WHERE trajectory_id = '{TRAJECTORY}' ORDER BY t")
    n = len(steps)
    assert _segments(opened) == n   # opened at its last step
    for k in (0, 1, 7, n // 2, n - 1, n):
        _set_slider(opened, k)
        assert _segments(opened) == k
        case = opened.find_element(By.ID, "step-case")
        if k == 0:
            assert "step 0 of" in opened.find_element(By.ID, "step-label").text
            continue
        case_id, error = steps[k - 1]
        assert case.get_attribute("data-case") == str(case_id)
        assert case.text.startswith(f"case {case_id} ")
        assert opened.find_element(By.ID, "step-error").text.startswith("\u00d7 error" if error else "no error")
    # the error marks drawn up to step k are the errors of steps 1..k
    k = n // 2
    _set_slider(opened, k)
    marks = opened.execute_script("return document.querySelectorAll('#marks path.err-mark').length")
    assert marks == sum(e for _, e in steps[:k])


def test_arrow_keys_and_buttons_step(opened: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _set_slider(opened, 5)
    opened.find_element(By.TAG_NAME, "h1").click()   # focus out of the filter box
    ActionChains(opened).send_keys(Keys.ARROW_RIGHT).send_keys(Keys.ARROW_RIGHT).perform()
    assert _segments(opened) == 7
    ActionChains(opened).send_keys(Keys.ARROW_LEFT).perform()
    assert _segments(opened) == 6
    opened.find_element(By.ID, "prev").click()
    assert _segments(opened) == 5
    opened.find_element(By.ID, "first").click()
    assert _segments(opened) == 0


def test_replay_shows_the_logs_text(opened: Any) -> None:
    from selenium.webdriver.common.by import By

    _set_slider(opened, 3)
    raw = opened.find_element(By.CSS_SELECTOR, "#step-text pre.text-raw").text
    assert raw.startswith("I will move ")
    assert opened.find_element(By.CSS_SELECTOR, "#step-text pre.text-observation").text == "t=3"


def test_a_changed_address_opens_its_replay(opened: Any) -> None:
    """`#t=ID` opened a replay only when the page loaded: a link within the page or an edited address did not."""
    from selenium.webdriver.support.ui import WebDriverWait

    other = TRAJECTORY.replace("model-d", "model-b")
    opened.execute_script("location.hash = '#t=' + encodeURIComponent(arguments[0])", other)
    WebDriverWait(opened, 10).until(lambda d: d.execute_script(
        "return document.getElementById('replay-title').textContent").startswith(other + " "))


def test_a_hand_written_link_that_escapes_nothing_opens_nothing_and_throws_nothing(opened: Any) -> None:
    """`#t=%` threw an uncaught URIError (decodeURIComponent of a `%` that escapes nothing)."""
    opened.get_log("browser")
    opened.execute_script("location.hash = '#t=100%'")
    opened.execute_script("return 0")   # (hashchange has run)
    assert [e for e in opened.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_no_console_errors(opened: Any) -> None:
    problems = [e for e in opened.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert problems == []


def test_figure_one_legend_and_colours_are_the_drawn_models(with_rooms_models: Path, browser: Any,
                                                            tmp_path: Path) -> None:
    """With rooms models (no point) in the file, the legend listed them and two drawn models shared a colour."""
    from selenium.webdriver.common.by import By

    db = with_rooms_models
    out = tmp_path / "mixed.html"
    write_report(db, out)
    browser.get(out.as_uri())
    points = browser.find_elements(By.CSS_SELECTOR, "#fig1-explore circle.point")
    drawn = sorted(p.get_attribute("data-model") for p in points)
    legend = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#figure1 ul.legend li")]
    assert len(drawn) == 6 and sorted(legend) == drawn
    colours = {p.get_attribute("data-model"): p.get_attribute("stroke") for p in points}
    assert len(set(colours.values())) == len(colours)
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_a_long_label_does_not_widen_the_page_past_a_laptop(graded: Run, browser: Any, tmp_path: Path) -> None:
    """A model named in 300 characters made the page 2,535 px wide (table cells, legend, the model picker and the
    point labels of Figure 1)."""
    import shutil

    db = tmp_path / "long.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trajectories SET model = 'm' || repeat('x', 300) WHERE model = 'model-a'")
    out = tmp_path / "report.html"
    write_report(db, out, bench=graded.bench)
    browser.set_window_size(1280, 900)
    browser.get(out.as_uri())
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
    labels = browser.execute_script("return [...document.querySelectorAll('#fig1-explore .point-label')]"
                                    ".map((t) => t.textContent)")
    assert max(map(len, labels)) == 32 and any(label.startswith("mxxx") and "\u2026" in label for label in labels)



def test_the_pages_figures_name_models_as_the_plots_do(graded: Run, browser: Any, tmp_path: Path) -> None:
    """The README's rule for every figure: control characters drawn escaped, names that shorten alike told apart
    by #2, #3. The page drew a bell character as is (nothing to see) and two long names as one label."""
    import shutil

    from eebench.report.figures import labels

    long = "anthropic/claude-3-5-sonnet-20241022@temperature=0.7,top_p=0.95,max_tokens=4096-v0"
    db = tmp_path / "names.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute(f"""UPDATE trajectories SET model = CASE model WHEN 'model-a' THEN 'bell' || chr(7)
            WHEN 'model-b' THEN '{long.replace("0.7", "0.5")}' WHEN 'model-c' THEN '{long}' ELSE model END""")
    out = tmp_path / "report.html"
    write_report(db, out)
    browser.get(out.as_uri())
    drawn = browser.execute_script("return [...document.querySelectorAll('#fig1-explore .point-label')]"
                                   ".map((t) => t.textContent)")
    models = browser.execute_script("return [...document.querySelectorAll('#fig1-explore .point')]"
                                    ".map((c) => c.getAttribute('data-model'))")
    assert drawn == labels(models)
    assert "bell\\x07" in drawn and len(set(drawn)) == len(drawn)

@pytest.mark.parametrize("n", [50, pytest.param(100_000, marks=pytest.mark.slow)])
def test_a_replay_of_100000_steps_opens_and_steps(browser: Any, tmp_path: Path, n: int) -> None:
    """Math.max(...steps) overflowed the call stack past about 60,000 steps (the replay never opened, one console
    error), and each move of the slider redrew all k segments (seconds a step); the slider now adds or cuts the
    segments between two steps (checked at 50 steps too, in the fast suite; 100,000 take 15 s)."""
    import time

    from eebench.evaluator import Bench, grade_files
    from tests.conftest import instance_doc, write_json, write_jsonl

    write_json(tmp_path / "bench" / "long.json", instance_doc(["...", "..."], [0, 0], [("G", [2, 1], [])], "G",
                                                              budget=n, instance_id="test/long"))
    steps = [{"action": "down" if t % 2 == 0 else "up"} for t in range(n)]   # never reaches the goal
    write_jsonl(tmp_path / "long.jsonl", [{"eebench": "trajectory/1", "id": "long", "instance": "test/long",
                                           "steps": steps}])
    grade_files([tmp_path / "long.jsonl"], Bench(tmp_path / "bench"), tmp_path / "long.duckdb")
    out = write_report(tmp_path / "long.duckdb", tmp_path / "long.html", bench=tmp_path / "bench").path
    browser.get_log("browser")
    browser.get(out.as_uri() + "#t=long")
    deadline = time.monotonic() + 60
    while _segments(browser) != n:
        assert time.monotonic() < deadline, "the replay did not open"
        time.sleep(0.2)
    for k in (n - 1, 3, 4):
        _set_slider(browser, k)
        assert _segments(browser) == k
    # the cells visited up to step k are shaded, those of later steps no longer
    assert browser.execute_script("return document.querySelectorAll('#seen rect.seen').length") == 2
    _set_slider(browser, 0)
    assert browser.execute_script("return document.querySelectorAll('#seen rect.seen').length") == 1
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_a_model_has_one_colour_of_its_own_in_every_figure(graded: Run, browser: Any, tmp_path: Path) -> None:
    """A rooms model without a Figure 1 point took the palette's colour at its place among the rooms models, which
    could be the colour of another model's Figure 1 point: two models in one colour in the gaps figure."""
    import shutil

    from selenium.webdriver.common.by import By

    db = tmp_path / "mixed.duckdb"
    shutil.copyfile(graded.db, db)
    out = tmp_path / "grid.html"
    write_report(db, out)
    browser.get(out.as_uri())
    points = browser.find_elements(By.CSS_SELECTOR, "#fig1-explore circle.point")
    drawn = [p.get_attribute("data-model") for p in points]
    shared, new = drawn[1], drawn[1] + "~rooms"   # rooms models [shared, new]: the new one sorts second
    with duckdb.connect(str(db)) as con:
        for k, model in enumerate((shared, new)):
            con.execute("INSERT INTO trajectories BY NAME SELECT ? AS trajectory_id, 'r/x' AS instance_id, "
                        "'rooms' AS env, 'agent' AS agent_name, ? AS model, 'default' AS prompt, 3 AS n_steps, "
                        "'gaps/1' AS metric_version, 'end_of_log' AS end_reason, 0 AS ignored_actions, "
                        "now()::TIMESTAMP AS graded_at, 'r.jsonl' AS source_file, '0' AS eebench_version",
                        [f"rooms/{k}", model])
            con.execute("INSERT INTO episodes BY NAME SELECT ? AS trajectory_id, 0 AS episode, 3 AS n_steps, "
                        "1.0 AS agent_return, 2.0 AS exploit_return, 4.0 AS max_return, 0.75 AS total_gap, "
                        "0.5 AS explore_gap, 0.25 AS exploit_gap, 0.5 AS coverage, 'exhaustive' AS solver, "
                        "'optimal' AS solver_status", [f"rooms/{k}"])
    write_report(db, out)
    browser.get(out.as_uri())
    colour_of: dict[str, set[str]] = {}
    for css, attribute in (("#fig1-explore circle.point", "stroke"), ("#gaps-explore_gap circle.gap-point", "fill")):
        for point in browser.find_elements(By.CSS_SELECTOR, css):
            colour_of.setdefault(point.get_attribute("data-model"), set()).add(point.get_attribute(attribute))
    assert {shared, new} <= colour_of.keys() and len(colour_of) <= 8   # (the palette has 8 colours)
    assert all(len(colours) == 1 for colours in colour_of.values()), colour_of
    assert len({next(iter(c)) for c in colour_of.values()}) == len(colour_of), colour_of
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []

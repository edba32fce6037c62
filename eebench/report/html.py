"""`eebench report`: one self-contained HTML file (inline script, style and data; no network) from a results file.

The page's data is one JSON block read at load (tables and figures). Each trajectory's replay is its own
deflated, base64 JSON string, decoded only when the trajectory is opened, so the page paints before any replay
is parsed and a large run stays small on disk.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from eebench import __version__
from eebench.documents import atomic_file
from eebench.errors import InputError
from eebench.instances import Bench
from eebench.report.data import METRICS, Results, encode_block, load_results, refuse_writing_over
from eebench.report.kinds import LABEL_CHARS
from eebench.report.replay import Maps, replay_documents
from eebench.report.stats import BOOTSTRAP_RESAMPLES, CONFIDENCE, Estimate, Fit

REPORT_KIND = "report/1"   # the embedded data's layout; tests and tools reading the HTML check it


class Written(NamedTuple):
    path: Path
    trajectories: int
    bytes: int
    seconds: float


def _estimate(e: Estimate) -> list[float | None] | None:
    return None if e.value is None else [e.value, e.low, e.high, e.n]


def _fit(f: Fit | None) -> dict[str, Any] | None:
    return None if f is None else {"slope": f.slope, "intercept": f.intercept, "r2": f.r2, "n": f.n}


def page_data(results: Results, seed: int, maps: Maps) -> dict[str, Any]:
    """Everything the page shows except the replays, as one JSON-ready document."""
    rows = results.trajectories
    fig1 = results.figure_one(seed)
    summaries = results.summaries(seed)
    return {
        "eebench": REPORT_KIND,
        # the results file by its name, as the title: the page does not depend on how its path was typed
        "db": results.db.name, "where": results.where, "meta": results.meta, "notes": results.notes,
        "graded": results.graded, "version": __version__,
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "confidence": CONFIDENCE, "seed": seed},
        "label_chars": LABEL_CHARS,
        "metrics": [{"column": m.column, "label": m.label, "better": m.better.value, "view": m.view_column}
                    for m in results.metrics],
        "summary": [{"labels": s.labels, "episodes": s.episodes, "steps_success": s.mean_steps_success,
                     "est": {k: _estimate(v) for k, v in s.estimates.items()}} for s in summaries],
        "figure1": {"floor": fig1.floor, "explore_fit": _fit(fig1.explore_fit), "exploit_fit": _fit(fig1.exploit_fit),
                    "points": [{"model": p.model, "episodes": p.episodes, "success": _estimate(p.success),
                                "explore": _estimate(p.explore), "exploit": _estimate(p.exploit)}
                               for p in fig1.points]},
        "prompts": [{"model": model, "prompt": prompt, "episodes": n, "est": {k: _estimate(v) for k, v in est.items()}}
                    for model, prompt, n, est in results.prompt_groups(seed)],
        "gaps_by_episode": [{**{k: v for k, v in g.items() if not isinstance(v, Estimate)},
                             **{k: _estimate(v) for k, v in g.items() if isinstance(v, Estimate)}}
                            for g in results.gaps_by_episode(seed)],
        "prompt_model": results.prompt_model(),
        "instances": maps.docs,
        # the trajectory list: columns, then one array per trajectory (its position is its replay's)
        "columns": ["id", "agent", "model", "prompt", "instance", "success", "steps", "explore", "exploit", "end"],
        "trajectories": [
            [tid, agent, model, prompt, inst, None if ok != ok else bool(ok == 1), int(n), _num(xe), _num(ye), end]
            for tid, agent, model, prompt, inst, ok, n, xe, ye, end in zip(
                rows["trajectory_id"], rows["agent_name"], rows["model"], rows["prompt"], rows["instance_id"],
                rows["success"], rows["n_steps"], _col(results, "explore_error"), _col(results, "exploit_error"),
                rows["end_reason"], strict=True)],
    }


def _col(results: Results, name: str) -> Any:
    rows = results.trajectories
    return rows[name] if name in rows else [None] * len(results)


def _num(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


def _json_for_script(doc: Any) -> str:
    """JSON safe inside <script>: no '<' at all, so neither '</script' nor a comment opener '<!--' can end or bend
    the block; `\\u003c` is the one escape of it that JSON.parse reads back (`<\\!--` was refused: a blank page)."""
    return orjson.dumps(doc).decode().replace("<", "\\u003c")


def render(results: Results, seed: int, maps: Maps, progress: Callable[[int, int], None] | None = None) -> str:
    """The whole page as text; `progress(done, total)` hears of each trajectory's replay as it is made."""
    assets = resources.files("eebench.report") / "assets"
    style = (assets / "report.css").read_text("utf-8")
    script = (assets / "report.js").read_text("utf-8")
    blocks = []
    for block in _encoded(replay_documents(results, maps)):
        blocks.append(block)
        if progress:
            progress(len(blocks), len(results))
    data = page_data(results, seed, maps)   # after the replays: reading the logs' text may add notes
    title = f"eebench report: {results.db.name}"
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{_escape(title)}</title><style>{style}</style></head><body>",
        f"<header><h1>{_escape(title)}</h1><p id=\"subtitle\"></p><ul id=\"notes\"></ul></header>",
        "<main id=\"app\"><p class=\"loading\">Loading the report...</p></main>",
        f"<script type=\"application/json\" id=\"eeb-data\">{_json_for_script(data)}</script>",
        f"<script>{script}</script>",
        # last, after the script that paints the page: parsed only when a replay is opened
        f"<script type=\"application/json\" id=\"eeb-replays\">{_json_for_script(blocks)}</script>",
        "</body></html>\n",
    ])


def _encoded(docs: Iterator[dict[str, Any]], ahead: int = 64) -> Iterator[str]:
    """Each replay as `encode_block` makes it, in order, made by a thread: zlib lets go of the GIL, so blocks
    deflate while the next documents are built (10,000 rooms replays: 1.9 s of deflating hidden)."""
    with ThreadPoolExecutor(1) as pool:
        waiting: deque[Future[str]] = deque()
        for doc in docs:
            waiting.append(pool.submit(encode_block, doc))
            if len(waiting) > ahead:
                yield waiting.popleft().result()
        while waiting:
            yield waiting.popleft().result()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write_report(db: Path | str, out: Path | str, *, where: str | None = None,
                 bench: Path | Bench | Sequence[Path | Bench] | None = None, seed: int = 0,
                 progress: Callable[[int, int], None] | None = None) -> Written:
    """Write the report of the selected trajectories of a results file; the file appears whole or not at all.
    `progress(done, total)`: as `render`."""
    started = time.perf_counter()
    refuse_writing_over(db, out)
    results = load_results(db, where)
    if where and not len(results):   # (a mistyped value: a results file with nothing graded is an empty page)
        raise InputError.at(str(db), f"no trajectory matches --where {where!r}")
    maps = Maps(bench, results)
    page = render(results, seed, maps, progress)
    out = Path(out)
    with atomic_file(out) as handle:
        handle.write(page)
    return Written(out, len(results), out.stat().st_size, time.perf_counter() - started)


__all__ = ["METRICS", "REPORT_KIND", "Written", "page_data", "render", "write_report"]

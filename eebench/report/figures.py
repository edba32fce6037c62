"""`eebench plot KIND`: the report's figures as static images (PNG, SVG or PDF) for papers, with matplotlib."""

from __future__ import annotations

import re
import shlex
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")   # files only: never a window, works headless

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from eebench.errors import EebenchWarning, InputError, did_you_mean, one_of  # noqa: E402
from eebench.instances import Bench  # noqa: E402
from eebench.output import shown  # noqa: E402
from eebench.report.kinds import FIGURE_KINDS, LABEL_CHARS  # noqa: E402
from eebench.report.data import Results, closest_trajectory_id, load_results, refuse_writing_over  # noqa: E402
from eebench.report.replay import ACHIEVED, DISCOVERED, Maps, replay_documents  # noqa: E402
from eebench.report.stats import Estimate, Fit  # noqa: E402

# Okabe-Ito: distinguishable with every common colour-vision deficiency (the HTML report uses the same)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
CASE_COLOURS = {1: "#0072B2", 2: "#D55E00", 3: "#009E73", 4: "#E69F00"}
CASE_NAMES = {1: "explore", 2: "goal pending", 3: "exploit", 4: "either"}
NODE_FILL = {0: "#ffffff", DISCOVERED: "#F0E442", ACHIEVED: "#56B4E9"}
MARKERS = "osD^v<>P"   # past the palette's 8 colours, a series takes the next marker: 64 series look apart
FORMATS = (".png", ".svg", ".pdf")
WIDTH_INCHES = 10   # laptop width at 100 dpi; a paper scales it down


def label(text: Any) -> str:
    """A name from the results (a model, a prompt, a room, an id) as a figure shows it: control characters escaped
    (an SVG may not hold them), and shortened in the middle past LABEL_CHARS, so long names leave room for the
    axes."""
    text = shown(str(text))
    if len(text) <= LABEL_CHARS:
        return text
    head = (LABEL_CHARS - 1) // 2
    return f"{text[:head]}\u2026{text[len(text) - (LABEL_CHARS - 1 - head):]}"


def labels(names: list[Any]) -> list[str]:
    """`label` of each name, told apart where two shorten alike (`#2`, `#3`, ... after the later ones)."""
    shown_as: list[str] = []
    for name in names:
        text, k = label(name), 1
        while text in shown_as:
            k += 1
            text = f"{label(name)} #{k}"
        shown_as.append(text)
    return shown_as


PANELS_PER_ROW = 4   # of the `prompts` figure


def series_style(i: int) -> dict[str, str]:
    """The colour and marker of the i-th series (a model), the same in every panel."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i // len(PALETTE) % len(MARKERS)]}


MAX_LEGEND_NAMES = 60   # three columns of 20: past them the legend squeezed the panels to nothing


def legend(figure: Figure, handles: list[Any], names: list[str], title: str) -> None:
    """A figure's legend of series, outside on the right: in columns of at most 20 names, smaller past 12; past
    MAX_LEGEND_NAMES a line saying where the names are instead (272 models: 14 columns over the panels, and
    matplotlib's warning that it could not lay them out)."""
    if len(names) > MAX_LEGEND_NAMES:
        figure.suptitle(f"{len(names)} {title}s: too many to name in a legend (`eebench report` names each one in "
                        "its tooltips)", fontsize=8, color="#444")
        return
    figure.legend(handles, names, loc="outside right center", title=title, frameon=False,
                  ncol=1 + (len(names) - 1) // 20, fontsize=8 if len(names) > 12 else None)


def _figure_one(results: Results, args: dict[str, Any]) -> Figure:
    fig1 = results.figure_one(args["seed"])
    if not fig1.drawn():
        raise InputError.at(str(results.db), "has no selected trajectory with a success and Park et al.'s errors to "
                                             "draw (Figure 1 is of grid_dag worlds)")
    floor = fig1.floor
    figure, axes = plt.subplots(1, 2, figsize=(WIDTH_INCHES, 4.2), sharey=True, layout="constrained")
    names = dict(zip((p.model for p in fig1.drawn()), labels([p.model for p in fig1.drawn()]), strict=True))
    for ax, which, fit, name in ((axes[0], "explore", fig1.explore_fit, "exploration"),
                                 (axes[1], "exploit", fig1.exploit_fit, "exploitation")):
        for i, point in enumerate(fig1.drawn()):   # (a colour and marker each, the same in both panels)
            error: Estimate = getattr(point, which)
            if error.value is None:
                continue
            style = series_style(i)
            x = max(error.value, floor)
            ax.errorbar([x], [point.success.value],
                        xerr=[[x - max(error.low, floor)], [max(error.high, floor) - x]],
                        yerr=[[point.success.value - point.success.low], [point.success.high - point.success.value]],
                        fmt=style["marker"], ms=8, color=style["color"],
                        mfc=style["color"] if error.value > 0 else "white", mew=2, capsize=3, label=names[point.model])
        _draw_fit(ax, fit, floor)
        ax.set_xscale("log")
        ax.set_xlim(floor / 2, 1.5)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(f"mean {name} error (log scale)")
        ax.grid(True, which="major", color="#e4e4e4")
        ax.set_title(f"Success against {name} error")
    axes[0].set_ylabel("success rate")
    figure.supxlabel(f"Whiskers: 95% bootstrap intervals. Hollow: error 0, drawn at {floor:g} and left out "
                             "of the least-squares line (success rate against log10 error).", fontsize=8, color="#444")
    handles: dict[str, Any] = {}   # a model drawn in either panel, once (one with an exploitation error alone too)
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    drawn = [names[p.model] for p in fig1.drawn() if names[p.model] in handles]
    legend(figure, [handles[m] for m in drawn], drawn, "model")
    return figure


def _draw_fit(ax: Any, fit: Fit | None, floor: float) -> None:
    if fit is None:
        ax.text(0.98, 0.97, "no line: fewer than 3 models with error > 0", transform=ax.transAxes, ha="right", va="top")
        return
    xs = np.linspace(np.log10(floor), 0, 50)
    ax.plot(10 ** xs, fit.slope * xs + fit.intercept, "--", color="black", lw=1.5)
    r2 = "undefined" if fit.r2 is None else f"{fit.r2:.2f}"
    ax.text(0.03, 0.04, f"y = {fit.slope:.2f} log10(x) + {fit.intercept:.2f}\nR² = {r2} (n = {fit.n})",
            transform=ax.transAxes, ha="left", va="bottom", fontweight="bold",
            bbox={"facecolor": "white", "edgecolor": "#999", "alpha": 0.9})


def _prompts(results: Results, args: dict[str, Any]) -> Figure:
    groups = results.prompt_groups(args["seed"])
    model = args.get("model") or results.prompt_model()
    rows = [g for g in groups if g[0] == model]
    if not rows:
        models = sorted({g[0] for g in groups if g[0] is not None})
        raise InputError.at(str(results.db), f"no selected trajectory of model {model!r} to draw"
                                             f"{did_you_mean(str(model), models)}; models: {one_of(models)}"
                            if models else "has no selected trajectory with a prompt to compare")
    # a panel per metric the model has (a grid model has no gaps, a rooms model no success rate)
    metrics = [m for m in results.metrics if any(est[m.column].value is not None for *_, est in rows)]
    if not metrics:
        raise InputError.at(str(results.db), f"model {model!r} has no metric of the selection to compare by prompt")
    # at most PANELS_PER_ROW panels a row: eleven in one row (a model of both worlds, with coverage) ran their
    # titles into one another
    columns = min(len(metrics), PANELS_PER_ROW)
    n_rows = -(-len(metrics) // columns)
    figure, axes = plt.subplots(n_rows, columns, figsize=(WIDTH_INCHES, 1.2 + 2.9 * n_rows), layout="constrained",
                                squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.remove()
    prompts = labels([r[1] for r in rows])
    for ax, metric in zip(axes.flat, metrics, strict=False):
        for i, (_, prompt, n, est) in enumerate(rows):
            e = est[metric.column]
            if e.value is None:
                continue
            ax.bar([i], [e.value], color=PALETTE[i % len(PALETTE)], label=f"{prompts[i]} (n={n})",
                   yerr=[[e.value - e.low], [e.high - e.value]], capsize=4)
        ax.set_xticks(range(len(rows)), prompts, rotation=30, ha="right")
        ax.set_title(metric.label)
        ax.set_xlabel("prompt")
        ax.grid(True, axis="y", color="#e4e4e4")
    figure.supylabel("mean over episodes (95% bootstrap interval)", fontsize="medium")
    figure.suptitle(f"Prompts compared for {label(model)}")
    return figure


def _rooms_replay(doc: dict[str, Any], inst: dict[str, Any] | None, k: int) -> Figure:
    """A rooms trajectory: rooms and doors, the path between rooms by episode; returns, gaps and coverage per
    episode (the page's charts)."""
    n = len(doc["x"])
    rows = 4 if doc.get("ecc") else 3
    figure = plt.figure(figsize=(WIDTH_INCHES, 6.4 if rows == 3 else 7.6), layout="constrained")
    grid = figure.add_gridspec(rows, 2, width_ratios=[1.1, 1])
    ax = figure.add_subplot(grid[:, 0])
    if inst is not None:
        at = {r["id"]: (r["x"], r["y"]) for r in inst["rooms"]}
        for door in inst["doors"]:
            (x1, y1), (x2, y2) = (at[r] for r in door["between"])
            ax.plot([x1, x2], [y1, y2], color="#8a8a8a", lw=3, zorder=1)
        for room, (x, y) in at.items():
            ax.add_patch(plt.Rectangle((x - 0.3, y - 0.3), 0.6, 0.6, facecolor="white", edgecolor="black",
                                       lw=3 if room == inst["start"] else 1, zorder=2))
            ax.text(x, y - 0.2, label(room), ha="center", va="center", fontsize=7, zorder=3)
            balls = [b for b in inst["balls"] if b["room"] == room]
            for j, _ in enumerate(balls):
                ax.scatter([x - 0.2 + 0.1 * (j % 4)], [y + 0.05 + 0.1 * (j // 4)], s=20, c="#E69F00",
                           edgecolors="black", zorder=3)
        here, last = inst["start"], -1
        segments, colours = [], []
        for t in range(k):
            episode = doc["episode"][t]
            if episode != last:
                here, last = inst["start"], episode
            (x1, y1), (x2, y2) = at[here], at[doc["room"][t]]
            off = (episode % 5 - 2) * 0.03
            segments.append([(x1 + off, y1 + off), (x2 + off, y2 + off)])
            colours.append(PALETTE[episode % len(PALETTE)])
            here = doc["room"][t]
        ax.add_collection(LineCollection(segments, colors=colours, linewidths=2.5, capstyle="round", zorder=4))
        ax.plot(*at[here], "o", color="black", ms=8, zorder=5)
        ax.invert_yaxis()
        for e in sorted(set(doc["episode"][:k])):
            ax.plot([], [], color=PALETTE[e % len(PALETTE)], lw=2.5, label=f"episode {e + 1}")
        if k:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=5, fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "pass --bench to draw the rooms", ha="center", transform=ax.transAxes)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"{label(doc['id'])}\nstep {k} of {n}", fontsize=9)
    episodes = np.arange(1, len(doc["episodes"]) + 1)
    col = lambda c: np.array([np.nan if e.get(c) is None else e[c] for e in doc["episodes"]])  # noqa: E731
    returns = figure.add_subplot(grid[0, 1])
    returns.plot(episodes, col("agent_return"), "o-", color=PALETTE[0], label="agent")
    returns.plot(episodes, col("exploit_return"), "o--", color=PALETTE[1], label="optimal exploitation")
    returns.plot(episodes, col("max_return"), ":", color="black", label="R_max")
    returns.set_ylabel("return")
    returns.legend(fontsize=8, frameon=False)
    gaps = figure.add_subplot(grid[1, 1], sharex=returns)
    for name, colour, style in (("total_gap", "black", "o-"), ("explore_gap", PALETTE[0], "o--"),
                                ("exploit_gap", PALETTE[1], "o:")):
        gaps.plot(episodes, col(name), style, color=colour, label=name.replace("_", " "))
    gaps.set_ylabel("gap (normalised by R_max)")
    gaps.legend(fontsize=8, frameon=False)
    coverage = figure.add_subplot(grid[2, 1], sharex=returns)
    coverage.plot(episodes, col("coverage"), "o-", color=PALETTE[2])
    coverage.set_ylabel("coverage")
    coverage.set_xlabel("episode")
    coverage.xaxis.get_major_locator().set_params(integer=True)
    if k:
        for chart in (returns, gaps, coverage):
            chart.axvline(doc["episode"][k - 1] + 1, color="black", ls=":", lw=1)
    if rows == 4:   # ECC is per step, not per episode: an axis of its own
        ecc = _ecc_chart(figure, grid[3, 1], None, doc["ecc"])
        ecc.set_xlabel("step")
        ecc.axvline(k, color="black", ls=":", lw=1)
    return figure


def _states_replay(doc: dict[str, Any], k: int) -> Figure:
    """A logged trajectory (a world eebench cannot simulate): the state read after each step, a row per state in
    order of first visit; its ECC and visit depth."""
    n = len(doc["state"])
    rows = {state: j for j, state in enumerate(dict.fromkeys(s for s in doc["state"] if s is not None))}
    figure = plt.figure(figsize=(WIDTH_INCHES, 5.2), layout="constrained")
    grid = figure.add_gridspec(2, 2, width_ratios=[1.1, 1])
    ax = figure.add_subplot(grid[:, 0])
    read = [(t + 1, rows[s]) for t, s in enumerate(doc["state"][:k]) if s is not None]
    if rows:
        ax.plot([t for t, _ in read], [j for _, j in read], "-", color=PALETTE[0], lw=1.5)
        if read:
            ax.plot(*read[-1], "o", color="black", ms=7)
        every = max(1, -(-len(rows) // 40))   # at most about 40 labels
        ax.set_yticks(range(0, len(rows), every), labels(list(rows)[::every]), fontsize=7)
        ax.set_ylim(len(rows) - 0.5, -0.5)
    else:
        ax.text(0.5, 0.5, "no state was read from this log", ha="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlim(0, max(n, 1))
    ax.set_xlabel("step")
    ax.set_title(f"{label(doc['id'])}\nstep {k} of {n}: the state after each step, in order of first visit",
                 fontsize=9)
    ecc = _ecc_chart(figure, grid[0, 1], None, doc.get("ecc") or [None] * n)   # (0 to 1, as every replay's)
    depth = figure.add_subplot(grid[1, 1], sharex=ecc)
    depth.plot(np.arange(1, n + 1), [np.nan if v is None else v for v in doc.get("depth") or [None] * n],
               color="black")
    depth.set_ylabel("visit depth")
    depth.set_xlabel("step")
    for chart in (ecc, depth):
        chart.axvline(k, color="black", ls=":", lw=1)
    return figure


def _replay(results: Results, args: dict[str, Any]) -> Figure:
    before = len(results.notes)
    maps = Maps(args.get("bench"), results)
    why = results.notes[before:]   # (the page says them at its top: a figure drawn without its map said nothing)
    doc = next(replay_documents(results, maps))
    if args.get("bench") is not None and doc["inst"] is None and doc.get("env") != "logged" and why:
        warnings.warn(EebenchWarning(f"--bench draws no map here: {'; '.join(why)}"), stacklevel=2)
    n = len(doc["x"])
    if args.get("step") is not None and args["step"] > n:
        raise InputError(f"--step {args['step']}: trajectory {doc['id']!r} has {n} graded "
                         f"step{'' if n == 1 else 's'} (0 to {n})")
    k = n if args.get("step") is None else args["step"]
    if doc.get("env") == "rooms":
        return _rooms_replay(doc, maps.docs.get(doc["inst"]) if doc["inst"] else None, k)
    if doc.get("env") == "logged":
        return _states_replay(doc, k)
    rows = 4 if doc.get("ecc") else 3
    figure = plt.figure(figsize=(WIDTH_INCHES, 5.2 if rows == 3 else 6.4), layout="constrained")
    grid = figure.add_gridspec(rows, 2, width_ratios=[1.1, 1])
    ax = figure.add_subplot(grid[:, 0])
    inst = maps.docs.get(doc["inst"]) if doc["inst"] else None
    xs = [doc["start"][0], *doc["x"]]
    ys = [doc["start"][1], *doc["y"]]
    if inst is not None:
        walls = np.array([[ch != "." for ch in row] for row in inst["map"]], dtype=float)
        ax.imshow(walls, cmap="Greys", vmin=0, vmax=1.4, extent=(-0.5, inst["w"] - 0.5, inst["h"] - 0.5, -0.5))
        status: dict[int, int] = {}
        for t, node, st in doc["nodes"]:
            if t < k:
                status[node] = st
        for j, node in enumerate(inst["nodes"]):
            ax.scatter([node["x"]], [node["y"]], s=420 if node["goal"] else 300, marker="*" if node["goal"] else "s",
                       c=NODE_FILL[status.get(j, 0)], edgecolors="black", zorder=3)
            if not node["goal"]:
                ax.text(node["x"], node["y"], label(node["id"][:2]), ha="center", va="center", fontsize=7, zorder=4)
    else:
        ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
        ax.set_ylim(max(ys) + 0.5, min(ys) - 0.5)
    ax.add_patch(plt.Rectangle((doc["start"][0] - 0.45, doc["start"][1] - 0.45), 0.9, 0.9, fill=False, lw=2))
    # one collection of k segments and one line of error marks, not an artist per step (100k steps took 8 minutes)
    path = np.column_stack([xs[:k + 1], ys[:k + 1]])
    ax.add_collection(LineCollection(np.stack([path[:-1], path[1:]], axis=1),
                                     colors=[CASE_COLOURS[int(c)] for c in doc["case"][:k]], linewidths=3,
                                     capstyle="round", zorder=2))
    errors = [t + 1 for t in range(k) if doc["err"][t] == "1"]
    ax.plot(path[errors, 0], path[errors, 1], "x", color="black", ms=7, mew=2, zorder=5)
    ax.plot([xs[k]], [ys[k]], "o", color="black", ms=8, zorder=6)
    for c, colour in CASE_COLOURS.items():
        ax.plot([], [], color=colour, lw=3, label=f"case {c}: {CASE_NAMES[c]}")
    ax.plot([], [], "x", color="black", mew=2, label="error")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, fontsize=8, frameon=False)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"{label(doc['id'])}\nstep {k} of {n}", fontsize=9)
    steps = np.arange(1, n + 1)
    stale = figure.add_subplot(grid[0, 1])
    stale.plot(steps, doc["stale"], color="black")
    stale.set_ylabel("stale score S(t)")
    errs = figure.add_subplot(grid[1, 1], sharex=stale)
    errs.plot(steps, np.cumsum([ch == "1" for ch in doc["xe"]]), color=PALETTE[0], label="exploration")
    errs.plot(steps, np.cumsum([ch == "1" for ch in doc["ye"]]), "--", color=PALETTE[1], label="exploitation")
    errs.set_ylabel("cumulative errors")
    errs.legend(fontsize=8, frameon=False)
    case = figure.add_subplot(grid[2, 1], sharex=stale)
    codes = np.frombuffer(doc["case"].encode("ascii"), dtype=np.uint8) - 48
    starts = np.flatnonzero(np.diff(codes, prepend=-1))   # runs of one case: a bar each, not a bar per step
    case.broken_barh([(s + 0.5, e - s) for s, e in zip(starts, [*starts[1:], n])], (0, 1),
                     facecolors=[CASE_COLOURS[int(codes[s])] for s in starts])
    case.set_yticks([])
    case.set_ylabel("case")
    charts = [stale, errs, case]
    if rows == 4:
        charts.append(_ecc_chart(figure, grid[3, 1], stale, doc["ecc"]))
    charts[-1].set_xlabel("step")
    for chart in charts:
        chart.axvline(k, color="black", ls=":", lw=1)
    return figure


def _ecc_chart(figure: Figure, where: Any, sharex: Any, ecc: list[float | None]) -> Any:
    """ECC after each step (NULL, a gap, where the trajectory's checkpoints are not yet known)."""
    chart = figure.add_subplot(where, sharex=sharex)
    chart.plot(np.arange(1, len(ecc) + 1), [np.nan if v is None else v for v in ecc], color=PALETTE[2])
    chart.set_ylabel("ECC")
    chart.set_ylim(-0.02, 1.02)
    return chart


def _rooms_gaps(results: Results, args: dict[str, Any]) -> Figure:
    rows = results.gaps_by_episode(args["seed"])
    if not rows:
        raise InputError.at(str(results.db), "has no episodes of rooms worlds to draw (table episodes is missing "
                                             "or holds none of the selected trajectories)")
    models = sorted({r["model"] for r in rows})
    names = labels(models)
    figure, axes = plt.subplots(1, 3, figsize=(WIDTH_INCHES, 3.8), layout="constrained")
    panels = (("agent_return", "Agent return", "return per episode"),
              ("explore_gap", "Exploration gap (lower is better)", "(R_max - R_exploit) / R_max"),
              ("coverage", "Coverage", "rooms known / all rooms"))
    for ax, (column, title, ylabel) in zip(axes, panels, strict=True):
        for i, model in enumerate(models):
            mine = [r for r in rows if r["model"] == model and r[column].value is not None]
            xs = np.array([r["episode"] + 1 for r in mine]) + (i - (len(models) - 1) / 2) * 0.06
            values = np.array([r[column].value for r in mine])
            style = series_style(i)
            ax.errorbar(xs, values, yerr=[values - [r[column].low for r in mine], [r[column].high for r in mine] - values],
                        fmt=f"{style['marker']}-", color=style["color"], capsize=3, label=names[i])
        ax.set_title(title)
        ax.set_xlabel("episode")
        ax.set_ylabel(ylabel)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, color="#e4e4e4")
    handles, shown_names = axes[0].get_legend_handles_labels()
    legend(figure, handles, shown_names, "model")
    figure.supxlabel("Means over each model's trajectories, 95% bootstrap intervals (Grams et al., Figure 2)",
                     fontsize=8, color="#444")
    return figure


KINDS: dict[str, Callable[[Results, dict[str, Any]], Figure]] = {
    "figure1": _figure_one,
    "prompts": _prompts,
    "replay": _replay,
    "rooms-gaps": _rooms_gaps,
}
assert KINDS.keys() == FIGURE_KINDS.keys(), "every figure kind is described in kinds.py"


# the same results draw the same bytes: no creation date in SVG or PDF (PNG has none)
_NO_DATE = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


def draw(kind: str, db: Path | str, out: Path | str, *, where: str | None = None, trajectory: str | None = None,
         step: int | None = None, bench: Path | Bench | None = None, seed: int = 0, model: str | None = None) -> Path:
    """Draw figure KIND of the selected trajectories into `out` (format from its suffix)."""
    if kind not in KINDS:
        raise InputError(f"unknown figure {kind!r}{did_you_mean(kind, KINDS)}; expected {one_of(KINDS)}")
    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise InputError.at(str(out), f"expected a file ending in {one_of(FORMATS)}, found {out.suffix or 'no suffix'!r}")
    refuse_writing_over(db, out)
    for option, value, owner in (("--trajectory", trajectory, "replay"), ("--step", step, "replay"),
                                 ("--bench", bench, "replay"), ("--model", model, "prompts")):
        if value is not None and kind != owner:   # (it was silently ignored)
            raise InputError(f"{option} goes with `eebench plot {owner}`; `plot {kind}` does not read it")
    selected = where
    if kind == "replay" and trajectory is not None:
        quoted = "'" + trajectory.replace("'", "''") + "'"
        selected = f"trajectory_id = {quoted}" + (f" AND ({where})" if where else "")
    results = load_results(db, selected)
    if not len(results):
        if trajectory is None:
            raise InputError.at(str(db), f"no trajectory matches --where {where!r}" if where else
                                "has no graded trajectory to draw (`eebench grade ... --db` writes them)")
        closest = closest_trajectory_id(db, trajectory)
        if closest == trajectory:   # (it is there: the --where leaves it out)
            raise InputError.at(str(db), f"trajectory {trajectory!r} does not match --where {where!r}")
        close = did_you_mean(trajectory, [closest] if closest else [])
        # (the help's `--trajectory ID` is a placeholder: say where the ids are)
        listed = f'; the ids: eebench query "SELECT trajectory_id FROM trajectories" --db {shlex.quote(str(db))}'
        raise InputError.at(str(db), f"no trajectory {trajectory!r}{close or listed}")
    figure = KINDS[kind](results, {"seed": seed, "step": step, "bench": bench, "model": model})
    from eebench.documents import atomic_file
    try:
        with atomic_file(out, "wb") as handle:
            fmt = out.suffix.lower()[1:]
            with matplotlib.rc_context({"svg.hashsalt": "eebench"}):   # (else clip-path ids are random)
                _saved_saying_missing_glyphs(figure, handle, fmt)
    finally:
        plt.close(figure)
    return out


_MISSING_GLYPH = re.compile(r"Glyph (\d+) .* missing from font")


def _saved_saying_missing_glyphs(figure: Figure, handle: Any, fmt: str) -> None:
    """Save the figure; the characters its fonts cannot draw (a model named in CJK or with an emoji) said in one
    EebenchWarning, where matplotlib warned once per character, two lines each with its own source's path."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure.savefig(handle, format=fmt, dpi=100, metadata=_NO_DATE.get(fmt))
    missing = []
    for warning in caught:
        if match := _MISSING_GLYPH.search(str(warning.message)):
            missing.append(chr(int(match.group(1))))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if missing := list(dict.fromkeys(missing)):
        shown_chars = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.warn(EebenchWarning(f"the figure's font has no glyph for {len(missing)} character(s) of its labels "
                                     f"({shown_chars}): they are drawn as boxes (the page, `eebench report`, draws "
                                     "them with the browser's fonts)"), stacklevel=2)

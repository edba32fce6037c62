"""Generation speed: the 27-instance main suite (target < 2 s) and 10,008 instances (target < 60 s on one core),
through the library path `eebench generate` takes (resolve the spec, generate, write canonical files and the index).

Baseline, run in the same process on the same instances: the same generator with the solvability check's distances
computed by networkx (`single_source_shortest_path_length` on a graph of the free cells, built for every map drawn)
instead of eebench's flat-table BFS. It must make exactly the same instances; the benchmark checks that.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import networkx as nx

from benchmarks import Result, timed
from eebench.documents import sha256_hex
from eebench.generator.dag import sample_dag
from eebench.generator.gridmap import carve_map
from eebench.generator.instances import GENERATOR, MAX_MAP_ATTEMPTS, symbolic_tokens
from eebench.generator.params import Preset
from eebench.generator.rng import StableRng
from eebench.instances import write_instances
from eebench.suites import Suite, presets_suite, resolve_spec, shipped_presets
from eebench.world.grid_dag import GridDagInstance, GridDagWorld, Node
from eebench.world.planning import shortest_completion

MAIN_PRESETS = [f"{d}-{s}" for d in ("low", "medium", "high") for s in ("small", "medium", "large")]
SEEDS_10K = range(1112)  # 9 presets x 1112 seeds = 10,008 instances


def networkx_distances(world: GridDagWorld) -> list[list[int]]:
    """BFS distances from every node cell, then the start, as networkx computes them (the baseline)."""
    graph = nx.Graph()
    graph.add_nodes_from(c for c in range(world.n_cells) if world.free[c])
    graph.add_edges_from((c, t) for c in range(world.n_cells) for t in world.step_to[4 * c:4 * c + 4] if t > c)
    rows = []
    for source in [*world.node_cell, world.start]:
        row = [-1] * world.n_cells
        for cell, d in nx.single_source_shortest_path_length(graph, source).items():
            row[cell] = d
        rows.append(row)
    return rows


def generate_baseline(preset: Preset, seed: int, instance_id: str) -> GridDagInstance:
    """eebench.generator.generate_instance, step for step, but with networkx distances for the budget check."""
    n = preset.dag.n_nodes
    dag = sample_dag(preset.dag, StableRng(seed, "dag"))
    names_rng = StableRng(seed, "names")
    names = (symbolic_tokens(n, names_rng) if preset.names == "symbolic"
             else names_rng.sample(list(preset.names), n))
    map_rng = StableRng(seed, "map")
    for attempt in range(1, MAX_MAP_ATTEMPTS + 1):
        carved = carve_map(n, preset.map, map_rng)
        free = sum(row.count(".") for row in carved.rows)
        instance = GridDagInstance(
            id=instance_id, map=carved.rows, start=carved.start,
            nodes=tuple(Node(names[i], carved.node_positions[i],
                             tuple(tuple(names[p] for p in alt) for alt in dag.requires[i])) for i in range(n)),
            goal=names[dag.goal], budget=math.ceil(preset.budget_alpha * free),
            names="symbolic" if preset.names == "symbolic" else "semantic",
            meta={"generator": GENERATOR, "preset": preset.name, "seed": seed, "map_attempt": attempt,
                  "params": preset.to_document()})
        world = GridDagWorld(instance)
        if shortest_completion(world, networkx_distances(world)).cost <= instance.budget:
            return instance
    raise RuntimeError(f"{instance_id}: no map fits the budget")


def baseline_instances(suite: Suite) -> Iterator[GridDagInstance]:
    """The suite's preset members through the baseline generator, in the suite's order."""
    for member in suite.members:
        for name in member.presets:  # type: ignore[union-attr]
            for seed in member.seeds:  # type: ignore[union-attr]
                yield generate_baseline(suite.presets[name], seed, f"{suite._prefix()}{name}/seed-{seed}")


def write_timed(instances: Iterable[GridDagInstance], folder: Path,
                source: dict[str, Any]) -> tuple[float, list[dict[str, str]]]:
    return timed(lambda: write_instances(instances, folder, source))


def one_core() -> str:
    """Pin this process to one CPU, so the figures are one core's."""
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to cpu {cpu}"
    return "not pinned"


def run() -> list[Result]:
    pinned = one_core()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        # the main suite, in this process: library path of `eebench generate park2026-main`
        main = resolve_spec("park2026-main")
        ours, entries = write_timed(main.instances(), root / "main", main.source())
        base, base_entries = write_timed(baseline_instances(main), root / "main-baseline", main.source())
        assert [e["sha256"] for e in entries] == [e["sha256"] for e in base_entries], "baseline made other bytes"
        results.append(Result("park2026-main: 27 instances generated + written", ours * 1000, "ms", base * 1000,
                              "< 2000 ms", f"baseline: networkx distances for the budget check; {pinned}"))

        # the same, end to end from the shell: a fresh interpreter, imports included
        cli = Path(sys.executable).with_name("eebench")
        command = [str(cli)] if cli.exists() else [sys.executable, "-m", "eebench.cli"]
        wall, _ = timed(lambda: subprocess.run([*command, "generate", "park2026-main", "--out", str(root / "cli")],
                                               check=True, capture_output=True))
        results.append(Result("`eebench generate park2026-main` (fresh process)", wall * 1000, "ms", None,
                              "< 2000 ms", "wall time including interpreter start and imports"))

        # 10,008 instances: the 9 main presets x seeds 0..1111
        presets = {name: shipped_presets()[name] for name in MAIN_PRESETS}
        big = presets_suite(presets, list(SEEDS_10K))
        count = len(big)
        ours, entries = write_timed(big.instances(), root / "big", big.source())
        base, base_entries = write_timed(baseline_instances(big), root / "big-baseline", big.source())
        assert [e["sha256"] for e in entries] == [e["sha256"] for e in base_entries], "baseline made other bytes"
        files = sum(1 for _ in (root / "big").rglob("*.json"))
        assert files == count + 1, files  # every instance and the index
        digest = sha256_hex([e["sha256"] for e in entries])
        results.append(Result(f"{count:,} instances (9 presets x {len(SEEDS_10K)} seeds) generated + written",
                              ours, "s", base, "< 60 s on one core",
                              f"baseline as above; {pinned}; sha256 of their digests {digest[:12]}"))
        results.append(Result("  the same, as a rate", count / ours, "inst/s", count / base, "> 167 inst/s"))
    return results

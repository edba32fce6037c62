"""Generator presets as typed parameters, with the paper's defaults filled in and impossible values refused."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

Probs = tuple[tuple[int, float], ...]
MAX_SIDE = 100  # the widest and tallest map an instance may have (instance.grid_dag.json: map rows and items)
_FAR = 1e12     # more cells than any map may have, and still a float every step of `dimensions` can round


@dataclass(frozen=True)
class DagParams:
    n_nodes: int
    max_nodes_per_layer: int = 3
    option_count_probs: Probs = ((1, 1.0),)
    dependency_count_probs: Probs = ((1, 1.0),)
    goal_dependency_count_probs: Probs = ((1, 1.0),)
    parent_depth_bias: float = 1.0


@dataclass(frozen=True)
class MapParams:
    corridor_width: tuple[int, int]
    density: float | None = None
    size: tuple[int, int] | None = None
    aspect_ratio: float = 1.0

    def dimensions(self, n_nodes: int) -> tuple[int, int]:
        """(width, height): fixed, or the integer shape nearest the aspect ratio holding n_nodes / density cells."""
        if self.size is not None:
            return self.size
        assert self.density is not None
        # (min: a density or aspect ratio near 0, 1e-320, makes no map at all: kept finite, far past MAX_SIDE)
        cells = math.ceil(min(n_nodes / self.density, _FAR) - 1e-9)  # 6 / 0.1 is 59.99..., meant as 60
        height = max(1, round(math.sqrt(min(cells / self.aspect_ratio, _FAR))))
        return math.ceil(cells / height), height


@dataclass(frozen=True)
class Preset:
    name: str
    dag: DagParams
    map: MapParams
    budget_alpha: float = 3
    names: str | tuple[str, ...] = "symbolic"

    def to_document(self) -> dict[str, Any]:
        """The resolved parameters, defaults included, as recorded in every instance's meta."""
        def probs(p: Probs) -> dict[str, float]:
            return {str(k): v for k, v in p}

        dag = asdict(self.dag)
        for key in ("option_count_probs", "dependency_count_probs", "goal_dependency_count_probs"):
            dag[key] = probs(getattr(self.dag, key))
        map_doc: dict[str, Any] = {"corridor_width": list(self.map.corridor_width), "aspect_ratio": self.map.aspect_ratio}
        if self.map.density is not None:
            map_doc["density"] = self.map.density
        if self.map.size is not None:
            map_doc["size"] = list(self.map.size)
        return {"dag": dag, "map": map_doc, "budget_alpha": self.budget_alpha,
                "names": self.names if isinstance(self.names, str) else list(self.names)}


def preset_problems(name: str, doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, reason) for values a schema-valid preset cannot be generated with."""
    problems = []
    dag, map_ = doc["dag"], doc["map"]
    for key in ("option_count_probs", "dependency_count_probs", "goal_dependency_count_probs"):
        if key in dag:
            total = sum(dag[key].values())
            if abs(total - 1.0) > 1e-9:
                problems.append((f"{name}.dag.{key}", f"probabilities sum to {total:g}, expected 1"))
    if ("density" in map_) == ("size" in map_):
        problems.append((f"{name}.map", "give exactly one of density (the size follows) or size [width, height]"))
    low, high = map_["corridor_width"]
    if low > high:
        problems.append((f"{name}.map.corridor_width", f"min {low} is larger than max {high}"))
    names = doc.get("names", "symbolic")
    if isinstance(names, list) and len(names) < dag["n_nodes"]:
        problems.append((f"{name}.names", f"{len(names)} semantic names for {dag['n_nodes']} nodes"))
    if not problems:
        preset = parse_preset(name, doc)
        width, height = preset.map.dimensions(preset.dag.n_nodes)
        if width * height < preset.dag.n_nodes + 1:
            problems.append((f"{name}.map", f"a {width}x{height} map cannot hold {preset.dag.n_nodes} nodes and the "
                                            "start on distinct cells"))
        elif width > MAX_SIDE or height > MAX_SIDE:
            problems.append((f"{name}.map", f"a {width}x{height} map is larger than an instance may be "
                                            f"({MAX_SIDE}x{MAX_SIDE}); raise the density or bring the aspect "
                                            "ratio closer to 1"))
    return problems


def _alpha(value: float) -> float:
    """budget_alpha in one form, as meta records it: 3 and 3.0 are one spec and give the same bytes. Integral values
    are integers, since the shipped presets write 3 and their instances' bytes are pinned."""
    return int(value) if float(value).is_integer() else float(value)


def parse_preset(name: str, doc: dict[str, Any]) -> Preset:
    """A Preset from a schema-valid document whose `preset_problems` are empty."""
    dag, map_ = doc["dag"], doc["map"]

    def probs(key: str) -> Probs:
        raw = dag.get(key, {"1": 1.0})
        return tuple(sorted((int(k), float(v)) for k, v in raw.items()))

    names = doc.get("names", "symbolic")
    return Preset(
        name=name,
        dag=DagParams(
            n_nodes=dag["n_nodes"],
            max_nodes_per_layer=dag.get("max_nodes_per_layer", 3),
            option_count_probs=probs("option_count_probs"),
            dependency_count_probs=probs("dependency_count_probs"),
            goal_dependency_count_probs=probs("goal_dependency_count_probs"),
            parent_depth_bias=float(dag.get("parent_depth_bias", 1.0)),
        ),
        map=MapParams(
            corridor_width=(map_["corridor_width"][0], map_["corridor_width"][1]),
            density=map_.get("density"),
            size=tuple(map_["size"]) if "size" in map_ else None,  # type: ignore[arg-type]
            aspect_ratio=float(map_.get("aspect_ratio", 1.0)),
        ),
        budget_alpha=_alpha(doc.get("budget_alpha", 3)),
        names=names if isinstance(names, str) else tuple(names),
    )

"""Seeded sampling of instances from generator specs: DAG sampler, map carver, names, solvability.

The names below are loaded on first use (PEP 562), so that reading a preset (`generator.params`) does not import
the sampler and, through the planner, NumPy."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eebench.generator.instances import GENERATOR, generate_instance, relabel_symbolic
    from eebench.generator.params import DagParams, MapParams, Preset

_HOMES = {"GENERATOR": "instances", "generate_instance": "instances", "relabel_symbolic": "instances",
          "DagParams": "params", "MapParams": "params", "Preset": "params"}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

"""Seeded sampling of instances from generator specs: DAG sampler, map carver, names, solvability.

The names below are loaded on first use (PEP 562), so that reading a preset (`generator.params`) does not import
the sampler and, through the planner, NumPy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eebench.lazy import names_on_first_use

if TYPE_CHECKING:
    from eebench.generator.instances import GENERATOR, generate_instance, relabel_symbolic
    from eebench.generator.params import DagParams, MapParams, Preset

_HOMES = {"GENERATOR": "instances", "generate_instance": "instances", "relabel_symbolic": "instances",
          "DagParams": "params", "MapParams": "params", "Preset": "params"}
__all__ = sorted(_HOMES)


__getattr__ = names_on_first_use(__name__, _HOMES)

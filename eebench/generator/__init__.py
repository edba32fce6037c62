"""Seeded sampling of instances from generator specs: DAG sampler, map carver, names, solvability."""

from eebench.generator.instances import GENERATOR, generate_instance, relabel_symbolic
from eebench.generator.params import DagParams, MapParams, Preset

__all__ = ["GENERATOR", "DagParams", "MapParams", "Preset", "generate_instance", "relabel_symbolic"]

"""Specs as data: generator presets, suites and hand-made instances, shipped or the user's, in one registry.

A name given on the command line is resolved in this order: an existing file (its `eebench` kind says what it
is), a shipped suite, a shipped preset. Shipped specs live in `eebench/specs/`:
`presets/*.yaml` (generator/1), `suites/*.yaml` (suite/1) and `instances/**.yaml` (instance/1, hand-made).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from eebench.documents import document_kind, instance_id_problem, load_checked, load_document, sha256_hex
from eebench.errors import InputError, Problem, did_you_mean, quote
from eebench.generator.instances import generate_instance, relabel_symbolic
from eebench.generator.params import Preset, parse_preset, preset_problems
from eebench.instances import load_instance
from eebench.world.grid_dag import GridDagInstance

VARIANTS = ("semantic", "symbolic")


def specs_root() -> Path:
    return Path(str(resources.files("eebench").joinpath("specs")))


def load_presets(path: Path | str) -> dict[str, Preset]:
    """The presets of a generator/1 file, each checked against the schema and for impossible values."""
    doc = load_checked(path, "generator", "generator.grid_dag")
    return _parse_presets(doc["presets"], str(path), "presets")


def _parse_presets(raw: dict[str, Any], file: str, where: str) -> dict[str, Preset]:
    problems = [Problem(file, None, f"{where}.{path}", why)
                for name, preset in raw.items() for path, why in preset_problems(name, preset)]
    if problems:
        raise InputError(problems)
    return {name: parse_preset(name, preset) for name, preset in raw.items()}


@functools.cache
def shipped_presets() -> dict[str, Preset]:
    presets: dict[str, Preset] = {}
    for path in sorted((specs_root() / "presets").glob("*.yaml")):
        for name, preset in load_presets(path).items():
            if name in presets:
                raise InputError.at(str(path), f"preset {name!r} is defined twice among the shipped presets")
            presets[name] = preset
    return presets


@functools.cache
def shipped_suites() -> dict[str, Path]:
    suites = {}
    for path in sorted((specs_root() / "suites").glob("*.yaml")):
        suites[load_document(path)["name"]] = path
    return suites


@functools.cache
def shipped_instances() -> dict[str, Path]:
    """Hand-made instances by their path under specs/instances without suffix, e.g. 'pasta/custom-201'."""
    root = specs_root() / "instances"
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.rglob("*.yaml"))}


@dataclass(frozen=True)
class PresetMember:
    presets: tuple[str, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class InstanceMember:
    name: str
    path: Path
    variants: tuple[str, ...] | None

    @property
    def base_name(self) -> str:
        """The member's part of instance ids: 'custom-201' for 'pasta/custom-201' and for 'maps/custom-201.yaml'."""
        last = self.name.rsplit("/", 1)[-1]
        stem, dot, suffix = last.rpartition(".")
        return stem if dot and stem and f".{suffix.lower()}" in (".json", ".yaml", ".yml") else last


@dataclass(frozen=True)
class Suite:
    """A named, ordered set of instances, generated from presets at seeds or hand-made."""

    name: str | None
    members: tuple[PresetMember | InstanceMember, ...]
    presets: dict[str, Preset] = field(default_factory=dict)
    document: dict[str, Any] | None = None  # the suite/1 document it was read from, if any

    def _prefix(self) -> str:
        return f"{self.name}/" if self.name else ""

    def instance_ids(self) -> list[str]:
        ids = []
        for member in self.members:
            if isinstance(member, PresetMember):
                ids += [f"{self._prefix()}{p}/seed-{s}" for p in member.presets for s in member.seeds]
            else:
                base = f"{self._prefix()}{member.base_name}"
                ids += [f"{base}/{v}" for v in member.variants] if member.variants else [base]
        return ids

    def __len__(self) -> int:
        return len(self.instance_ids())

    def instances(self) -> Iterator[GridDagInstance]:
        """Materialize every instance, in the order the suite lists them."""
        for member in self.members:
            if isinstance(member, PresetMember):
                for preset in member.presets:
                    for seed in member.seeds:
                        yield generate_instance(self.presets[preset], seed, f"{self._prefix()}{preset}/seed-{seed}")
            else:
                yield from self._hand_made(member)

    def _hand_made(self, member: InstanceMember) -> Iterator[GridDagInstance]:
        written = load_instance(member.path).instance
        base = f"{self._prefix()}{member.base_name}"
        for variant in member.variants or (None,):
            instance_id = f"{base}/{variant}" if variant else base
            if variant == "symbolic":
                yield relabel_symbolic(written, instance_id)
            else:
                yield GridDagInstance(instance_id, written.map, written.start, written.nodes, written.goal,
                                      written.budget, written.names, written.meta)

    def source(self) -> dict[str, Any]:
        """Provenance for index and manifest files: the spec the instances came from."""
        if self.document is not None:
            return {"kind": "suite", "name": self.name, "sha256": sha256_hex(self.document), "spec": self.document}
        seeds = sorted({s for m in self.members if isinstance(m, PresetMember) for s in m.seeds})
        return {"kind": "presets", "seeds": seeds,
                "presets": {name: preset.to_document() for name, preset in self.presets.items()}}


def load_suite(path: Path | str) -> Suite:
    file = str(path)
    doc = load_checked(path, "suite")
    inline = _parse_presets(doc.get("presets", {}), file, "presets")
    known = {**shipped_presets(), **inline}
    problems: list[Problem] = []
    members: list[PresetMember | InstanceMember] = []
    used: dict[str, Preset] = {}
    for i, raw in enumerate(doc["members"]):
        if "presets" in raw:
            for j, name in enumerate(raw["presets"]):
                if name in known:
                    used[name] = known[name]
                else:
                    problems.append(Problem(file, None, f"members[{i}].presets[{j}]",
                                            f"unknown preset {name!r}{did_you_mean(name, known)}"))
            members.append(PresetMember(tuple(raw["presets"]), tuple(raw["seeds"])))
        else:
            name = raw["instance"]
            local = Path(file).parent / name
            path = local if _is_file(local) else shipped_instances().get(name)
            if path is None:
                problems.append(Problem(file, None, f"members[{i}].instance",
                                        f"no file {quote(repr(str(local)))} and no shipped instance {quote(repr(name))}"
                                        f"{did_you_mean(name, shipped_instances())}"))
                continue
            members.append(InstanceMember(name, path, tuple(raw["variants"]) if "variants" in raw else None))
    suite = Suite(doc["name"], tuple(members), used, doc)
    if not problems:
        ids = suite.instance_ids()
        dupes = sorted(i for i, n in collections.Counter(ids).items() if n > 1)  # linear: a suite may list 10^5 seeds
        if dupes:
            problems.append(Problem(file, None, "members", f"instance ids repeat: {', '.join(dupes[:3])}"))
        bad = next((why for i in ids if (why := instance_id_problem(i))), None)
        if bad:  # the ids become file names: refused here, not when a file cannot be written or found
            problems.append(Problem(file, None, "members", f"an instance id made from this suite: {bad}"))
    if problems:
        raise InputError(problems)
    return suite


def _is_file(path: Path) -> bool:
    """Whether a file is there; a name no file system can hold (too long) is not one."""
    try:
        return path.is_file()
    except OSError:
        return False


def presets_suite(presets: dict[str, Preset], seeds: list[int]) -> Suite:
    """Presets x seeds without a suite: ids are '<preset>/seed-<n>'."""
    return Suite(None, (PresetMember(tuple(presets), tuple(seeds)),), dict(presets))


def resolve_spec(spec: str, seeds: list[int] | None = None) -> Suite:
    """A suite from a file path or a shipped name (suite or preset); presets are generated at `seeds` ([0])."""
    path = Path(spec)
    if path.is_file():
        kind, version = document_kind(load_document(path), spec)
        if kind == "suite":
            _no_seeds(seeds, spec)
            return load_suite(path)
        if kind == "generator":
            return presets_suite(load_presets(path), seeds or [0])
        raise InputError.at(spec, f"expected a suite or generator spec, found {kind}/{version}", field="eebench")
    if spec in shipped_suites():
        _no_seeds(seeds, spec)
        return load_suite(shipped_suites()[spec])
    if spec in shipped_presets():
        return presets_suite({spec: shipped_presets()[spec]}, seeds or [0])
    names = [*shipped_suites(), *shipped_presets()]
    raise InputError(f"{spec}: no such file, shipped suite or preset{did_you_mean(spec, names)} "
                     "(`eebench list` shows them)")


def _no_seeds(seeds: list[int] | None, spec: str) -> None:
    if seeds:
        raise InputError(f"{spec}: a suite lists its own seeds; --seeds is for presets")

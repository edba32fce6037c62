"""Specs as data: generator presets, suites and hand-made instances, shipped or the user's, in one registry.

A name given on the command line is resolved in this order: an existing file (its `eebench` kind says what it
is), a shipped suite, a shipped preset. Shipped specs live in `eebench/specs/`:
`presets/*.yaml` (generator/1), `suites/*.yaml` (suite/1) and `instances/**.yaml` (instance/1, hand-made).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from eebench.documents import (
    document_kind,
    expect_kind,
    instance_id_problem,
    load_checked,
    load_document,
    load_shipped,
    schema_problems,
    sha256_hex,
    validate_schema,
)
from eebench.errors import InputError, Problem, did_you_mean, near_path, quote
from eebench.instances import LoadedInstance, load_instance
from eebench.world.kinds import DEFAULT_ENV, WorldKind, check_env, envs, kind_of, kinds

VARIANTS = ("semantic", "symbolic")
Preset = Any  # a world kind's parsed preset (eebench.generator.params.Preset for grid_dag, ...)


def specs_root() -> Path:
    return Path(str(resources.files("eebench").joinpath("specs")))


def load_presets(path: Path | str, *, shipped: bool = False) -> dict[str, Preset]:
    """The presets of a generator/1 file, checked against its world kind's schema and for impossible values.

    `shipped`: eebench's own file, read by `load_shipped` (unchecked)."""
    file = str(path)
    doc = load_shipped(path) if shipped else load_document(path)
    kind = check_env(doc.get("env"), file)
    if not shipped:
        expect_kind(doc, file, "generator")
        validate_schema(doc, kind.generator_schema, file)
    return _parse_presets(kind, doc["presets"], file, "presets")


def _parse_presets(kind: WorldKind, raw: dict[str, Any], file: str, where: str) -> dict[str, Preset]:
    problems = [Problem(file, None, f"{where}.{path}", why)
                for name, preset in raw.items() for path, why in kind.preset_problems(name, preset)]
    if problems:
        raise InputError(problems)
    return {name: kind.parse_preset(name, preset) for name, preset in raw.items()}


def _inline_presets(doc: dict[str, Any], file: str, shipped: bool) -> dict[str, Preset]:
    """A suite's own presets, of the world kind its `env` names: checked as a generator/1 file of that kind."""
    raw = doc.get("presets", {})
    kind = check_env(doc.get("env", DEFAULT_ENV), file)
    if not raw:
        return {}
    as_generator = {"eebench": "generator/1", "env": kind.env, "presets": raw}
    # field paths: presets.<name>...
    problems = [] if shipped else schema_problems(as_generator, kind.generator_schema, file)
    if problems:
        raise InputError(problems)
    return _parse_presets(kind, raw, file, "presets")


@functools.cache
def shipped_presets() -> dict[str, Preset]:
    """Every shipped preset of every world kind, by name (names are unique across kinds)."""
    presets: dict[str, Preset] = {}
    for path in sorted((specs_root() / "presets").glob("*.yaml")):
        for name, preset in load_presets(path, shipped=True).items():
            if name in presets:
                raise InputError.at(str(path), f"preset {name!r} is defined twice among the shipped presets")
            presets[name] = preset
    return presets


@functools.cache
def shipped_suites() -> dict[str, Path]:
    suites = {}
    for path in sorted((specs_root() / "suites").glob("*.yaml")):
        suites[load_shipped(path)["name"]] = path
    return suites


@functools.cache   # the shipped suites do not change while eebench runs: read once per process, not per call
def shipped_instance_envs() -> dict[str, str]:
    """The shipped suites' instance ids and their world kinds (from the presets, not by generating): what a log or
    a trajectory naming one of them was played in, with no bench to look it up."""
    envs: dict[str, str] = {}
    for path in shipped_suites().values():
        suite = load_suite(path, shipped=True)
        for member in suite.members:
            one = Suite(suite.name, (member,), suite.presets)
            env = (kind_of(suite.presets[member.presets[0]]).env if isinstance(member, PresetMember)
                   else load_shipped(member.path).get("env", DEFAULT_ENV))
            envs.update(dict.fromkeys(one.instance_ids(), env))
    return envs


def shipped_instance(instance_id: str) -> LoadedInstance | None:
    """One instance of a shipped suite by its id (`park2026-main/low-small/seed-0`), generated as `eebench generate`
    would; None when the id names no shipped suite; an InputError, with the close id, when the suite has no such
    instance."""
    suite_name = instance_id.split("/")[0]
    if suite_name not in shipped_suites() or instance_id == suite_name:
        return None
    suite = resolve_spec(suite_name)
    if instance_id not in suite.instance_ids():
        raise InputError(f"{instance_id}: no such instance in the shipped suite {suite_name!r}"
                         f"{did_you_mean(instance_id, suite.instance_ids())}")
    instance = next(i for i in suite.instances() if i.id == instance_id)
    return LoadedInstance(instance, sha256_hex(instance.to_document()), instance_id, kind_of(instance))


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
    file: str | None = None  # the suite/1 or generator/1 file it was read from, if any
    defined: frozenset[str] = frozenset()  # the presets that file defines (under `presets`)

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

    def instances(self) -> Iterator[Any]:
        """Materialize every instance, in the order the suite lists them (each by its world kind's generator)."""
        for i, member in enumerate(self.members):
            if isinstance(member, PresetMember):
                for j, name in enumerate(member.presets):
                    preset = self.presets[name]
                    generate = kind_of(preset).generate_instance
                    for seed in member.seeds:
                        try:
                            instance = generate(preset, seed, f"{self._prefix()}{name}/seed-{seed}")
                        except InputError as exc:   # a preset that cannot be made: located in the spec's file
                            raise self._located(exc, f"presets.{name}" if name in self.defined
                                                else f"members[{i}].presets[{j}]") from None
                        yield instance
            else:
                yield from self._hand_made(member)

    def _located(self, exc: InputError, where: str) -> InputError:
        if self.file is None:   # presets named on the command line: the message names the preset
            return exc
        return InputError(Problem(self.file, None, where, p) if isinstance(p, str) else p for p in exc.problems)

    def _hand_made(self, member: InstanceMember) -> Iterator[Any]:
        loaded = load_instance(member.path)
        written, relabel = loaded.instance, loaded.kind.relabel
        base = f"{self._prefix()}{member.base_name}"
        for variant in member.variants or (None,):
            instance_id = f"{base}/{variant}" if variant else base
            if variant == "symbolic" and relabel is not None:  # load_suite refused variants a kind cannot make
                yield relabel(written, instance_id)
            else:
                yield dataclasses.replace(written, id=instance_id)

    def source(self) -> dict[str, Any]:
        """Provenance for index and manifest files: the spec the instances came from."""
        if self.document is not None:
            return {"kind": "suite", "name": self.name, "sha256": sha256_hex(self.document), "spec": self.document}
        seeds = sorted({s for m in self.members if isinstance(m, PresetMember) for s in m.seeds})
        return {"kind": "presets", "seeds": seeds,
                "presets": {name: preset.to_document() for name, preset in self.presets.items()}}


def load_suite(path: Path | str, *, shipped: bool = False) -> Suite:
    """A suite/1 file, checked; `shipped`: eebench's own, read by `load_shipped` (unchecked)."""
    file = str(path)
    doc = load_shipped(path) if shipped else load_checked(path, "suite")
    inline = _inline_presets(doc, file, shipped)
    known = {**shipped_presets(), **inline}
    problems: list[Problem | str] = []
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
            if not shipped:   # (the shipped suites are tested whole)
                broken = _instance_problems(path)   # what generate would refuse, so that validate says it too
                problems += broken
                if not broken and "symbolic" in raw.get("variants", ()):
                    problems += _no_twin(path, file, f"members[{i}].variants")
            members.append(InstanceMember(name, path, tuple(raw["variants"]) if "variants" in raw else None))
    suite = Suite(doc["name"], tuple(members), used, doc, file, frozenset(inline))
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


def _instance_problems(path: Path) -> list[Problem | str]:
    """The problems of a hand-made member's instance file, in the words `generate` gives when it reads it."""
    try:
        load_instance(path)
    except InputError as exc:
        return list(exc.problems)
    return []


def _no_twin(path: Path, file: str, where: str) -> list[Problem]:
    """A symbolic twin is asked of an instance whose world kind has no names to hide: say so here, not later."""
    env = load_document(path).get("env")
    if env not in envs() or check_env(env, file).relabel is not None:  # a bad env: the instance's own problem
        return []
    with_names = {k.env for k in kinds() if k.relabel is not None}
    return [Problem(file, None, where, f"{env} instances have no symbolic variant (only "
                                       f"{', '.join(sorted(with_names))} instances do)")]


def presets_suite(presets: dict[str, Preset], seeds: list[int], file: str | None = None) -> Suite:
    """Presets x seeds without a suite: ids are '<preset>/seed-<n>'; `file`: the generator/1 file defining them."""
    return Suite(None, (PresetMember(tuple(presets), tuple(seeds)),), dict(presets), file=file,
                 defined=frozenset(presets) if file is not None else frozenset())


def resolve_spec(spec: str, seeds: list[int] | None = None, option: str = "--seeds") -> Suite:
    """A suite from a file path or a shipped name (suite or preset); presets are generated at `seeds` ([0]), which
    the command took as `option` (play's are --instance-seeds: its --seeds are the agent's)."""
    path = Path(spec)
    if path.is_file():
        kind, version = document_kind(load_document(path), spec)
        if kind == "suite":
            _no_seeds(seeds, spec, option)
            return load_suite(path)
        if kind == "generator":
            return presets_suite(load_presets(path), seeds or [0], spec)
        raise InputError.at(spec, f"expected a suite or generator spec, found {kind}/{version}", field="eebench")
    if spec in shipped_suites():
        _no_seeds(seeds, spec, option)
        return load_suite(shipped_suites()[spec])
    if spec in shipped_presets():
        return presets_suite({spec: shipped_presets()[spec]}, seeds or [0])
    names = [*shipped_suites(), *shipped_presets()]
    raise InputError(f"{spec}: no such file, shipped suite or preset{near_path(spec) or did_you_mean(spec, names)} "
                     "(`eebench list` shows them)")


def _no_seeds(seeds: list[int] | None, spec: str, option: str) -> None:
    if seeds:
        raise InputError(f"{spec}: a suite lists its own seeds; {option} is for presets")

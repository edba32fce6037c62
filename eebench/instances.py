"""Instances on disk: load and check one file, find one by id in a folder, write a folder of them."""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from eebench.documents import (
    atomic_directory,
    canonical_json,
    expect_kind,
    instance_id_problem,
    load_document,
    loads_json,
    read_bytes,
    readable_json,
    schema_problems_unless_passed,
    sha256_hex,
    special_file,
)
from eebench.errors import InputError, Problem, did_you_mean, near_path, quote, quoted
from eebench.world.kinds import WorldKind, check_env

INDEX_FILE = "index.json"
INSTANCE_SUFFIXES = (".json", ".yaml", ".yml")
MANIFEST_FILE = "manifest.json"   # a bundle's (bundles.py): its instances are INSTANCES_FOLDER/<id>.json
INSTANCES_FOLDER = "instances"


@dataclass(frozen=True)
class Bench:
    """Where instances come from, and what a grade records about it."""

    root: Path
    name: str | None = None
    version: str | None = None
    digest: str | None = None
    instances: dict[str, str] | None = None   # id -> sha256 promised by a bundle's manifest
    label: str | None = None                  # how messages name a bundle (its root may be a temporary folder)

    @property
    def where(self) -> str:
        return self.label or str(self.root)


@dataclass(frozen=True)
class LoadedInstance:
    instance: Any    # the kind's instance type (GridDagInstance, RoomsInstance, ...)
    sha256: str      # of the document's canonical JSON
    file: str
    kind: WorldKind  # the world the document's `env` names


def instance_kind(doc: dict[str, Any], file: str) -> WorldKind:
    """The world kind of an instance document: its `env`, checked against the registry."""
    expect_kind(doc, file, "instance")
    return check_env(doc.get("env"), file)


def check_instance_document(doc: dict[str, Any], file: str, sha256: str | None = None) -> Any:
    """Kind, schema and world rules of an instance document (`sha256`: of its canonical JSON, if known); every
    problem found is reported at once. The schema check is skipped for a document that passed it before
    (documents.schema_problems_unless_passed); the world's rules are checked every time."""
    kind = instance_kind(doc, file)
    problems = schema_problems_unless_passed(doc, kind.instance_schema, file, sha256)
    if not problems:
        problems = [Problem(file, None, where, why) for where, why in kind.semantic_problems(doc)]
    if problems:
        raise InputError(problems)
    return kind.from_document(doc)


LOGGED = "logged"  # a trajectory of another environment, kept as text: no world's rules to replay it in


def check_trajectory_env(env: Any, loaded: LoadedInstance | None, file: str, line: int | None) -> WorldKind | None:
    """The world kind a trajectory is graded in: its instance's (None before the instance is loaded).

    A trajectory may omit `env`; one it gives must be its instance's kind. `logged` trajectories are kept as text
    and never replayed, so they are refused before their instance is even looked up.
    """
    if env == LOGGED:
        raise InputError(Problem(file, line, "env", f"{env!r} trajectories are kept as text and not graded by "
                                                    "replay; expected the world kind of its instance, or no env. If it was played "
                                                    "in an instance of the bench, convert its log again with "
                                                    "`eebench convert ... --bench BENCH` (or --instance ID)"))
    if loaded is None:
        return None
    if env is None or env == loaded.kind.env:
        return loaded.kind
    raise InputError(Problem(file, line, "env", f"expected {loaded.kind.env!r} (the kind of instance "
                                                f"{loaded.instance.id!r}) or no env, found {quoted(env)}"))


def check_played_in(claimed: Any, sha256: str, instance_id: str, where: str, file: str, line: int | None,
                    advice: str) -> None:
    """InputError unless a trajectory's `instance_sha256` (when it has one) is the digest of the instance it is
    replayed in: a log of another version of the instance would be replayed in a world it never saw."""
    if claimed is not None and claimed != sha256:
        raise InputError(Problem(file, line, "instance_sha256", f"the log was played in instance {claimed[:12]}..., "
                                                                f"but {instance_id!r} in {where} is {sha256[:12]}...; "
                                                                f"{advice}"))


def load_instance(path: Path | str) -> LoadedInstance:
    doc = load_document(path)
    sha256 = sha256_hex(doc)
    instance = check_instance_document(doc, str(path), sha256)
    return LoadedInstance(instance, sha256, str(path), instance_kind(doc, str(path)))


def instance_relpath(instance_id: str) -> str:
    """Where an instance lives inside an output folder: its id's '/'-parts become folders."""
    return f"{instance_id}.json"


class InstanceFile(NamedTuple):
    instance: Any
    entry: dict[str, str]   # id, path and sha256, as index.json and manifest.json list it
    data: bytes             # the file's bytes: the instance's canonical JSON, so sha256 of the file is its digest


def instance_files(instances: Iterable[Any], folder: str = "") -> Iterator[InstanceFile]:
    """Each instance as the file eebench writes for it, at `folder`/<id>.json; a repeated id is refused."""
    seen: set[str] = set()
    for instance in instances:
        if instance.id in seen:
            raise InputError(f"two instances share the id {instance.id!r}")
        seen.add(instance.id)
        data = canonical_json(instance.to_document())
        rel = f"{folder}/{instance_relpath(instance.id)}" if folder else instance_relpath(instance.id)
        yield InstanceFile(instance, {"id": instance.id, "path": rel, "sha256": hashlib.sha256(data).hexdigest()}, data)


def write_instances(instances: Iterable[Any], out: Path | str, source: dict[str, Any],
                    progress: Callable[[int], None] | None = None) -> list[dict[str, str]]:
    """Write each instance as canonical JSON (file bytes = the bytes its sha256 is taken over) plus index.json.

    Everything is written to a temporary folder that replaces `out` only when all instances succeeded.
    """
    entries: list[dict[str, str]] = []
    with atomic_directory(out, marker=INDEX_FILE) as tmp:
        for file in instance_files(instances):
            target = tmp / file.entry["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(file.data)
            entries.append(file.entry)
            if progress:
                progress(1)
        index = {"eebench": "index/1", "source": source, "instances": entries}
        (tmp / INDEX_FILE).write_bytes(readable_json(index))
    return entries


class InstanceLibrary:
    """Finds instances by id under a folder (recursively) or in one file, loading each at most once.

    Lookup tries, in order: an index.json or manifest.json naming the id, the file `<id>.json` (the layout
    `eebench generate` writes), then a scan of every instance file below the folder. Parsed instances are kept
    in a small LRU cache, so memory stays flat however many trajectories refer to them.
    """

    def __init__(self, root: Path | str, cache_size: int = 256, label: str | None = None):
        self.root = Path(root)
        self.where = f"in {label}" if label else f"under {self.root}"  # a bundle read from an archive: its name
        if not self.root.exists():
            raise InputError.at(str(self.root), f"no such file or folder{near_path(self.root)}")
        special = special_file(self.root)
        if special:   # (a pipe would be waited on; a device holds no instances)
            raise InputError.at(str(self.root), f"is {special}, expected a folder of instances, a bundle or an "
                                                "instance file")
        self._cache: OrderedDict[str, LoadedInstance] = OrderedDict()
        self._cache_size = cache_size
        self._paths: dict[str, Path] | None = None
        self.unreadable: list[Problem] = []  # files of the folder that are not JSON or YAML mappings, skipped
        self._conflicts: dict[str, list[Path]] = {}   # id -> the files that define it differently

    def _listed(self) -> dict[str, Path]:
        """id -> path from index files and, failing those, from reading every instance file."""
        if self._paths is not None:
            return self._paths
        paths: dict[str, list[Path]] = {}
        if self.root.is_file() and self.root.name not in (INDEX_FILE, MANIFEST_FILE):
            # one file named on purpose: whatever is wrong with it is the answer, not "no instances here"
            self._paths = {check_instance_document(load_document(self.root), str(self.root)).id: self.root}
            return self._paths
        if self.root.is_file():
            files = [self.root]
        else:
            files = sorted(p for p in _walk(self.root) if p.suffix.lower() in INSTANCE_SUFFIXES)
        for index in (p for p in files if p.name in (INDEX_FILE, MANIFEST_FILE)):
            try:
                listing = loads_json(read_bytes(index))  # within the limits: no RecursionError, no huge read
                for entry in listing.get("instances", []):
                    if isinstance(entry["id"], str) and isinstance(entry["path"], str):  # else not an index of ours
                        _claim(paths, entry["id"], index.parent / entry["path"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError, InputError):
                continue  # not an index of ours: the scan below still finds its instances
        indexed = {file for found in paths.values() for file in found}
        for file in files:
            if file.name in (INDEX_FILE, MANIFEST_FILE) or file in indexed:
                continue
            try:
                doc = load_document(file)
            except InputError as exc:
                self.unreadable.extend(p for p in exc.problems if isinstance(p, Problem))
                continue
            tag = doc.get("eebench")
            if isinstance(tag, str) and tag.startswith("instance/") and isinstance(doc.get("id"), str):
                _claim(paths, doc["id"], file)
        self._paths = {i: found[0] for i, found in paths.items()}
        for instance_id, found in paths.items():   # one id in several files: the same instance, or refused by name
            if len(found) > 1 and len({_sha_of(file) for file in found}) > 1:
                self._conflicts[instance_id] = found
        return self._paths

    def path_for(self, instance_id: str) -> Path | None:
        if self.root.is_dir() and not instance_id_problem(instance_id):  # else no file is named by it (too long)
            relpath = instance_relpath(instance_id)
            direct = self.root / relpath
            if direct.is_file():
                return direct
            # a bundle's layout, the path its manifest lists (without it, a grade against a bundle of 2,700
            # instances read every file to find one)
            in_bundle = self.root / INSTANCES_FOLDER / relpath
            if in_bundle.is_file() and (self.root / MANIFEST_FILE).is_file():
                return in_bundle
        return self._listed().get(instance_id)

    def ids(self) -> list[str]:
        return sorted(self._listed())

    def get(self, instance_id: str) -> LoadedInstance:
        """The instance with this id; InputError naming close ids when there is none."""
        hit = self._cache.get(instance_id)
        if hit is not None:
            self._cache.move_to_end(instance_id)
            return hit
        path = self.path_for(instance_id)
        if instance_id in self._conflicts and path != self.root / instance_relpath(instance_id):
            first, second = self._conflicts[instance_id][:2]
            raise InputError(f"instance {quoted(instance_id)} {self.where} is defined differently by {first} and "
                             f"{second}; keep one (or give --bench the folder of the one meant)")
        if path is None:
            close = did_you_mean(instance_id, self.ids())
            # a damaged file of the folder may be the one that held it: name it rather than only a close id
            damaged = (f"; {len(self.unreadable)} file(s) there could not be read, e.g. {self.unreadable[0]}"
                       if self.unreadable else "")
            raise InputError(f"no instance {quote(repr(instance_id))} {self.where}{close}{damaged}")
        loaded = load_instance(path)
        if loaded.instance.id != instance_id:
            raise InputError.at(str(path), f"expected id {instance_id!r}, found {loaded.instance.id!r}", field="id")
        self._cache[instance_id] = loaded
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return loaded

    def __iter__(self) -> Iterator[LoadedInstance]:
        for instance_id in self.ids():
            yield self.get(instance_id)


def _claim(paths: dict[str, list[Path]], instance_id: str, file: Path) -> None:
    """Note that `file` defines `instance_id` (the first file found is the one read)."""
    found = paths.setdefault(instance_id, [])
    if file not in found:
        found.append(file)


def _sha_of(file: Path) -> str | None:
    try:
        return sha256_hex(load_document(file))
    except InputError:
        return None


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            yield Path(folder) / name

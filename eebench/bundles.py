"""Frozen benchmark versions: publish a suite as a bundle, verify one, open one for grading, list them.

A bundle is a folder (or a .tar.gz / .zip of one) holding `manifest.json`, the card `README.md` and
`instances/<id>.json`. The manifest lists every other file with its sha256, and its `digest` (the bundle digest) is
the sha256 of the manifest's canonical JSON without `digest`, so one value covers every byte of the bundle.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from eebench import __version__
from eebench.archives import (ARCHIVE_SUFFIXES, archive_suffix, other_archive_suffix, read_archive, write_archive,
                              write_tree)
from eebench.documents import (
    atomic_directory,
    canonical_json,
    decode_utf8,
    document_kind,
    expect_kind,
    load_document,
    load_shipped,
    loads_json,
    parse_text,
    problems_unless_passed,
    read_bytes,
    readable_json,
    schema_problems,
    schema_problems_unless_passed,
    sha256_hex,
    special_file,
)
from eebench.errors import InputError, Problem, did_you_mean, near_path, one_of
from eebench.instances import (
    INDEX_FILE,
    INSTANCES_FOLDER,
    MANIFEST_FILE,
    Bench,
    InstanceLibrary,
    LoadedInstance,
    check_instance_document,
    instance_files,
    load_instance,
)
from eebench.suites import (Suite, load_suite, resolve_spec, shipped_instance, shipped_instances, shipped_suites,
                             specs_root)
from eebench.world.kinds import WorldKind, kind_of

CARD_FILE = "README.md"
REGISTRY_FILE = "bundles.yaml"   # in eebench/specs: the frozen versions of the shipped suites
VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")  # matched whole (fullmatch)
DIGEST_RE = re.compile(r"[0-9a-f]{64}")  # matched whole (fullmatch)


def check_version(version: str) -> str:
    """The --version of a bundle: X.Y.Z, three whole numbers without leading zeros."""
    if not VERSION_RE.fullmatch(version):
        raise InputError(f"--version: expected X.Y.Z, three whole numbers (e.g. 1.0.0), found {version!r}")
    return version


def check_digest(digest: str) -> str:
    """A cited bundle digest: 64 hex digits (upper case is read as lower case)."""
    if not DIGEST_RE.fullmatch(digest.lower()):
        raise InputError(f"--digest: expected a bundle digest of 64 hex digits, found {digest!r}")
    return digest.lower()


def bundle_digest(manifest: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the manifest without its own `digest` field."""
    return sha256_hex({k: v for k, v in manifest.items() if k != "digest"})


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the shipped frozen versions ----------------------------------------------------------------------

class ShippedBundle(NamedTuple):
    name: str
    version: str
    eebench_version: str
    digest: str


@functools.cache
def shipped_bundles() -> dict[tuple[str, str], ShippedBundle]:
    """The registry eebench/specs/bundles.yaml, by (name, version); each name is a shipped suite.

    Read as the other shipped specs are (load_shipped: its JSON copy, no schema pass): every grade of a bundle reads
    it, and the full door cost such a grade the import of PyYAML and jsonschema. The tests check it at the door."""
    path = specs_root() / REGISTRY_FILE
    file = str(path)
    doc = load_shipped(path)
    bundles: dict[tuple[str, str], ShippedBundle] = {}
    for i, entry in enumerate(doc["bundles"]):
        if entry["name"] not in shipped_suites():
            raise InputError.at(file, f"no shipped suite {entry['name']!r}", field=f"bundles[{i}].name")
        key = (entry["name"], entry["version"])
        if key in bundles:
            raise InputError.at(file, f"{key[0]} {key[1]} is listed twice", field=f"bundles[{i}]")
        bundles[key] = ShippedBundle(**entry)
    return bundles


# -- building ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bundle:
    """A bundle's files by path inside it, and its manifest."""

    files: dict[str, bytes]
    manifest: dict[str, Any]

    @property
    def title(self) -> str:
        return f"{self.manifest['name']} {self.manifest['version']}"


def _statistics(kind: WorldKind, instances: list[Any]) -> dict[str, dict[str, int | float]]:
    """Min, mean and max of each of the world kind's measures over the instances."""
    measures = [kind.measures(i) for i in instances]
    # a mean rounded to 2 decimals: exactly-rounded float arithmetic, the same digits on every machine
    return {key: {"min": min(m[key] for m in measures), "max": max(m[key] for m in measures),
                  "mean": round(sum(m[key] for m in measures) / len(measures), 2)} for key in kind.statistics}


def _one_kind(instances: list[Any]) -> WorldKind:
    """The world kind of a bundle: one per bundle, so its statistics mean one thing."""
    found = {k.env: k for k in map(kind_of, instances)}
    if len(found) != 1:
        raise InputError(f"a bundle holds instances of one world kind; this suite mixes {', '.join(sorted(found))}")
    return next(iter(found.values()))


def _counts(instances: list[Any]) -> dict[str, Any]:
    presets = Counter(i.meta["preset"] for i in instances if isinstance((i.meta or {}).get("preset"), str))
    generated = sum(presets.values())
    # node ids semantic or symbolic, for the kinds that have node names (none recorded: {})
    names = Counter(getattr(i, "names", None) for i in instances)
    return {"instances": len(instances), "generated": generated, "hand_made": len(instances) - generated,
            "presets": dict(presets), "names": {k: n for k, n in names.items() if k}}


def build_bundle(suite: Suite, version: str, eebench_version: str) -> Bundle:
    """Materialize a suite as a bundle in memory: instance files, card and manifest, every byte determined."""
    if suite.document is None or suite.name is None:
        raise InputError("only a suite (suite/1) is published as a bundle: it gives the bundle its name")
    files: dict[str, bytes] = {}
    entries: list[dict[str, str]] = []
    instances: list[Any] = []
    for file in instance_files(suite.instances(), INSTANCES_FOLDER):
        files[file.entry["path"]] = file.data
        entries.append(file.entry)
        instances.append(file.instance)
    manifest: dict[str, Any] = {
        "eebench": "manifest/1", "name": suite.name, "version": version, "eebench_version": eebench_version,
        "source": suite.source(), "instances": entries, "counts": _counts(instances),
    }
    kind = _one_kind(instances)
    manifest["statistics"] = _statistics(kind, instances)
    shipped = suite.name in shipped_suites() and load_document(shipped_suites()[suite.name]) == suite.document
    card = render_card(manifest, kind, shipped=shipped)
    files[CARD_FILE] = card
    manifest["card"] = {"path": CARD_FILE, "sha256": _sha256(card)}
    manifest["digest"] = bundle_digest(manifest)
    files[MANIFEST_FILE] = readable_json(manifest)
    return Bundle(files, manifest)


def render_card(manifest: dict[str, Any], kind: WorldKind, *, shipped: bool) -> bytes:
    """The bundle's README.md: what it contains, how it was made, how to check, use and cite it.

    It is made from the manifest without its card and digest (the card's sha256 is inside the digest, so the card
    cannot hold the digest itself) and holds no time or path, so publishing twice gives the same bytes.
    """
    name, version, eebench_version = manifest["name"], manifest["version"], manifest["eebench_version"]
    source, counts, stats = manifest["source"], manifest["counts"], manifest["statistics"]
    spec = source["spec"]
    presets = ", ".join(f"{preset} {n}" for preset, n in counts["presets"].items())
    made = [*([f"{counts['generated']} generated from presets ({presets})"] if counts["generated"] else []),
            *([f"{counts['hand_made']} hand-made"] if counts["hand_made"] else [])]
    names = ", ".join(f"{kind} {n}" for kind, n in sorted(counts["names"].items())) or "not recorded"
    reproduce = (f"`eebench publish {name} --version {version} --out DIR` writes these bytes again, with any later "
                 "eebench: the shipped versions are pinned." if shipped and (name, version) in shipped_bundles() else
                 f"Publishing the same spec (with the hand-made instance files it names beside it) with "
                 f"`eebench publish {name if shipped else 'SUITE.yaml'} --version {version} --out DIR` writes these "
                 f"bytes again with eebench {eebench_version}; a later eebench may not (only the versions `eebench "
                 "bundles` lists are pinned).")
    lines = [
        f"# {name} {version}", "",
        *([spec["description"].strip(), ""] if spec.get("description") else []),
        f"A frozen eebench benchmark: {counts['instances']} instances of the {kind.env} world, each in "
        "`instances/<id>.json` as its canonical JSON. `manifest.json` lists every file with its sha256; its "
        "`digest` is the bundle digest.", "",
        "## What it contains", "",
        f"- Instances: {' and '.join(made)}.",
        *([f"- Node ids: {names}."] if kind.relabel is not None else []), "",  # kinds with names to hide
        "| per instance | min | mean | max |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {label} | {stats[key]['min']} | {stats[key]['mean']:.2f} | {stats[key]['max']} |"
          for key, label in kind.statistics.items()), "",
        "## How it was made", "",
        f"Frozen with eebench {eebench_version} from the suite `{source['name']}`, whose spec is in `manifest.json` "
        f"under `source.spec` (sha256 {source['sha256']}). Generated instances record their preset's parameters "
        f"and their seed in `meta`. {reproduce}", "",
        "## How to check and use it", "",
        "```sh",
        "eebench verify THIS_FOLDER                      # recomputes every sha256 and the digest",
        "eebench grade RUNS.jsonl --bench THIS_FOLDER    # verifies it first, records name, version and digest",
        "```", "",
        "The bundle digest is the sha256 of the canonical JSON (keys sorted, separators `,` and `:`, UTF-8) of "
        "`manifest.json` without its `digest` field. The manifest holds the sha256 of every other file, so the "
        "digest covers every byte of the bundle.", "",
        "## How to cite it", "",
        f"{name} {version} (an eebench bundle), with its digest: the `digest` field of `manifest.json`, which "
        "`eebench verify` prints.",
        *(["", f"It reproduces: {spec['citation'].strip()}"] if spec.get("citation") else []),
    ]
    return ("\n".join(lines) + "\n").encode()


# -- reading and checking -----------------------------------------------------------------------------

@dataclass(frozen=True)
class BundleFiles:
    """What a bundle path holds: its regular files by their paths inside the bundle, read into memory (in a folder,
    those its manifest lists, or every one when it does not parse)."""

    path: Path
    files: dict[str, bytes]
    # path inside -> what it is instead of a listed file (a link, a special file: never followed; a file the
    # manifest does not list: never read)
    odd: dict[str, str]

    def where(self, member: str) -> str:
        """How messages name a member: its path (inside an archive: the archive's path, then the member's)."""
        return str(self.path / member)


def read_bundle(path: Path) -> BundleFiles:
    """The files of a bundle folder or archive; InputError when the path is not a bundle at all."""
    if path.is_dir():
        if not (path / MANIFEST_FILE).is_file():
            raise InputError.at(str(path), f"not a bundle: no {MANIFEST_FILE} (`eebench publish` writes bundles)")
        files, odd = _read_folder(path)
        if MANIFEST_FILE in odd:  # a link would let the manifest come from outside the bundle
            raise InputError.at(str(path / MANIFEST_FILE), f"is {odd[MANIFEST_FILE]}, not a file; refused")
        return BundleFiles(path, files, odd)
    if not path.exists():
        raise InputError.at(str(path), f"no such file or folder{near_path(path)}")
    if archive_suffix(path) is None:
        raise InputError.at(str(path), f"not a bundle: expected a folder holding {MANIFEST_FILE} or an archive of "
                                       f"one ({one_of(ARCHIVE_SUFFIXES)})")
    files = _without_top_folder(read_archive(path))
    if MANIFEST_FILE not in files:
        raise InputError.at(str(path), f"not a bundle: the archive holds no {MANIFEST_FILE}")
    return BundleFiles(path, files, {})


def _read_folder(folder: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    files: dict[str, bytes] = {}
    odd: dict[str, str] = {}
    listed = _manifest_members(folder)
    for here, dirs, names in os.walk(folder):
        base = Path(here)
        for name in [d for d in dirs if (base / d).is_symlink()]:
            odd[(base / name).relative_to(folder).as_posix()] = "a symbolic link"
            dirs.remove(name)
        for name in names:
            path = base / name
            rel = path.relative_to(folder).as_posix()
            try:
                mode = path.lstat().st_mode
                if stat.S_ISREG(mode) and listed is not None and rel not in listed:
                    odd[rel] = "a file it does not list"   # extra whatever it holds: not read (a stray 2 GB file)
                elif stat.S_ISREG(mode):
                    files[rel] = read_bytes(path)  # bounded: a bundle's files are small documents
                else:
                    odd[rel] = "a symbolic link" if stat.S_ISLNK(mode) else "a special file"
            except OSError as exc:
                raise InputError.at(str(path), f"cannot read: {exc.strerror}") from None
    return files, odd


def _manifest_members(folder: Path) -> set[str] | None:
    """The members a bundle folder's manifest lists, itself included; None when it does not parse as one (every
    file is then read, for the manifest's problems to be checked against them)."""
    manifest = folder / MANIFEST_FILE
    try:
        if not stat.S_ISREG(manifest.lstat().st_mode):   # (a link is refused by read_bundle, unread)
            return None
        doc = loads_json(read_bytes(manifest))
        return {MANIFEST_FILE, doc["card"]["path"], *(entry["path"] for entry in doc["instances"])}
    except (ValueError, TypeError, KeyError, OSError):   # (the walk says what cannot be read)
        return None


def _without_top_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """An archive made with `tar czf b.tar.gz b/` holds the bundle under one top folder: read it from there."""
    tops = {name.split("/", 1)[0] for name in files}
    if MANIFEST_FILE in files or len(tops) != 1 or f"{next(iter(tops))}/{MANIFEST_FILE}" not in files:
        return files
    return {name.split("/", 1)[1]: data for name, data in files.items()}


def manifest_problems(doc: Any, file: str) -> list[Problem]:
    """Schema, instance paths and digest of a manifest document; [] when it is sound."""
    if not isinstance(doc, dict):
        return [Problem(file, None, None, "expected a mapping at the top level")]
    try:
        expect_kind(doc, file, "manifest")
    except InputError as exc:
        return [p for p in exc.problems if isinstance(p, Problem)]
    problems = schema_problems_unless_passed(doc, "manifest", file)   # a bundle graded again skips jsonschema
    if problems:
        return problems
    seen: set[str] = set()
    for i, entry in enumerate(doc["instances"]):
        if entry["path"] != f"{INSTANCES_FOLDER}/{entry['id']}.json":
            problems.append(Problem(file, None, f"instances[{i}].path",
                                    f"expected {INSTANCES_FOLDER}/{entry['id']}.json, found {entry['path']!r}"))
        if entry["id"] in seen:
            problems.append(Problem(file, None, f"instances[{i}].id", f"{entry['id']!r} is listed twice"))
        seen.add(entry["id"])
    computed = bundle_digest(doc)
    if doc["digest"] != computed:
        problems.append(Problem(file, None, None, f"changed (its content has digest {computed[:12]}..., "
                                                  f"it records {doc['digest'][:12]}...)"))
    return problems


def load_manifest(data: bytes, file: str) -> dict[str, Any]:
    """A manifest from its bytes: sound (see manifest_problems) and in the one form eebench writes."""
    doc = parse_text(decode_utf8(data, file), file, yaml_syntax=False)
    problems = manifest_problems(doc, file)
    if not problems and data != readable_json(doc):
        problems = [Problem(file, None, None, "changed (not in the form eebench writes: keys sorted, two-space "
                                              "indents, a final newline)")]
    if problems:
        raise InputError(problems)
    return doc


def bundle_problems(bundle: BundleFiles, cited: str | None = None) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The manifest (None if unusable) and one problem per changed, missing or extra file, or foreign digest."""
    try:
        manifest = load_manifest(bundle.files[MANIFEST_FILE], bundle.where(MANIFEST_FILE))
        problems: list[Problem] = []
    except InputError as exc:
        problems = [p for p in exc.problems if isinstance(p, Problem)]
        try:  # a manifest that was edited but still parses: check the files against what it lists
            manifest = loads_json(bundle.files[MANIFEST_FILE])  # within the limits: no RecursionError
            if schema_problems(manifest, "manifest", MANIFEST_FILE):
                return None, problems
        except ValueError:
            return None, problems
    problems += file_problems(bundle, manifest)
    if not problems:   # (derived from files that are intact and valid)
        problems = problems_unless_passed(f"{DERIVED_CHECK}/{__version__} {manifest['digest']}",
                                          lambda: derived_problems(bundle, manifest))
    name, version, digest = manifest["name"], manifest["version"], manifest["digest"]
    pin = shipped_bundles().get((name, version))
    if pin is not None and pin.digest != digest:
        problems.append(Problem(str(bundle.path), None, None,
                                f"{name} {version} is shipped with digest {pin.digest}, this bundle records {digest}: "
                                "not the published benchmark"))
    if cited is not None and cited != digest:
        problems.append(Problem(str(bundle.path), None, None, f"digest {digest} is not the cited {cited}"))
    return manifest, problems


def file_problems(bundle: BundleFiles, manifest: dict[str, Any]) -> list[Problem]:
    """Each file the manifest lists that is changed or missing, and each file it does not list."""
    problems: list[Problem] = []
    listed = [*manifest["instances"], manifest["card"]]
    for entry in listed:
        member = entry["path"]
        where = bundle.where(member)
        if member in bundle.odd:
            problems.append(Problem(where, None, None, f"changed (now {bundle.odd[member]}, not a file)"))
        elif member not in bundle.files:
            problems.append(Problem(where, None, None, f"missing (listed in {MANIFEST_FILE})"))
        elif (found := _sha256(bundle.files[member])) != entry["sha256"]:
            problems.append(Problem(where, None, None, f"changed (sha256 {found[:12]}..., {MANIFEST_FILE} lists "
                                                       f"{entry['sha256'][:12]}...)"))
        elif entry is not manifest["card"]:
            problems += _instance_problems_unless_passed(bundle.files[member], entry["id"], where, found)
    known = {MANIFEST_FILE} | {entry["path"] for entry in listed}
    for member in sorted((bundle.files.keys() | bundle.odd.keys()) - known):
        problems.append(Problem(bundle.where(member), None, None, f"extra (not listed in {MANIFEST_FILE})"))
    return problems


# Bundle instance files that passed _instance_problems, by the sha256 of their bytes and the id the manifest lists,
# in the record of documents that passed (documents.problems_unless_passed): the check depends on nothing but those
# and eebench's rules, so a bundle graded again reads each file and its digest but checks none of them again (the
# check was 2 s of every grade against a bundle of 2,700 instances). The entry names eebench's version and
# INSTANCE_CHECK: change it with the check or the worlds' rules.
INSTANCE_CHECK = "bundle-instance-check/1"


def _instance_problems_unless_passed(data: bytes, instance_id: str, where: str, sha256: str) -> list[Problem]:
    entry = (f"{INSTANCE_CHECK}/{__version__} {sha256} "
             f"{hashlib.sha256(instance_id.encode()).hexdigest()}")   # (an id the manifest's schema passed: ASCII)
    return problems_unless_passed(entry, lambda: _instance_problems(data, instance_id, where))


def _instance_problems(data: bytes, instance_id: str, where: str) -> list[Problem]:
    """A listed instance file, its sha256 as listed, must also be what publish writes: the canonical JSON of a valid
    instance of the listed id (a manifest digested again over other bytes is not a bundle of instances)."""
    try:
        doc = loads_json(data)
        if not isinstance(doc, dict):
            return [Problem(where, None, None, "changed (not an instance document)")]
        instance = check_instance_document(doc, where)
    except ValueError as exc:
        return [Problem(where, None, None, f"changed (not JSON: {exc})")]
    except InputError as exc:
        return [p for p in exc.problems if isinstance(p, Problem)]
    if instance.id != instance_id:
        return [Problem(where, None, "id", f"expected {instance_id!r} (as {MANIFEST_FILE} lists it), "
                                           f"found {instance.id!r}")]
    if canonical_json(doc) != data:
        return [Problem(where, None, None, "changed (not the instance's canonical JSON, the form eebench writes)")]
    return []


# What a manifest records besides the files' digests is derived from the bundle, and checked as such: a manifest
# edited and digested again (its counts, the spec's sha256) still holds its own data. Passed, it is recorded by the
# bundle digest, which covers every byte (a bundle graded again is not read twice). Change DERIVED_CHECK with it.
DERIVED_CHECK = "bundle-derived-check/1"


def derived_problems(bundle: BundleFiles, manifest: dict[str, Any]) -> list[Problem]:
    """The source spec's sha256 and the counts, and for a bundle this eebench version froze, the statistics and
    the card too, each as its data gives it; [] when all agree (the files are intact and their instances valid:
    file_problems found nothing). Another version may count, measure and word the card otherwise: only the counts
    it records are checked, and the measurements and the card are left as they are."""
    file = bundle.where(MANIFEST_FILE)
    problems = []
    source = manifest["source"]
    if source.get("kind") == "suite" and sha256_hex(source["spec"]) != source["sha256"]:
        problems.append(Problem(file, None, "source.sha256", f"is not the sha256 of source.spec (that is "
                                                             f"{sha256_hex(source['spec'])[:12]}...)"))
    instances = [check_instance_document(loads_json(bundle.files[entry["path"]]), bundle.where(entry["path"]))
                 for entry in manifest["instances"]]
    kinds = sorted({kind_of(instance).env for instance in instances})
    if len(kinds) != 1:
        return [*problems, Problem(file, None, "instances", f"expected instances of one world kind, found "
                                                            f"{', '.join(kinds)}")]
    kind = kind_of(instances[0])
    same_version = manifest["eebench_version"] == __version__
    derived = {"counts": _counts(instances)}
    if same_version:
        with contextlib.suppress(InputError):   # (a best return the solver did not prove in time here: not checked)
            derived["statistics"] = _statistics(kind, instances)
    for field, found in derived.items():
        recorded = manifest[field]
        for key in sorted(recorded.keys() | found.keys() if same_version else recorded.keys() & found.keys()):
            if recorded.get(key) != found.get(key):
                problems.append(Problem(file, None, f"{field}.{key}", f"records {_json(recorded.get(key))}, its "
                                                                      f"instances give {_json(found.get(key))}"))
    if "statistics" in derived and not problems:
        spec = source.get("spec")
        shipped = manifest["name"] in shipped_suites() and load_document(shipped_suites()[manifest["name"]]) == spec
        # (the card lists presets in the instances' order; the manifest's JSON sorts their keys)
        card = render_card({**manifest, **derived}, kind, shipped=shipped)
        if card != bundle.files[manifest["card"]["path"]]:
            problems.append(Problem(bundle.where(manifest["card"]["path"]), None, None,
                                    f"changed (not the card {MANIFEST_FILE} gives)"))
    return problems


def _json(value: Any) -> str:
    return "nothing" if value is None else canonical_json(value).decode()


def verify_bundle(path: Path, cited: str | None = None) -> Bundle:
    """The bundle at `path` if every file is as its manifest says; InputError with one line per problem otherwise."""
    bundle = read_bundle(path)
    manifest, problems = bundle_problems(bundle, check_digest(cited) if cited is not None else None)
    if problems or manifest is None:
        raise InputError([*problems, Problem(str(path), None, None, f"verification failed ({len(problems)} problem"
                                                                    f"{'' if len(problems) == 1 else 's'})")])
    return Bundle(bundle.files, manifest)


# -- publishing --------------------------------------------------------------------------------------

class Published(NamedTuple):
    bundle: Bundle
    written: bool   # False: `out` already held these exact bytes


def load_publishable(spec: str) -> Suite:
    """A suite to publish: a suite/1 file, or the name of a shipped suite."""
    if Path(spec).is_file():
        return load_suite(spec)
    if spec in shipped_suites():
        return load_suite(shipped_suites()[spec])
    raise InputError(f"{spec}: no such suite file or shipped suite{did_you_mean(spec, shipped_suites())} "
                     "(`eebench bundles` lists the shipped ones)")


def publish(spec: str, version: str, out: Path) -> Published:
    """Publish a suite as the bundle `out` (a folder, or an archive by its suffix); a bundle is never replaced.

    Publishing the same content again is a no-op. A different bundle at `out`, or the same name and version with
    other content, is refused, naming the first instance that differs. A shipped name and version must give
    exactly its pinned digest.
    """
    check_version(version)
    other = other_archive_suffix(out)
    if other is not None and not out.is_dir():
        raise InputError.at(str(out), f"--out ends in {other!r}, an archive eebench does not write; expected a folder "
                                      f"or an archive ending in {one_of(ARCHIVE_SUFFIXES)}")
    suite = load_publishable(spec)
    existing = _existing(out)
    bundle = build_bundle(suite, version, _frozen_with(str(suite.name), version, existing))
    pin = shipped_bundles().get((str(suite.name), version))
    if pin is not None and pin.digest != bundle.manifest["digest"]:
        raise InputError(f"{spec}: {bundle.title} is shipped with digest {pin.digest}, but this spec gives "
                         f"{bundle.manifest['digest']}; a changed benchmark needs a new version")
    if existing is None:
        try:
            # (a link to nothing or to an empty folder: its target)
            target = out.resolve() if out.is_symlink() else out
        except (RuntimeError, OSError) as exc:   # (a loop of links: Python 3.11 raises RuntimeError, 3.13 OSError)
            raise InputError.at(str(out), f"is a symbolic link that cannot be followed ({exc}); expected a folder, "
                                          "an archive file or a link to one") from None
        try:
            if archive_suffix(out) and not out.is_dir():  # an empty folder named like an archive stays a folder
                write_archive(target, bundle.files, replace=False)
            else:
                with atomic_directory(target, marker=MANIFEST_FILE, replace=False) as tmp:
                    write_tree(bundle.files, tmp)
            return Published(bundle, True)
        except FileExistsError:   # another publish wrote `out` meanwhile: its bundle is kept, and compared
            existing = _existing(out)
            if existing is None:
                raise InputError.at(str(out), "changed while this publish wrote it; publish again") from None
    if existing.files == bundle.files and not existing.odd:  # a link or special file in it is a change too
        return Published(bundle, False)
    raise _conflict(out, existing, bundle)


def _existing(out: Path) -> BundleFiles | None:
    """What `out` holds already: nothing (None), or a bundle; anything else is refused."""
    if out.is_dir():
        if not any(out.iterdir()):
            return None
        if not (out / MANIFEST_FILE).is_file():
            raise InputError.at(str(out), "exists and is not a bundle; choose an empty or new folder")
        return read_bundle(out)
    if archive_suffix(out) is None:
        if out.exists():
            raise InputError.at(str(out), "exists and is a file; --out is a folder or a "
                                          f"{one_of(ARCHIVE_SUFFIXES)} file")
        return None
    return read_bundle(out) if out.exists() else None


def _loose_manifest(bundle: BundleFiles | None) -> dict[str, Any]:
    """The manifest of an existing bundle as far as it parses, for names and versions in messages; {} if not."""
    with contextlib.suppress(ValueError, KeyError, AttributeError):
        doc = loads_json((bundle.files if bundle else {})[MANIFEST_FILE])
        if isinstance(doc, dict):
            return doc
    return {}


def _frozen_with(name: str, version: str, existing: BundleFiles | None) -> str:
    """The eebench version a name and version was frozen with: pinned if shipped, kept if published at `out`."""
    pin = shipped_bundles().get((name, version))
    if pin is not None:
        return pin.eebench_version
    old = _loose_manifest(existing)
    if (old.get("name"), old.get("version")) == (name, version) and isinstance(old.get("eebench_version"), str):
        return old["eebench_version"]
    return __version__


def _conflict(out: Path, existing: BundleFiles, bundle: Bundle) -> InputError:
    old = _loose_manifest(existing)
    held = (old.get("name"), old.get("version"))
    if held != (bundle.manifest["name"], bundle.manifest["version"]):
        what = f"{held[0]} {held[1]}" if all(isinstance(v, str) for v in held) else "another bundle"
        return InputError.at(str(out), f"holds {what}; a published bundle is never replaced: choose another --out")
    if existing.files == bundle.files:   # the same bytes, and a link or a special file beside them
        path, what = sorted(existing.odd.items())[0]
        return InputError.at(str(out), f"{bundle.title} is published here, but {path} is {what}; remove it (then "
                                       "`eebench verify`)")
    return InputError.at(str(out), f"{bundle.title} is already published here with other content: "
                                   f"{_first_difference(existing.files, bundle)}; a changed benchmark needs a new "
                                   "version")


def _first_difference(old: dict[str, bytes], bundle: Bundle) -> str:
    for entry in bundle.manifest["instances"]:
        there = old.get(entry["path"])
        if there is None:
            return f"instance {entry['id']!r} is not in it"
        if there != bundle.files[entry["path"]]:
            return f"instance {entry['id']!r} differs (sha256 {_sha256(there)[:12]}... there, " \
                   f"{entry['sha256'][:12]}... now)"
    only_old = sorted(old.keys() - bundle.files.keys())
    if only_old:
        return f"{only_old[0]} is only in the published one"
    return f"{next(p for p in sorted(bundle.files) if old[p] != bundle.files[p])} differs"


# -- grading against a bundle, and listing bundles ----------------------------------------------------

@contextlib.contextmanager
def open_bench(path: Path) -> Iterator[Bench]:
    """The instances `eebench grade --bench` names: a bundle (folder or archive), verified first, or a plain folder.

    An archive is read in memory and written below a temporary folder, which is removed afterwards.
    """
    if path.is_file() and archive_suffix(path):
        bundle = verify_bundle(path)
        with tempfile.TemporaryDirectory(prefix="eebench-bundle-") as tmp:
            write_tree(bundle.files, Path(tmp))
            yield _bench(Path(tmp), path, bundle)
        return
    enclosing = _enclosing_bundle(path)
    if enclosing is not None:
        yield _bench(enclosing, enclosing, verify_bundle(enclosing))
    else:
        yield Bench(path)


class Instances(NamedTuple):
    """What `open_instances` found: how many instances, and each loaded in turn (memory stays flat)."""

    count: int
    each: Iterator[LoadedInstance]


@contextlib.contextmanager
def open_instances(target: str, seeds: list[int] | None = None, option: str = "--seeds") -> Iterator[Instances]:
    """The instances `show` and `play` act on, from whatever names them, in a stable order.

    `target` is an instance file; a folder of instances; a bundle (folder, manifest.json, .tar.gz or .zip),
    verified first as `grade --bench` does; a suite or generator spec file; the name of a shipped suite or
    preset, generated as `eebench generate` would (presets at `seeds`, default [0], given as `option`); or the name
    of a hand-made instance (`eebench list`).
    """
    path = Path(target)
    if path.is_file() and path.name == INDEX_FILE:  # the listing `eebench generate` writes: its folder
        path = path.parent
    if not path.exists() and target in shipped_instances():   # a hand-made instance, as `eebench list` names it
        path = shipped_instances()[target]
    shipped = None if path.exists() else shipped_instance(target)   # an id of a shipped suite's, as eebench.load
    if shipped is not None:
        if seeds:
            raise InputError(f"{target}: {option} picks the seeds of presets; an instance has its own")
        yield Instances(1, iter([shipped]))
        return
    if not path.exists() and ("/" in target or os.sep in target or archive_suffix(path)
                              or path.suffix.lower() in (".json", ".yaml", ".yml")):  # meant as a path, not a name
        raise InputError.at(target, f"no such file{near_path(path)}")
    if path.exists() and not path.is_file() and not path.is_dir():  # /dev/zero, a pipe: never read
        raise InputError.at(target, f"is {special_file(path) or 'a device'}, expected a file")   # (by its kind)
    document = path.is_file() and not archive_suffix(path) and path.name != MANIFEST_FILE
    found = document_kind(load_document(path), target) if document else None
    if found is not None and found[0] not in ("instance", "suite", "generator"):
        raise InputError.at(target, "expected an instance, suite or generator document (or a folder or bundle of "
                                    f"instances), found {found[0]}/{found[1]}", field="eebench")
    if not path.exists() or (found is not None and found[0] != "instance"):
        suite = resolve_spec(target, seeds, option)   # a name, or a suite or generator file
        yield Instances(len(suite), (LoadedInstance(i, sha256_hex(i.to_document()), f"{target} ({i.id})", kind_of(i))
                                     for i in suite.instances()))
        return
    if seeds:
        raise InputError(f"{target}: {option} picks the seeds of presets; an instance, folder or bundle has its own")
    if document:
        yield Instances(1, iter([load_instance(path)]))
        return
    with open_bench(path) as bench:
        library = InstanceLibrary(bench.root, label=bench.label)
        ids = library.ids()
        if library.unreadable:  # a malformed file among the instances is bad input, not something to skip quietly
            raise InputError(library.unreadable)
        if not ids:
            raise InputError.at(target, "holds no instance files")
        yield Instances(len(ids), (library.get(instance_id) for instance_id in ids))


def _enclosing_bundle(path: Path) -> Path | None:
    """The bundle folder `path` is, or lies in (its manifest.json, its instances/ folder): grading part of a bundle
    is grading the bundle, verified, so its instances are never taken unchecked."""
    folder = path.parent if path.is_file() and path.name == MANIFEST_FILE else path
    if (folder / MANIFEST_FILE).exists():
        return folder
    for candidate in folder.resolve().parents:   # only a manifest of eebench's counts here: manifest.json is common
        manifest = candidate / MANIFEST_FILE
        if manifest.is_file() and manifest.stat().st_size < (64 << 20) and b'"manifest/' in manifest.read_bytes():
            return candidate
    return None


def _bench(root: Path, given: Path, bundle: Bundle) -> Bench:
    manifest = bundle.manifest
    return Bench(root, manifest["name"], manifest["version"], manifest["digest"],
                 {entry["id"]: entry["sha256"] for entry in manifest["instances"]},
                 label=f"bundle {bundle.title} ({given})")


class Listed(NamedTuple):
    name: str
    version: str
    instances: int
    digest: str
    path: Path | None       # None: a shipped bundle, materialized by `eebench publish`
    shipped: bool | None    # a shipped name and version with its pinned digest (True) or another (False)


def shipped_listing() -> list[Listed]:
    return [Listed(b.name, b.version, len(load_suite(shipped_suites()[b.name])), b.digest, None, True)
            for b in shipped_bundles().values()]


def find_bundles(folder: Path) -> list[Listed]:
    """The bundles below `folder` (folders holding a sound manifest.json, and archives of them), not verified."""
    if not folder.is_dir():
        raise InputError.at(str(folder), "is a file, expected a folder to search for bundles" if folder.exists()
                            else f"no such folder{near_path(folder)}")
    found: list[Listed] = []
    for here, dirs, names in os.walk(folder):
        base = Path(here)
        if MANIFEST_FILE in names and (listed := _listed(base)) is not None:
            found.append(listed)
            dirs.clear()  # a bundle's own files are not bundles
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # hidden: e.g. a publish in progress
        found += [listed for name in names if archive_suffix(name) and (listed := _listed(base / name))]
    return sorted(found, key=lambda listed: str(listed.path))


def _listed(path: Path) -> Listed | None:
    try:
        bundle = read_bundle(path)
        manifest = load_manifest(bundle.files[MANIFEST_FILE], bundle.where(MANIFEST_FILE))
    except InputError:
        return None  # not a bundle: another archive, an index, a broken manifest (`eebench verify` says which)
    pin = shipped_bundles().get((manifest["name"], manifest["version"]))
    return Listed(manifest["name"], manifest["version"], len(manifest["instances"]), manifest["digest"], path,
                  None if pin is None else pin.digest == manifest["digest"])

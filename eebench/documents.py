"""Reading, checking and writing eebench documents: canonical JSON, kinds and versions, schemas, atomic output."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import IO, Any

import jsonschema
import referencing
import yaml

from eebench.errors import InputError, Problem, did_you_mean, one_of

# The newest version of each document kind this code reads. A newer file is refused, never guessed at.
KNOWN_KINDS: dict[str, int] = {
    "instance": 1,
    "trajectory": 1,
    "generator": 1,
    "suite": 1,
    "index": 1,
    "manifest": 1,
    "registry": 1,
    "checkpoints": 1,
}
_KIND_RE = re.compile(r"^([a-z][a-z0-9_.-]*)/([0-9]+)$")


# -- canonical JSON -------------------------------------------------------------------------------

def canonical_json(document: Any) -> bytes:
    """The one byte form every digest is taken over: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_hex(document: Any) -> str:
    return hashlib.sha256(canonical_json(document)).hexdigest()


def readable_json(document: Any) -> bytes:
    """The form of index.json and manifest.json: canonical JSON's keys and characters, two-space indents, a final
    newline. One form only, so a manifest's bytes follow from its content."""
    return (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


# -- reading ----------------------------------------------------------------------------------------

def _json_compatible(value: Any) -> Any:
    """YAML allows int keys and dates; JSON Schema and canonical JSON see only JSON types."""
    if isinstance(value, dict):
        return {str(k): _json_compatible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_compatible(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def parse_text(text: str, file: str, *, yaml_syntax: bool) -> Any:
    """Parse JSON or YAML text, turning syntax errors into a located one-line problem."""
    if yaml_syntax:
        try:
            return _json_compatible(yaml.safe_load(text))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            line = mark.line + 1 if mark is not None else None
            raise InputError.at(file, f"malformed YAML: {reason}", line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.at(file, f"malformed JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None


def open_input(path: Path) -> IO[bytes]:
    """A file the user named, opened for reading bytes; what stops it (missing, a folder, no permission) is one line."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError.at(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError.at(str(path), "is a folder, expected a file") from None
    except OSError as exc:
        raise InputError.at(str(path), f"cannot read: {exc.strerror}") from None


def read_text(path: Path) -> str:
    with open_input(path) as handle:
        data = handle.read()
    return decode_utf8(data, str(path))


def decode_utf8(data: bytes, file: str, *, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if line is None:
            line = data.count(b"\n", 0, exc.start) + 1
        raise InputError.at(file, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line) from None


def is_yaml_path(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def load_document(path: Path | str) -> dict[str, Any]:
    """Read one JSON or YAML document (chosen by suffix) that must be a mapping."""
    path = Path(path)
    data = parse_text(read_text(path), str(path), yaml_syntax=is_yaml_path(path))
    if not isinstance(data, dict):
        raise InputError.at(str(path), f"expected a mapping at the top level, found {json_type(data)}")
    return data


# -- kinds and versions -----------------------------------------------------------------------------

def document_kind(document: dict[str, Any], file: str, *, line: int | None = None) -> tuple[str, int]:
    """The (kind, version) named by a document's `eebench` field, refusing unknown kinds and newer versions."""
    tag = document.get("eebench")
    if tag is None:
        raise InputError.at(file, "missing required field (expected e.g. 'instance/1')", line=line, field="eebench")
    match = _KIND_RE.match(tag) if isinstance(tag, str) else None
    if not match:
        raise InputError.at(file, f"expected 'kind/N' (e.g. 'instance/1'), found {tag!r}", line=line, field="eebench")
    kind, version = match.group(1), int(match.group(2))
    if kind not in KNOWN_KINDS:
        raise InputError.at(
            file, f"unknown document kind {kind!r}{did_you_mean(kind, KNOWN_KINDS)}; known: {one_of(KNOWN_KINDS)}",
            line=line, field="eebench")
    newest = KNOWN_KINDS[kind]
    if version > newest:
        raise InputError.at(
            file, f"{tag} is newer than this eebench reads ({kind}/{newest}); upgrade eebench",
            line=line, field="eebench")
    if version < 1:
        raise InputError.at(file, f"there is no version {version} of {kind}", line=line, field="eebench")
    return kind, version


def expect_kind(document: dict[str, Any], file: str, kind: str, *, line: int | None = None) -> int:
    found, version = document_kind(document, file, line=line)
    if found != kind:
        article = "an" if kind[0] in "aeiou" else "a"
        raise InputError.at(file, f"expected {article} {kind} document, found {found}/{version}", line=line,
                            field="eebench")
    return version


# -- schemas ----------------------------------------------------------------------------------------

@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """A shipped JSON Schema by name, e.g. 'instance.grid_dag' or 'trajectory'."""
    try:
        text = resources.files("eebench").joinpath("schemas", f"{name}.json").read_text("utf-8")
    except FileNotFoundError:
        raise InputError(f"unknown schema {name!r}{did_you_mean(name, schema_names())}; "
                         f"known: {one_of(schema_names())}") from None
    return json.loads(text)


def schema_names() -> list[str]:
    folder = resources.files("eebench").joinpath("schemas")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


@functools.cache
def _registry() -> referencing.Registry:
    """Every shipped schema under its $id, so one schema can $ref another."""
    resources_ = [(load_schema(n)["$id"], referencing.Resource.from_contents(load_schema(n))) for n in schema_names()]
    return referencing.Registry().with_resources(resources_)


def _is_integer(checker: Any, value: Any) -> bool:
    """JSON Schema counts 1.0 as an integer; canonical JSON would write it as `1.0`, so a digest would depend on
    how a number was typed. Integers (coordinates, budgets, seeds) must be written as integers."""
    return isinstance(value, int) and not isinstance(value, bool)


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    strict = jsonschema.validators.extend(cls, type_checker=cls.TYPE_CHECKER.redefine("integer", _is_integer))
    return strict(schema, registry=_registry())


def field_path(parts: Any) -> str:
    """`nodes[2].pos` from a JSON Schema error path."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _explain(error: jsonschema.ValidationError) -> list[tuple[str, str]]:
    """(field path, reason) pairs for one schema error, in words a user can act on."""
    path = list(error.absolute_path)
    here = field_path(path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    expected = error.schema.get("x-expected") if isinstance(error.schema, dict) else None
    if kind == "required":
        return [(field_path(path + [k]), "missing required field") for k in value if k not in instance]
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extra = [k for k in instance if k not in known and not any(re.search(p, k) for p in patterns)]
        if expected:
            return [(field_path(path + [k]), f"unexpected key; {expected}") for k in extra]
        return [(field_path(path + [k]), f"unknown field{did_you_mean(k, known)}") for k in extra]
    if expected:
        return [(here, f"expected {expected}, found {_short(instance)}")]
    if kind == "type":
        names = value if isinstance(value, list) else [value]
        return [(here, f"expected {' or '.join(names)}, found {json_type(instance)} {_short(instance)}")]
    if kind == "const":
        return [(here, f"expected {_short(value)}, found {_short(instance)}")]
    if kind == "enum":
        words = [str(v) for v in value]
        return [(here, f"expected one of {', '.join(words)}, found {_short(instance)}"
                       f"{did_you_mean(str(instance), words)}")]
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[kind]
        return [(here, f"expected a number {sign} {value}, found {_short(instance)}")]
    if kind in ("minItems", "maxItems"):
        word = "at least" if kind == "minItems" else "at most"
        return [(here, f"expected {word} {value} item(s), found {len(instance)}")]
    if kind == "uniqueItems":
        return [(here, f"expected distinct items, found {_short(instance)}")]
    if kind == "minLength":
        return [(here, "expected a non-empty string")]
    if kind in ("anyOf", "oneOf") and error.context:
        return [pair for e in _meant_branch(error) for pair in _explain(e)]
    return [(here, error.message)]


def _meant_branch(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The errors of the oneOf/anyOf branch the value was most likely written for.

    That is the branch whose complaints lie deepest: a suite member {presets: [...], seeds: [-1]} was meant as a
    presets member (its only error is inside seeds), not as an instance member (missing `instance`, two unknown
    keys). jsonschema's best_match prefers the shallow errors, i.e. the wrong branch here.
    """
    branches: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    depth = len(error.absolute_path)

    def at_top(errors: list[jsonschema.ValidationError]) -> tuple[int, int, int]:
        top = [e for e in errors if len(e.absolute_path) == depth]
        wrong_shape = sum(e.validator in ("type", "const", "enum", "required", "additionalProperties") for e in top)
        return wrong_shape, len(top), len(errors)

    return min(branches.values(), key=at_top)  # ties: the first branch, in schema order


def _path_order(error: jsonschema.ValidationError) -> list[tuple[int, str]]:
    """Errors in document order: list indices as numbers (map[2] before map[10]), keys by name."""
    return [(p, "") if isinstance(p, int) else (-1, str(p)) for p in error.absolute_path]


def schema_problems(document: Any, schema: str, file: str, *, line: int | None = None) -> list[Problem]:
    problems: dict[Problem, None] = {}  # ordered and without repeats: jsonschema raises one `required` error
    # per missing field, and each is explained by naming every missing field of its object
    for error in sorted(_validator(schema).iter_errors(document), key=_path_order):
        problems.update((Problem(file, line, where or None, why), None) for where, why in _explain(error))
    return list(problems)


def validate_schema(document: Any, schema: str, file: str, *, line: int | None = None) -> None:
    problems = schema_problems(document, schema, file, line=line)
    if problems:
        raise InputError(problems)


def load_checked(path: Path | str, kind: str, schema: str | None = None) -> dict[str, Any]:
    """A document of `kind` read from `path`, checked against its schema (the kind's own unless named)."""
    doc = load_document(path)
    expect_kind(doc, str(path), kind)
    validate_schema(doc, schema or kind, str(path))
    return doc


# -- writing ----------------------------------------------------------------------------------------

def _make_folders(folder: Path, target: Path) -> list[Path]:
    """Create `folder` and any missing parents; return the ones created, deepest first (to undo on failure).

    A folder that cannot be made (no permission, a file in the way, a read-only disk) is bad output input: an
    InputError naming `target`, the path the user gave.
    """
    created = []
    missing = folder
    while not missing.exists():
        created.append(missing)
        missing = missing.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_folders(created)
        raise InputError.at(str(target), f"cannot write: {exc.strerror}") from None
    return created


def _remove_folders(created: list[Path]) -> None:
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if still empty


@contextlib.contextmanager
def atomic_file(path: Path | str, mode: str = "w") -> Iterator[IO[Any]]:
    """Write a file through a temporary sibling, renamed into place only if the block succeeds.

    Folders created for it are removed again when the block fails, so a failed run leaves nothing behind.
    """
    path = Path(path)
    created = _make_folders(path.parent, path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        _remove_folders(created)
        raise InputError.at(str(path), f"cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
            yield handle
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _remove_folders(created)
        raise


@contextlib.contextmanager
def atomic_directory(dest: Path | str, *, marker: str) -> Iterator[Path]:
    """Fill a temporary folder, then swap it in for `dest` (missing parents made for it go again on failure).

    `dest` may be missing, empty, or an earlier output of eebench (it holds `marker`); anything else is
    refused, so a typo in --out never deletes somebody's data.
    """
    dest = Path(dest)
    if dest.exists():
        if not dest.is_dir():
            raise InputError.at(str(dest), "exists and is not a folder")
        if any(dest.iterdir()) and not (dest / marker).exists():
            raise InputError.at(str(dest), f"exists and is not an eebench output folder (no {marker}); "
                                           "choose an empty or new folder")
    created = _make_folders(dest.parent, dest)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    except OSError as exc:
        _remove_folders(created)
        raise InputError.at(str(dest), f"cannot write: {exc.strerror}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=dest.parent))
            os.replace(dest, old / "previous")
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_folders(created)
        raise

"""Reading, checking and writing eebench documents: canonical JSON, kinds and versions, schemas, atomic output."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import stat
import weakref
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from eebench.errors import InputError, Problem, did_you_mean, near_path, one_of, quote, quoted

if TYPE_CHECKING:   # (imported where a schema is checked: 40-80 ms that reading trajectories need not pay)
    import jsonschema
    import numpy as np   # (imported where a depth is counted in numpy: 60 ms that most commands need not pay)
    import referencing

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
_KIND_RE = re.compile(r"([a-z][a-z0-9_.-]*)/([0-9]+)\Z")   # (\Z: `$` would take a trailing line end)


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


# -- limits on input --------------------------------------------------------------------------------
# Every document is bounded before it is parsed, so no input, however made, costs unbounded time or memory or
# reaches Python's recursion limit. The README's "Limits on input" lists these.

MAX_DOCUMENT_BYTES = 256 << 20   # one JSON document (an instance, a manifest, a .json trajectory file)
MAX_YAML_BYTES = 2 << 20         # one YAML spec: the shipped ones are under 100 KB (PyYAML reads ~0.1 MB/s
#                                  of small keys: 2 MiB is seconds, not minutes)
MAX_LINE_BYTES = 256 << 20       # one line of a JSON Lines file
LONG_LINE_BYTES = 8 << 20        # a line longer than this is read compactly by the grader (trajectories.parse_record)
MAX_DEPTH = 100                  # levels of nesting; real logs reach 13, Python's parsers recurse at ~1000
MAX_YAML_ALIASES = 100           # `*name` references in one YAML document ("billion laughs" has a few dozen)
MAX_YAML_NODES = 200_000         # values in one YAML document once its aliases are expanded
MAX_INT_DIGITS = 4300            # Python's own limit on converting text to int


class JsonLimitError(json.JSONDecodeError):
    """JSON text that parses but cannot be a canonical document (NaN, a lone surrogate, too deep, a huge integer).

    A JSONDecodeError, so every reader that reports malformed JSON reports these too, located the same way."""

    def __init__(self, message: str, text: str | bytes = "", position: int = 0):
        super().__init__(message, text if isinstance(text, str) else "", position)


_QUOTE, _BACKSLASH = 34, 92
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


@functools.cache
def _steps() -> np.ndarray:
    """Each byte's step in depth: +1 for [ and {, -1 for ] and }, 0 for the rest."""
    import numpy as np

    step = np.zeros(256, dtype=np.int8)
    step[[91, 123]], step[[93, 125]] = 1, -1
    return step


class DepthGauge:
    """The nesting depth of JSON text fed in pieces, without parsing it: C-speed, in memory of one piece.

    A quote preceded by an odd run of backslashes is inside a string; brackets inside strings do not count.
    Only the positions of quotes and brackets are looked at, so a piece costs a few passes of numpy.
    """

    def __init__(self, limit: int = MAX_DEPTH):
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.backslashes = 0   # the run of backslashes that ended the previous piece
        self.too_deep_at = -1  # where in the last piece fed the text went deeper than the limit (-1: it did not)

    def feed(self, data: bytes) -> bool:
        """Take the next piece; False once the text has gone deeper than the limit."""
        if not data:
            return True
        import numpy as np

        step = _steps()
        raw = np.frombuffer(data, dtype=np.uint8)
        quotes = np.flatnonzero(raw == _QUOTE)
        if quotes.size and (self.backslashes or b"\\" in data):
            quotes = quotes[self._unescaped_quotes(raw, quotes)]
        brackets = np.flatnonzero(step.view(np.bool_)[raw])
        inside = (np.searchsorted(quotes, brackets) + self.in_string) % 2 == 1
        counted = brackets[~inside]
        steps = step[raw[counted]]
        deepest = self.depth
        if steps.size:
            levels = np.cumsum(steps, dtype=np.int64) + self.depth
            deepest = int(levels.max())
            self.depth = max(0, int(levels[-1]))
            if deepest > self.limit:
                self.too_deep_at = int(counted[np.argmax(levels > self.limit)])
        self.in_string = bool((quotes.size + self.in_string) % 2)
        trailing = len(data) - len(data.rstrip(b"\\"))
        self.backslashes = trailing + (self.backslashes if trailing == len(data) else 0)
        return deepest <= self.limit

    def _unescaped_quotes(self, raw: np.ndarray, quotes: np.ndarray) -> np.ndarray:
        """Which quotes end or start a string: those after an even run of backslashes (a run that reaches the
        piece's start goes on with the previous piece's). In numpy over the runs of backslashes."""
        import numpy as np

        slashes = np.flatnonzero(raw == _BACKSLASH)
        run = np.zeros(quotes.size, dtype=np.int64)
        at_start = quotes == 0
        if slashes.size:
            first = np.ones(slashes.size, dtype=bool)
            first[1:] = np.diff(slashes) != 1
            starts = slashes[first]
            ends = np.append(slashes[np.flatnonzero(first)[1:] - 1], slashes[-1])
            j = np.minimum(np.searchsorted(ends, quotes - 1), ends.size - 1)
            ending = ends[j] == quotes - 1  # a run of backslashes ends just before the quote
            run = np.where(ending, ends[j] - starts[j] + 1, 0)
            at_start = np.where(ending, starts[j] == 0, at_start)
        return (run + np.where(at_start, self.backslashes, 0)) % 2 == 0


# left to right, a backslash with the backslash or quote after it: what is left of a run of backslashes is its parity
_ESCAPED_QUOTE = re.compile(rb'\\[\\"]')


def too_deep(data: bytes) -> bool:
    """Whether complete JSON text nests deeper than MAX_DEPTH, judged without parsing it, as DepthGauge judges it.

    In C, then numpy over the few bytes left: escaped quotes go first (tool-call arguments are JSON in strings, full
    of them); then only brackets and quotes are kept, and a bracket after an odd number of quotes is inside a
    string."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False
    unescaped = _ESCAPED_QUOTE.sub(b"", data) if b"\\" in data else data
    kept = unescaped.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' not in kept and _shallow(kept):
        return False
    import numpy as np

    skeleton = np.frombuffer(kept, dtype=np.uint8)
    steps = _steps()[skeleton]
    if b'"' in kept:
        steps = np.where(np.cumsum(skeleton == _QUOTE) % 2 == 0, steps, 0)
    return bool(steps.size) and int(np.cumsum(steps, dtype=np.int64).max()) > MAX_DEPTH


SHALLOW_PASSES = 8  # innermost pairs removed at most this often by `_shallow` before numpy counts the depth


def _shallow(brackets: bytes) -> bool:
    """Whether brackets alone (no string left among them) nest at most SHALLOW_PASSES deep: each pass removes the
    innermost pairs, so a well-nested sequence of depth d is empty after d passes (a trajectory's is after about 3,
    in C, where numpy's calls cost more than the work on a short record)."""
    for _ in range(SHALLOW_PASSES):
        if not brackets:
            return True
        brackets = brackets.replace(b"{}", b"").replace(b"[]", b"")
    return not brackets


def too_deep_message() -> str:
    return f"nested more than {MAX_DEPTH} levels deep"


def _refuse_constant(name: str) -> Any:
    raise JsonLimitError(f"{name} is not a JSON number (canonical documents hold finite numbers only)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonLimitError(f"{quote(text)} is out of the range of a 64-bit float")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)  # made once: json.loads
# with hooks would make a decoder per call


_DIGIT_MAP = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))  # every digit becomes "0", all else " "
_NINETEEN_DIGITS = b"0" * 19


_LONG_INTEGER = re.compile(rb"(?<![.\d])\d{19}")   # 19 digits not after a decimal point


def orjson_reads_exactly(data: bytes) -> bool:
    """Whether orjson reads this JSON as the standard library would: it has no integer of 19 digits or more (orjson
    reads integers beyond 64 bits as floats, losing digits). A scan in C; a long run of digits after a decimal point
    (`0.0035475000000000003`, common in logged costs) is a float both ways, correctly rounded."""
    return data.translate(_DIGIT_MAP).find(_NINETEEN_DIGITS) == -1 or _LONG_INTEGER.search(data) is None


def loads_json(data: bytes | str) -> Any:
    """Parse JSON text the one way every document is parsed: UTF-8, nested at most MAX_DEPTH levels, finite
    numbers, integers of at most MAX_INT_DIGITS digits, valid Unicode (no lone surrogates).

    Bytes go to orjson (several times faster), which refuses NaN, infinities, lone surrogates and bytes that are
    not UTF-8 by itself; anything it refuses is parsed again by the standard library, so the message is the
    familiar one (`Expecting ',' delimiter`). orjson reads integers beyond 64 bits as floats, losing digits: text
    with a run of 19 digits goes to the standard library, which keeps every digit.

    Raises json.JSONDecodeError (JsonLimitError for the limits), or UnicodeDecodeError for bytes that are not
    UTF-8 (decoded here, so a line of NUL bytes is not taken for UTF-16).
    """
    if isinstance(data, bytes) and orjson_reads_exactly(data):
        if too_deep(data):
            raise JsonLimitError(too_deep_message())
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library below says what is wrong
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if too_deep(data if isinstance(data, bytes) else text.encode("utf-8", "surrogatepass")):
        raise JsonLimitError(too_deep_message(), text)
    try:
        value = _DECODER.decode(text)
    except RecursionError:  # cannot happen below MAX_DEPTH; kept so no depth ever ends in a traceback
        raise JsonLimitError(too_deep_message(), text) from None
    except json.JSONDecodeError as exc:  # JsonLimitError too, from the hooks
        raise _at_content_end(exc) from None
    except ValueError as exc:  # Python's int-string limit
        if "digits" not in str(exc):
            raise
        raise JsonLimitError(f"an integer of more than {MAX_INT_DIGITS} digits", text) from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then is every string checked
        problem = tree_problem(value)
        if problem:
            raise JsonLimitError(problem, text)
    return value


def _at_content_end(exc: json.JSONDecodeError) -> json.JSONDecodeError:
    """A syntax error at the end of text that ends in a line end (a file cut off after a line: `head -n 20 log.json`,
    a line of JSON Lines), placed at the end of its last line: the standard library puts it on a line after the
    last, one the file does not have (`log.json:21`, column 1, of a 20-line file)."""
    doc = exc.doc
    if isinstance(exc, JsonLimitError) or not isinstance(doc, str) or exc.pos < len(doc) or not doc.endswith("\n"):
        return exc
    return json.JSONDecodeError(exc.msg, doc, len(doc) - 1 - doc.endswith("\r\n"))


def tree_problem(value: Any) -> str | None:
    """What keeps a parsed value from being a document (too deep, NaN or infinity, a lone surrogate), or None.

    An iterative walk, so no depth reaches the recursion limit; for values not parsed by `loads_json` (YAML,
    streamed array items)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                return too_deep_message()
            for key, child in item.items():
                if isinstance(key, str) and _lone_surrogate(key):
                    return _surrogate_message(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                return too_deep_message()
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            if _lone_surrogate(item):
                return _surrogate_message(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{item} is not a JSON number (canonical documents hold finite numbers only)"
    return None


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _surrogate_message(text: str) -> str:
    return (f"{quote(text.encode('utf-8', 'backslashreplace').decode('ascii', 'backslashreplace'))} holds a lone "
            "surrogate (\\ud800-\\udfff), which is not a Unicode character; documents must be valid Unicode")


# -- reading ----------------------------------------------------------------------------------------

def json_compatible(value: Any) -> Any:
    """YAML allows int keys and dates; JSON Schema and canonical JSON see only JSON types."""
    if isinstance(value, dict):
        return {str(k): json_compatible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_compatible(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def load_shipped(path: Path | str) -> Any:
    """A YAML spec eebench ships (a suite, presets, checkpoints), read with libyaml and without the limits and schema
    pass of the door: those files are ours, every run that names instances or grades reads some, and the pure-Python
    reader took 0.1-0.5 s of such runs. The tests read each shipped file through the full door too, and compare."""
    path = Path(path)
    text = path.read_bytes()
    cache = _shipped_cache(path, text)
    if cache is not None:
        return cache
    from eebench.yaml_door import load_trusted

    document = load_trusted(text.decode("utf-8"))
    _cache_shipped(path, text, document)
    return document


# A shipped YAML file's document is kept as JSON in `__pycache__` beside it, under the sha256 of the file's bytes, as
# Python keeps bytecode: PyYAML builds a document in Python (libyaml only parses), and the text games' 49 KB of
# checkpoints took 40-50 ms of every grade's start, orjson 1 ms. A cache that is missing, stale, unreadable or not
# writable (a read-only install) costs only the YAML read. SHIPPED_CACHE names the form: change it with the reader.
SHIPPED_CACHE = "shipped-cache/1"


def _shipped_cache_path(path: Path) -> Path:
    return path.parent / "__pycache__" / f"{path.name}.json"


def _shipped_cache(path: Path, text: bytes) -> Any:
    """The cached document of a shipped file whose bytes are `text`, or None."""
    try:
        cached = orjson.loads(_shipped_cache_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(cached, dict) or cached.get("cache") != SHIPPED_CACHE \
            or cached.get("sha256") != hashlib.sha256(text).hexdigest():
        return None
    return cached.get("document")


def _cache_shipped(path: Path, text: bytes, document: Any) -> None:
    """Keep a shipped file's document for the next read, when JSON holds it exactly (not a NaN, nor an integer past
    64 bits); written whole or not at all."""
    try:
        blob = orjson.dumps({"cache": SHIPPED_CACHE, "sha256": hashlib.sha256(text).hexdigest(), "document": document})
    except orjson.JSONEncodeError:
        return
    if orjson.loads(blob)["document"] != document:
        return
    with contextlib.suppress(OSError, InputError), atomic_file(_shipped_cache_path(path), "wb") as handle:
        handle.write(blob)


def parse_text(text: str, file: str, *, yaml_syntax: bool) -> Any:
    """Parse JSON or YAML text within the limits above, turning every refusal into a located one-line problem."""
    if not text or text.isspace():   # (JSON would say `Expecting value`, YAML read it as null; no copy of text)
        raise InputError.at(file, f"is empty; expected a {'YAML' if yaml_syntax else 'JSON'} document")
    if yaml_syntax:
        from eebench.yaml_door import parse_yaml   # (PyYAML's import, 15 ms, paid only by runs that read YAML)

        return parse_yaml(text, file)
    try:
        return loads_json(text)
    except JsonLimitError as exc:  # found by a parser hook or a scan, which know no line: none is named
        raise InputError.at(file, json_problem(exc)) from None
    except json.JSONDecodeError as exc:
        raise InputError.at(file, json_problem(exc), line=exc.lineno) from None


BOM = b"\xef\xbb\xbf"   # a UTF-8 byte order mark, which some Windows tools write first: JSON does not allow it


def json_problem(exc: json.JSONDecodeError) -> str:
    """The one-line reason for a JSON error: 'malformed JSON: ... (column N)' or the limit it broke."""
    if isinstance(exc, JsonLimitError):
        return f"refused JSON: {exc.msg}"
    if exc.pos == 0 and isinstance(exc.doc, str) and exc.doc.startswith(BOM.decode()):
        return "malformed JSON: starts with a UTF-8 byte order mark, which JSON does not allow (save it without one)"
    if exc.msg == "Extra data" and exc.colno == 1 and isinstance(exc.doc, str) and exc.doc[exc.pos:exc.pos + 1] == "{":
        # JSON lines (a run's trajectories, say) given where one document is read
        return ("malformed JSON: a second document starts here; one was expected (JSON lines, one record per line "
                "such as a run's trajectories, are read from .jsonl files by grade, validate and convert)")
    return f"malformed JSON: {exc.msg} (column {exc.colno})"


def read_stdin_once(paths: Iterable[Path | str]) -> None:
    """Standard input (`-`) can be read once: named twice among the inputs, it is refused."""
    if sum(str(path) == "-" for path in paths) > 1:
        raise InputError("`-` (standard input) is given more than once")


def refuse_given_twice(paths: Iterable[Path | str]) -> None:
    """A file named twice among the inputs (under any spelling of its path) is refused: its trajectories would be
    read twice, each id a second time. `grade` and `validate` say so in one line, the file's; `-` is
    read_stdin_once's."""
    given: dict[Path, str] = {}
    for path in paths:
        if str(path) == "-":
            continue
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError):   # a symlink loop (RuntimeError before Python 3.13): the reader refuses it
            continue
        if resolved in given:
            raise InputError.at(str(path), f"is given twice (also as {given[resolved]})")
        given[resolved] = str(path)


def open_input(path: Path) -> IO[bytes]:
    """A file the user named, opened for reading bytes; what stops it (missing, a folder, a device, no permission)
    is one line."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise InputError.at(str(path), f"no such file{near_path(path)}") from None
    except IsADirectoryError:
        raise InputError.at(str(path), "is a folder, expected a file") from None
    except OSError as exc:
        raise InputError.at(str(path), f"cannot read: {exc.strerror}") from None
    mode = os.fstat(handle.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero, a terminal: endless or not a document
        handle.close()
        raise InputError.at(str(path), "is a device, expected a file")
    key = os.fspath(path)

    def forget(ref: weakref.ref[IO[bytes]]) -> None:   # (a folder of 100,000 logs leaves no 100,000 entries)
        if _reading.get(key) is ref:
            del _reading[key]
    _reading[key] = weakref.ref(handle, forget)
    return handle


# the handle last opened on each path (while it lives), so that long work can tell how far a file has been read
_reading: dict[str, weakref.ref[IO[bytes]]] = {}


def read_position(path: Path) -> int | None:
    """How many bytes of `path` its open reader has taken from the file (its read-ahead included); None when
    no reader of it is open."""
    handle = _reading.get(os.fspath(path), lambda: None)()
    if handle is None or handle.closed:
        return None
    try:
        return os.lseek(handle.fileno(), 0, os.SEEK_CUR)   # (the file's own position: no buffer is touched)
    except (OSError, ValueError):
        return None


def special_file(path: Path) -> str | None:
    """What `path` is when it is there but neither a file nor a folder ('a device', 'a pipe', 'a socket'), else None:
    such a node is never replaced by an output nor opened as a results file (opening a pipe waits for a writer)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):   # missing, a dangling link, a name the system refuses: said where it is used
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def read_bytes(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The whole of a file the user named, refused (never read on) beyond `limit` bytes."""
    too_large = InputError.at(str(path), f"larger than {size_text(limit)}, the most one document may be")
    with open_input(path) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise too_large  # known without reading it
            if size:
                data = handle.read(size + 1)  # never a buffer of `limit` bytes for a small file
            else:  # a pipe has no size: read in pieces, up to the limit
                parts, total = [], 0
                while total <= limit and (piece := handle.read(1 << 20)):
                    parts.append(piece)
                    total += len(piece)
                data = b"".join(parts)
        except OSError as exc:
            raise InputError.at(str(path), f"cannot read: {exc.strerror}") from None
    if len(data) > limit:
        raise too_large
    return data


def size_text(limit: int) -> str:
    """A limit as messages give it: MiB, or bytes below one."""
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def read_text(path: Path, limit: int | None = None) -> str:
    if limit is None:
        limit = MAX_YAML_BYTES if is_yaml_path(path) else MAX_DOCUMENT_BYTES
    return decode_utf8(read_bytes(path, limit), str(path))


GZIP_MAGIC = b"\x1f\x8b"   # what a gzip file starts with


def compressed_problem(head: bytes) -> str | None:
    """What to say of a file that is gzip-compressed where text was expected; None for any other."""
    return "is gzip-compressed, expected text: decompress it first (gunzip)" if head.startswith(GZIP_MAGIC) else None


def decode_utf8(data: bytes, file: str, *, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if line is None:
            line = data.count(b"\n", 0, exc.start) + 1
        if line == 1 and compressed_problem(data):
            raise InputError.at(file, compressed_problem(data)) from None
        raise InputError.at(file, f"not UTF-8 text (byte 0x{data[exc.start]:02x})", line=line) from None


def is_yaml_path(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def load_document(path: Path | str) -> dict[str, Any]:
    """Read one JSON or YAML document (chosen by suffix) that must be a mapping."""
    path = Path(path)
    text = read_text(path)
    yaml_syntax = is_yaml_path(path)
    data = parse_text(text, str(path), yaml_syntax=yaml_syntax)
    if not isinstance(data, dict):
        raise InputError.at(str(path), f"expected a mapping at the top level, found {json_type(data)}")
    if not yaml_syntax:   # (a document, small: read again to see what the fast parser let the last copy of win)
        refuse_duplicate_keys(text, str(path))
    return data


def refuse_duplicate_keys(text: str | bytes, file: str, line: int | None = None) -> None:
    """InputError when an object of valid JSON `text` gives a key twice, which the fast parsers let the last copy
    of win without a word; it parses the text again, so only checks that are not on the grading path use it."""
    json.loads(text, object_pairs_hook=functools.partial(_unique_pairs, file, line))


def _unique_pairs(file: str, line: int | None, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, refusing a key given twice (as YAML's `_no_duplicate_keys` does)."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for k, key in enumerate(keys) if key in keys[:k])
        raise InputError.at(file, f"malformed JSON: duplicate key {quote(repr(twice))} in an object", line=line)
    return dict(pairs)


# -- kinds and versions -----------------------------------------------------------------------------

def document_kind(document: dict[str, Any], file: str, *, line: int | None = None) -> tuple[str, int]:
    """The (kind, version) named by a document's `eebench` field, refusing unknown kinds and newer versions."""
    tag = document.get("eebench")
    if tag is None:
        raise InputError.at(file, "missing required field (expected e.g. 'instance/1')", line=line, field="eebench")
    match = _KIND_RE.match(tag) if isinstance(tag, str) else None
    if not match:
        raise InputError.at(file, f"expected 'kind/N' (e.g. 'instance/1'), found {quoted(tag)}", line=line,
                            field="eebench")
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
    import referencing

    resources_ = [(load_schema(n)["$id"], referencing.Resource.from_contents(load_schema(n))) for n in schema_names()]
    return referencing.Registry().with_resources(resources_)


def _is_integer(checker: Any, value: Any) -> bool:
    """JSON Schema counts 1.0 as an integer; canonical JSON would write it as `1.0`, so a digest would depend on
    how a number was typed. Integers (coordinates, budgets, seeds) must be written as integers."""
    return isinstance(value, int) and not isinstance(value, bool)


@functools.cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)   # (each shipped schema is checked by the tests, not here)
    strict = jsonschema.validators.extend(cls, type_checker=cls.TYPE_CHECKER.redefine("integer", _is_integer))
    return strict(schema, registry=_registry())


@functools.cache
def _id_rule() -> dict[str, Any]:
    return load_schema("instance.grid_dag")["properties"]["id"]


def instance_id_problem(instance_id: Any) -> str | None:
    """Why a string cannot be an instance id (the schema's rule, which keeps `<id>.json` a path every file system
    can hold), or None when it can. Code that turns an id into a path asks this first."""
    rule = _id_rule()
    if isinstance(instance_id, str) and len(instance_id) <= rule["maxLength"] and re.search(rule["pattern"],
                                                                                             instance_id):
        return None
    return f"expected {rule['x-expected']}, found {_short(instance_id)}"


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
    return quote(json.dumps(value, ensure_ascii=False), 40)


def found(value: Any) -> str:
    """`found a number 1.5`, `found null`: a value's JSON type and (unless null) the value."""
    return f"found {json_type(value)}" + ("" if value is None else f" {_short(value)}")


def enum_problem(value: Any, options: list[Any]) -> str:
    """Why `value` is none of a schema's `enum` options, with the close one if any."""
    words = [v if isinstance(v, str) else json.dumps(v) for v in options]   # (null, not Python's None)
    return f"expected one of {', '.join(words)}, found {_short(value)}{did_you_mean(str(value), words)}"


def scalar_problem(value: Any, rule: dict[str, Any]) -> str | None:
    """Why `value` breaks a schema fragment of `type`, `minimum` and `maximum`, in schema_problems' words, or
    None: for a hot path that checks one field of many records without running the whole schema."""
    types = [rule["type"]] if isinstance(rule.get("type"), str) else list(rule.get("type", []))
    number = not isinstance(value, bool) and (isinstance(value, int) and "integer" in types
                                              or isinstance(value, (int, float)) and "number" in types)
    if not (number or value is None and "null" in types or isinstance(value, bool) and "boolean" in types):
        return f"expected {' or '.join(types)}, {found(value)}"
    if number and "minimum" in rule and value < rule["minimum"]:
        return f"expected a number >= {rule['minimum']}, found {_short(value)}"
    if number and "maximum" in rule and value > rule["maximum"]:
        return f"expected a number <= {rule['maximum']}, found {_short(value)}"
    return None


def _known_fields(known: list[str], patterns: list[str]) -> str:
    """What may stand where a key no known one is close to stands (`observation:` in a checkpoint), when the list
    is short enough to read; the free `x-` keys of a spec among them."""
    free = ["x-... (a note)"] if "^x-" in patterns else []
    return f" (expected {one_of(known + free)})" if 0 < len(known) <= 12 else ""


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
        return [(field_path(path + [k]), f"unknown field{did_you_mean(k, known) or _known_fields(known, patterns)}")
                for k in extra]
    if expected:
        return [(here, f"expected {expected}, found {_short(instance)}")]
    if kind == "type":
        names = value if isinstance(value, list) else [value]
        return [(here, f"expected {' or '.join(names)}, {found(instance)}")]
    if kind == "const":
        return [(here, f"expected {_short(value)}, found {_short(instance)}")]
    if kind == "enum":
        return [(here, enum_problem(instance, value))]
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
        takes = _branch_shapes(error)
        if takes is not None:   # a typo of a word one branch takes would be explained by another's `type`
            words = [w for w in takes if isinstance(w, str)]
            close = did_you_mean(instance, words) if isinstance(instance, str) else ""
            shown = dict.fromkeys(w if isinstance(w, _Type) else _short(w) for w in takes)
            return [(here, f"expected {' or '.join(shown)}, {found(instance)}{close}")]
        return [pair for e in _meant_branch(error) for pair in _explain(e)]
    if kind == "pattern":  # also a key refused by propertyNames
        return [(here, f"expected text matching {value}, found {_short(instance)}")]
    return [(here, quote(error.message))]  # jsonschema's own words quote the whole value


class _Type(str):
    """A JSON type's name among the values a schema takes (`integer`, as opposed to the word "integer")."""


def _branch_shapes(error: jsonschema.ValidationError) -> list[Any] | None:
    """What the oneOf/anyOf branches take when the value has the shape of none (each refuses its type, or it is
    none of its constants): JSON type names (as _Type) and constants; None when some branch takes the shape."""
    depth = len(error.absolute_path)
    branches: dict[Any, list[Any]] = {}
    for sub in error.context or []:
        takes = branches.setdefault(sub.relative_schema_path[0], [])
        if len(sub.absolute_path) == depth and sub.validator in ("type", "const", "enum"):
            value = sub.validator_value
            if sub.validator == "type":
                takes += [_Type(t) for t in (value if isinstance(value, list) else [value])]
            else:
                takes += [value] if sub.validator == "const" else list(value)
    if not branches or not all(branches.values()):
        return None
    return [w for takes in branches.values() for w in takes]


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
    if _passes_fast(document, schema):
        return []
    problems: dict[Problem, None] = {}  # ordered and without repeats: jsonschema raises one `required` error
    # per missing field, and each is explained by naming every missing field of its object
    errors = sorted(_validator(schema).iter_errors(document), key=_path_order)
    unknown_keys_at = {tuple(e.absolute_path) for e in errors if e.validator == "additionalProperties"}
    for error in errors:
        if error.validator in ("oneOf", "anyOf") and tuple(error.absolute_path) in unknown_keys_at:
            continue   # the object's unknown key (a typo) is what no branch accepts: one line for one mistake
        problems.update((Problem(file, line, where or None, why), None) for where, why in _explain(error))
    return list(problems)


# The long lists of simple items (a trajectory's steps) are checked by predicates compiled from their schema, item
# after item, 50-100x faster than jsonschema's walk of each (10 ms for a trajectory of 80 steps, so converting
# canonical trajectories ran at 0.4 MB/s): a document whose items all pass them, and whose rest passes jsonschema,
# has no problem; any other is checked by jsonschema whole, which words the problems. A predicate holds exactly
# when jsonschema (integers strict, as _validator) accepts the item; an item schema with any other keyword than
# those below is not compiled, and its lists are left to jsonschema.
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str), "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool), "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list)}
_WORDS = frozenset({"description", "x-expected"})   # keywords that say, and check, nothing
# a root of these keywords checks each property by its own rule alone, so a list can be checked apart from the rest
_SAFE_ROOT = frozenset({"$schema", "$id", "title", "type", "required", "properties", "$defs"}) | _WORDS


def _rule(schema: Any) -> Callable[[Any], bool] | None:
    """The predicate of a property's schema made of `type`, `minimum`, `maximum` and `enum`; None for others."""
    if not isinstance(schema, dict) or not set(schema) <= {"type", "minimum", "maximum", "enum"} | _WORDS:
        return None
    types = schema.get("type", list(_JSON_TYPES))
    types = [types] if isinstance(types, str) else types
    if any(t not in _JSON_TYPES for t in types):
        return None
    typed = [_JSON_TYPES[t] for t in types]
    low, high, enum = schema.get("minimum"), schema.get("maximum"), schema.get("enum")

    def holds(value: Any) -> bool:
        if not any(t(value) for t in typed):
            return False
        if (low is not None or high is not None) and _JSON_TYPES["number"](value) and not (
                (low is None or value >= low) and (high is None or value <= high)):
            return False
        return enum is None or any(value is e or type(value) is type(e) and value == e for e in enum)
    return holds


def _item_predicate(schema: Any) -> Callable[[Any], bool] | None:
    """The predicate of an object schema of `required` and `properties` that `_rule` compiles; None for others."""
    if not isinstance(schema, dict) or schema.get("type") != "object" \
            or not set(schema) <= {"type", "required", "properties"} | _WORDS:
        return None
    rules = {name: _rule(rule) for name, rule in schema.get("properties", {}).items()}
    if any(rule is None for rule in rules.values()):
        return None
    required = tuple(schema.get("required", ()))
    free = lambda value: True  # noqa: E731  (a key the schema names no rule for: any value)

    def holds(item: Any) -> bool:   # (by the item's keys: a step has a few of the dozen the schema names)
        return (type(item) is dict and all(name in item for name in required)
                and all(rules.get(name, free)(value) for name, value in item.items()))
    return holds


@functools.cache
def _fast_lists(name: str) -> dict[str, Callable[[Any], bool]]:
    """A schema's top-level array properties whose items (a local `$ref` or inline) compile: by property."""
    schema = load_schema(name)
    lists: dict[str, Callable[[Any], bool]] = {}
    if not set(schema) <= _SAFE_ROOT:   # (a `not`, `if` or `oneOf` at the root could look at the lists too)
        return lists
    for prop, rule in schema.get("properties", {}).items():
        if not isinstance(rule, dict):
            continue
        items = rule.get("items") if set(rule) <= {"type", "items"} | _WORDS and rule.get("type") == "array" else None
        ref = items.get("$ref", "") if isinstance(items, dict) else ""
        if ref.startswith("#/$defs/") and len(items) == 1:
            items = schema.get("$defs", {}).get(ref[len("#/$defs/"):])
        predicate = _item_predicate(items) if isinstance(items, dict) else None
        if predicate is not None:
            lists[prop] = predicate
    return lists


def _passes_fast(document: Any, schema: str) -> bool:
    """Whether the document has no problem, found by the compiled predicates of its long lists and jsonschema's
    check of the rest; False when that is not known so (the full check then says what is wrong)."""
    lists = _fast_lists(schema)
    if not lists or type(document) is not dict or any(type(document.get(k, [])) is not list for k in lists):
        return False
    if not all(all(map(holds, document.get(prop, ()))) for prop, holds in lists.items()):
        return False
    rest = {**document, **{prop: [] for prop in lists if prop in document}}
    return next(_validator(schema).iter_errors(rest), None) is None


# Documents that passed a schema, by the sha256 of their canonical JSON, kept in a record beside the schemas (in
# `__pycache__`, as the shipped specs' JSON copies): a passing check depends on nothing but the document and the
# shipped schemas, so a document seen before skips jsonschema, whose import alone is 35-50 ms of a grade's start,
# and its check, about 1 ms an instance (10 s for a grade that loads 10,000). The record's name holds a digest of
# every shipped schema and of SCHEMA_CHECK (how the door checks: change it with _validator), so a record of other
# schemas is never read; a line is appended when a document passes, and a record grown past PASSED_RECORD_BYTES
# starts afresh. A missing, damaged or unwritable record costs only the check.
SCHEMA_CHECK = "schema-check/1"
PASSED_RECORD_BYTES = 8 << 20


def schema_problems_unless_passed(document: Any, schema: str, file: str, digest: str | None = None) -> list[Problem]:
    """schema_problems of a document (`digest`: the sha256 of its canonical JSON, if known); none, without checking,
    when the record says it passed this schema before (and recorded when it passes now)."""
    if digest is None:
        try:
            digest = sha256_hex(document)
        except (TypeError, ValueError, RecursionError):   # not JSON (a NaN, a set from Python): the check says why
            return schema_problems(document, schema, file)
    return problems_unless_passed(f"{schema} {digest}", lambda: schema_problems(document, schema, file))


def problems_unless_passed(entry: str, check: Callable[[], list[Problem]]) -> list[Problem]:
    """The problems `check` finds; none, without checking, when the record holds `entry` (one line of ASCII words:
    what is checked and the digest of what it checks), and `entry` is recorded when it finds none."""
    if entry in _passed_record():
        return []
    problems = check()
    if not problems:
        _record_passed(entry)
    return problems


def _record_passed(entry: str) -> None:
    """Add `entry` to the record; a record that cannot be written costs only later checks."""
    _passed_record().add(entry)
    with contextlib.suppress(OSError):
        path = _passed_record_path()
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="ascii") as record:   # (one short line a write: appends do not interleave)
            if record.tell() > PASSED_RECORD_BYTES:
                record.truncate(0)
            os.fchmod(record.fileno(), 0o644)
            record.write(entry + "\n")


@functools.cache
def _passed_record_path() -> Path:
    folder = Path(str(resources.files("eebench").joinpath("schemas")))
    digest = hashlib.sha256(SCHEMA_CHECK.encode())
    for name in schema_names():
        digest.update(name.encode() + b"\0" + (folder / f"{name}.json").read_bytes())
    return folder / "__pycache__" / f"passed.{digest.hexdigest()[:16]}.txt"


@functools.cache
def _passed_record() -> set[str]:
    try:
        return set(_passed_record_path().read_text("ascii", errors="replace").splitlines())
    except OSError:
        return set()


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
        if isinstance(exc, FileExistsError):   # mkdir's "File exists": a file (or a link loop) where a folder must be
            raise InputError.at(str(target), f"cannot write: Not a directory: {exc.filename}") from None
        raise InputError.at(str(target), f"cannot write: {exc.strerror}") from None
    return created


def _remove_folders(created: list[Path]) -> None:
    for folder in created:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if still empty


def _umask() -> int:
    """The process's umask now: Linux shows it in /proc/self/status; elsewhere it is read by setting it and setting
    it back (os.umask has no query; for that moment it is another for every thread)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path: Path | str, mode: str = "w", buffering: int = -1, *, replace: bool = True
                ) -> Iterator[IO[Any]]:
    """Write a file through a temporary sibling, renamed into place only if the block succeeds (`buffering` as
    for `open`). With `replace` false, a file that is at `path` by then (another process's) is kept:
    FileExistsError, and nothing is written.

    Folders created for it are removed again when the block fails, so a failed run leaves nothing behind.
    """
    path = Path(path)
    special = special_file(path)
    if special:   # the rename into place would replace the node itself (as root, /dev/null became a file)
        raise InputError.at(str(path), f"is {special}, expected a file to write (written whole beside it, then "
                                       "moved into place)")
    created = _make_folders(path.parent, path)
    tmp = _sibling(path, ".tmp")
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0), 0o600)   # (as mkstemp opens)
        except OSError as exc:
            raise InputError.at(str(path), f"cannot write: {exc.strerror}") from None
        with os.fdopen(fd, mode, buffering,
                       **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())   # (as open() would have made it: 0644 under the usual umask)
        if replace:
            os.replace(tmp, path)
        else:
            _move_in_unless_taken(tmp, path)
    except BaseException as exc:
        # (OSError, not only FileNotFoundError: where it could not be made, a read-only folder or a too long name,
        # its removal fails so too, and that error naming the temporary file replaced the one naming the output)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _remove_folders(created)
        _name_the_output(exc, path)
        raise


def _move_in_unless_taken(tmp: Path, path: Path) -> None:
    """Give the file `tmp` the name `path` unless that name is taken (FileExistsError): a hard link is made only
    where no name is, in one step; where the file system has none, the check and the move are two."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def _sibling(path: Path, suffix: str) -> Path:
    """A new hidden name beside `path` for a temporary file or folder. It is named before it is made, inside the
    block that removes it on failure: a SIGTERM or Ctrl-C between `mkdtemp` making a folder and returning its name
    left the folder behind. (64 random bits: a name already there is an error, not a retry.)"""
    # the name is cut to leave room for the dot, the 16 hex digits and the suffix within a file name's 255 bytes:
    # whole, an --out of 234 to 255 bytes (a name the file system takes) failed with "File name too long"
    room = 255 - len(f"..{secrets.token_hex(8)}{suffix}".encode())
    name = path.name.encode("utf-8", "surrogateescape")[:room].decode("utf-8", "ignore")
    return path.absolute().with_name(f".{name}.{secrets.token_hex(8)}{suffix}")


# what writing a file fails with when the disk or quota is full: blamed on the file being written, by name
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _name_the_output(exc: BaseException, path: Path) -> None:
    """A write that failed for want of space, as one line naming the output (its OSError names no file)."""
    if isinstance(exc, OSError) and exc.errno in _FULL and exc.filename is None:
        raise InputError.at(str(path), f"cannot write: {exc.strerror}; nothing was written") from None


@contextlib.contextmanager
def atomic_directory(dest: Path | str, *, marker: str, replace: bool = True) -> Iterator[Path]:
    """Fill a temporary folder, then swap it in for `dest` (missing parents made for it go again on failure).

    `dest` may be missing, empty, or an earlier output of eebench (it holds `marker`); anything else is
    refused, so a typo in --out never deletes somebody's data. With `replace` false, a folder with files at
    `dest` by then (another process's) is kept: FileExistsError, and nothing is written.
    """
    dest = Path(dest)
    if dest.exists():
        if not dest.is_dir():
            raise InputError.at(str(dest), "exists and is not a folder")
        if any(dest.iterdir()) and not (dest / marker).exists():
            raise InputError.at(str(dest), f"exists and is not an eebench output folder (no {marker}); "
                                           "choose an empty or new folder")
    created = _make_folders(dest.parent, dest)
    tmp, old = _sibling(dest, ".tmp"), _sibling(dest, ".old")
    try:
        try:
            os.mkdir(tmp, 0o700)
        except OSError as exc:
            raise InputError.at(str(dest), f"cannot write: {exc.strerror}") from None
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())   # (as mkdir would have made it: 0755 under the usual umask)
        if not replace:
            try:   # (a rename replaces an empty folder, and fails on one with files in it: one step)
                os.replace(tmp, dest)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):   # (ENOTDIR: a file came)
                    raise
                raise FileExistsError(errno.EEXIST, "File exists", str(dest)) from None
        elif dest.exists():
            os.mkdir(old, 0o700)
            os.replace(dest, old / "previous")
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not dest.exists():   # (stopped between the two moves: the earlier output goes back in place)
            with contextlib.suppress(OSError):
                os.replace(old / "previous", dest)
        shutil.rmtree(old, ignore_errors=True)
        _remove_folders(created)
        _name_the_output(exc, dest)
        raise

"""What an adapter is: a class that says whether it can read a file and streams the episodes in it.

An adapter knows one log format and nothing of eebench's rules. It turns each record of its format into an
`Episode` of `LoggedStep`s, keeping whatever the log knew; `eebench.adapters.convert` does the rest for every
adapter alike (reading actions, mapping to instances, labels, the canonical trajectory). A record that is not of
the format raises `InputError` located at file and record, so `--skip-invalid` can go on with the next one.
"""

from __future__ import annotations

import abc
import datetime
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from eebench.documents import found, loads_json
from eebench.errors import InputError, Problem
from eebench.trajectories import usage_bound

if TYPE_CHECKING:
    from eebench.adapters.actions import ActionReader
    from eebench.pieces import Span

# Per-step fields a canonical trajectory may carry beyond the action, in the order they are written; adapters fill
# what their format has (convert.to_trajectory writes them).
STEP_FIELDS: tuple[str, ...] = ("raw", "reasoning", "observation", "tokens_in", "tokens_out", "latency_ms",
                                "timestamp", "state")
HEAD_BYTES = 65536  # how much of a file `handles` sees


@dataclass(slots=True)
class LoggedStep:
    """One action of an episode as the log has it. Give the action one way: `call`, `text`, or `action`.

    `call` is a structured tool call (name and arguments, a mapping or its JSON string); `text` is the model's
    output to read the action from; `action` is an action the log already parsed (BALROG's Action column).
    `raw` defaults to `text`: the model's full output, always kept.
    """

    text: str | None = None
    call: tuple[str, Mapping[str, Any] | str | None] | None = None
    action: str | None = None
    raw: str | None = None
    reasoning: str | None = None
    observation: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    timestamp: str | None = None
    state: str | None = None             # where the step left the agent, when the log says (a Room column)


@dataclass
class Episode:
    """One trajectory as read from a log, before eebench's rules are applied."""

    id: str                              # unique among the episodes of the input files
    record: str | int | None             # where in the file: a record id or 0-based index
    steps: list[LoggedStep]
    line: int | None = None              # 1-based line, for line-based files
    task: str | None = None              # the log's own name of the task played (the instance, for logged env)
    fields: Mapping[str, Any] = field(default_factory=dict)  # the record, for --instance-field PATH
    agent: dict[str, str | None] = field(default_factory=dict)  # name, model, prompt, harness as the log says
    meta: dict[str, Any] = field(default_factory=dict)       # what else the log knew (reward, exit status, ...)
    document: dict[str, Any] | None = None   # an already canonical trajectory (the eebench format), kept as is
    # a fast path's step documents, made with the action reader convert picks, in place of `steps`: (the
    # documents, how many name no action); it must give what convert makes of `steps` (see convert.step_documents)
    step_documents: Callable[[ActionReader], tuple[list[dict[str, Any]], int]] | None = None


class Adapter(abc.ABC):
    """Base of every adapter. Subclasses set the class attributes and implement `handles` and `episodes`.

    A third-party adapter is a subclass registered under the entry-point group `eebench.adapters`:

        [project.entry-points."eebench.adapters"]
        my-format = "my_package.module:MyAdapter"
    """

    name: ClassVar[str]                  # the --from name
    summary: ClassVar[str]               # one line: what it reads
    example: ClassVar[str]               # one command line
    version: ClassVar[str] = "1"         # recorded in each trajectory's source.adapter_version
    suffixes: ClassVar[tuple[str, ...]] = ()   # file name endings it reads, for --from auto and the docs
    never_carries: ClassVar[frozenset[str]] = frozenset()  # STEP_FIELDS its format never has
    lines_are_episodes: ClassVar[bool] = False   # its JSON Lines hold one episode per line: see `line_episodes`

    @abc.abstractmethod
    def handles(self, path: Path, head: bytes) -> bool:
        """Whether the file looks like this format, judged by its name and its first HEAD_BYTES bytes."""

    def named_handles(self, path: Path, head: bytes) -> bool:
        """Whether a file found in a folder is a log of this format when the user named the format (`--from`).
        What `handles` says, unless a format whose detection must be strict (a bare list of actions) can accept
        more once it is named."""
        return self.handles(path, head)

    def primary_file(self, path: Path) -> Path:
        """The file to read for `path`. A format that keeps one episode in several files (BALROG's step table and
        its summary) names one of them, so that giving any or all of them converts the episode once."""
        return path

    @abc.abstractmethod
    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        """Stream the episodes of the file in order.

        A bad record is yielded as its InputError (located at file and record) and reading goes on with the next
        one; a file that cannot be read at all raises.
        """

    def line_episodes(self, path: Path, span: Span) -> Iterator[Episode | InputError]:
        """The episodes of a `span` of a JSON Lines file, as `episodes` yields them for those lines: for formats
        whose JSON Lines hold one episode per line, read alone (`lines_are_episodes`). Then `convert` may cut a
        large file into pieces converted in parallel (see `eebench.pieces`)."""
        raise NotImplementedError(f"{self.name}: a JSON line is not one episode read alone")


def bad_record(file: Path | str, message: str, *, line: int | None = None, record: str | int | None = None,
               field: str | None = None) -> InputError:
    """An InputError located at a record: `file:line: field: message`, or `file: record 3: field: message`."""
    where = field
    if line is None and record is not None:
        where = f"record {record}" + (f": {field}" if field else "")
    return InputError(Problem(str(file), line, where, message))


class Deferred:
    """A value of a record left as its JSON text by a fast reader that typed it apart (openai-chat's messages:
    parsing them as Python objects too would cost the reader a third of its time). Read by the door, where a path
    goes into it (`dig`)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes | memoryview):
        self.text = text

    def value(self) -> Any:
        return loads_json(bytes(self.text))


def dig(value: Any, path: str) -> Any:
    """The value at a dotted path (`info.task.id`, `samples[0].id`, `metadata.0`), or None where it is missing."""
    for part in path.replace("[", ".").replace("]", "").split("."):
        if part == "":
            continue
        if type(value) is Deferred:
            value = value.value()
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value.value() if type(value) is Deferred else value


def text_of(content: Any) -> str | None:
    """The text of a chat message's content: a string, or the text parts of a list of parts, joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return None


def listed(value: Any) -> list[Any]:
    """The items of a JSON array, or none when the log has something else there (a bad field, not a crash)."""
    return value if isinstance(value, list) else []


def as_label(value: Any) -> str | None:
    """A value that names something in an id (a task, a trial, a sample, an epoch) as text: a string or an
    integer; None for anything else (a mapping would put its Python repr in the id)."""
    return str(value) if isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool) else None


def count_problem(value: Any) -> str | None:
    """What is wrong with a token count as a log gives it (`expected ..., found ...`), or None when it is one: a
    non-negative integer (or a number without a fraction, as some writers put it) within the trajectory schema's
    bound, or null (no count, where the format allows none). The one rule of every format's counts, per step and in
    totals: a string, a list, a boolean, a negative or fractional number is refused, never read as no count."""
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            or isinstance(value, float) and not value.is_integer()):
        return f"expected a token count (an integer >= 0), {found(value)}"
    if value > usage_bound("tokens_in"):   # the schema's: what `validate` accepts of a step
        return f"expected a token count <= {usage_bound('tokens_in')} (the trajectory schema's bound), {found(value)}"
    return None


def as_int(value: Any) -> int | None:
    """A token count when the log has a non-negative integer, else None (never a made-up zero). Check it with
    `count_problem` first: a count of the wrong type is refused, not read as None."""
    if type(value) is int:
        return value if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value) if float(value).is_integer() else None


def number(value: Any) -> int | float | None:
    """The value when it is a JSON number (not a boolean), for outcome fields such as cost or reward; else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def iso_utc(seconds: Any) -> str | None:
    """An epoch time in seconds as ISO 8601 UTC (`2025-10-10T06:35:27Z`), for logs whose only clock is epoch
    seconds; None when it is not a plausible time."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < 1e11:
        return None
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.isoformat(timespec="seconds" if float(seconds).is_integer() else "milliseconds").replace(
        "+00:00", "Z")


def scalars(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a mapping whose values are JSON scalars: the outcome fields worth keeping in meta."""
    return {k: v for k, v in mapping.items() if v is None or isinstance(v, (str, int, float, bool))}


def ms_between(start: Any, end: Any) -> float | None:
    """Milliseconds from one ISO 8601 time to a later one, or None when either is missing or unreadable."""
    if not isinstance(start, str) or not isinstance(end, str):
        return None
    try:
        elapsed = (datetime.datetime.fromisoformat(end) - datetime.datetime.fromisoformat(start)).total_seconds()
    except (ValueError, TypeError):  # TypeError: one time has a zone and the other not
        return None
    return round(elapsed * 1000, 3) if elapsed >= 0 else None

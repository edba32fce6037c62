"""Reading the action out of what a model wrote: one reader shared by every adapter.

A model's output names its action in many ways: a JSON object (`{"action": "up"}`, bare or in a code fence),
a tag (`<action>Up</action>`, BALROG's `<|ACTION|>up<|END|>`), a tool call (`move(direction="up")`, or a
structured call from the API), an `Action: up` line, or just a short phrase (`Move north.`). The reader looks
for them in that order, strongest evidence first, and takes the last occurrence of the strongest kind (models
reason first and answer last). Free prose that merely mentions a direction is not an action: guessing would
grade the agent for a move it may not have made, so such a step is left unreadable (`None`) and costs the agent
an inadmissible move, as the unparsable output cost it in the episode.

A vocabulary turns a candidate phrase into the world's action word: grid moves (`North`, `move up`, `UP` ->
`up`), room-world objects (`<tangerine door>` -> `tangerine door`, Grams et al. A.4), or open text for logs of
other environments (kept as written). A user's regular expression, for unusual harnesses, is tried first; the
built-in rules read what it does not.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from eebench.documents import loads_json
from eebench.world.grid_dag import ACTIONS

# -- vocabularies -------------------------------------------------------------------------------------

_GRID_WORDS = {
    "up": "up", "north": "up", "n": "up", "u": "up", "↑": "up",
    "down": "down", "south": "down", "s": "down", "d": "down", "↓": "down",
    "left": "left", "west": "left", "w": "left", "l": "left", "←": "left",
    "right": "right", "east": "right", "e": "right", "r": "right", "→": "right",
}
_SINGLE_LETTERS = {w for w in _GRID_WORDS if len(w) == 1}
_WORD = re.compile(r"[\w'↑↓←→]+")
_VERBS = {"move", "go", "step", "walk", "head", "moving", "going", "turn", "travel", "run", "to", "the", "i",
          "will", "i'll", "let's", "lets", "one", "cell", "tile", "square", "direction", "action", "next", "my",
          "is", "a", "towards", "toward", "then", "now", "finally"}
_ROOM_KINDS = ("door", "ball", "key", "box")
_ROOM_OBJECT = re.compile(r"^[a-z][a-z0-9_\- ]* (?:door|ball|key|box)$|^(?:door|ball|key|box)$")
_PUNCT = re.compile(r"""^[\s"'`*_.,;:!?()\[\]{}<>]+|[\s"'`*_.,;:!?()\[\]{}<>]+$""")


def grid_move(phrase: str) -> str | None:
    """`up`, `down`, `left` or `right` for a phrase that names exactly one grid move, else None.

    `North`, `move up`, `UP`, `go west.`, `u` are moves; `up or left` and `I cannot go up, so left` are not.
    """
    if len(phrase) > 80 and len(phrase := phrase.strip()) > 80:
        return None  # six words at most: a paragraph is never a move, and is not worth splitting into words
    return _short_grid_move(phrase)


@functools.lru_cache(maxsize=1 << 12)   # answers repeat (`up`, `move up`), and a phrase of 80 letters is small to keep
def _short_grid_move(phrase: str) -> str | None:
    words = _WORD.findall(phrase.lower())
    if not words or len(words) > 6:
        return None
    moves = {_GRID_WORDS[w] for w in words if w in _GRID_WORDS and (w not in _SINGLE_LETTERS or len(words) == 1)}
    rest = [w for w in words if w not in _GRID_WORDS and w not in _VERBS]
    if len(moves) != 1 or rest:
        return None
    return moves.pop()


def room_object(phrase: str) -> str | None:
    """A room-world object as the environment names it (`tangerine door`), else None.

    Markdown escapes (`dodger\\_blue`), case and extra spaces are undone; `interact with the red ball` keeps
    `red ball`.
    """
    text = re.sub(r"\s+", " ", phrase.replace("\\", "").strip().lower())
    text = _PUNCT.sub("", text)
    text = _ROOM_VERB.sub("", text)
    text = re.sub(r"^(?:the|a|an)\s+", "", text)
    return text if _ROOM_OBJECT.match(text) else None


# what a model says before the object it acts on: `I will go through the`, `let me walk to`, `pick up`
_ROOM_VERB = re.compile(r"^(?:(?:i will|i'll|i am going to|i'm going to|let me|let's|lets|now|next|then|so)\s+)*"
                        r"(?:interact(?: with)?|go(?: through| to| into)?|walk(?: through| to| into)?|move"
                        r"(?: through| to| into)?|enter|open|pick up|collect|grab|take|use)\s+")


def as_text(phrase: str) -> str | None:
    """Open vocabulary (logs of other environments): the phrase as written, trimmed; None if empty."""
    text = phrase.strip()
    return text or None


VOCABULARIES: dict[str, Callable[[str], str | None]] = {"grid": grid_move, "rooms": room_object, "text": as_text}
VOCABULARY_HELP = {
    "grid": f"grid moves ({', '.join(ACTIONS)}; synonyms such as North, 'move up', UP)",
    "rooms": "room-world objects of Grams et al. ('<tangerine door>', '<red ball>')",
    "text": "any text, kept as written (logs of other environments)",
}


# -- finding candidates in text ------------------------------------------------------------------------

_ACTION_KEYS = ("action", "move", "direction", "dir", "next_action", "command", "object", "target", "answer")
_TAG = re.compile(r"<\s*(action|move|direction|answer|act)\s*>(.*?)<\s*/\s*\1\s*>", re.I | re.S)
_BALROG_TAG = re.compile(r"<\|ACTION\|>(.*?)<\|END\|>", re.S)
_CALL = re.compile(r"\b([A-Za-z_][\w.]*)\s*\(([^()]*)\)")
_ACTION_LINE = re.compile(r"^[\s>*#_-]*(?:final\s+)?(?:action|move|answer|next\s+action|decision)\s*(?:\d+\s*)?[:=]"
                          r"\s*(.+?)\s*$", re.I | re.M)
# the same label inside a line, after other words; weaker than a line of its own
_ACTION_INLINE = re.compile(r"(?<![\w-])(?:final\s+)?(?:action|move|answer|next\s+action|decision)\s*[:=]\s*(.+?)\s*$",
                            re.I | re.M)
# the label patterns need one of these words; the inline one starts at it, and is tried from the first one on, not
# at every letter of the reasoning before it (for a text without any, neither pattern is tried)
_LABEL_WORDS = ("action", "move", "answer", "next", "decision", "final")
# letters re.I matches to a letter of those words that lower() does not turn into it (İ also becomes two letters)
_ODD_CASES = ("\u0130", "\u0131", "\u017f")
_ANGLE = re.compile(r"<([^<>/|]{1,80})>")
_NOT_OBJECTS = {"think", "action", "move", "answer", "direction", "act", "end", "br"}
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)


_JSON_DECODER = json.JSONDecoder()   # keeps no state between texts


def _json_objects(text: str) -> list[Any]:
    """Every JSON object embedded in the text (bare or in code fences), in order of appearance."""
    found = []
    decoder = _JSON_DECODER
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than any action object
            start = text.find("{", start + 1)
            continue
        found.append(value)
        start = text.find("{", end)
    return found


def _from_mapping(value: Mapping[str, Any], keyed_only: bool = False) -> str | None:
    """The action named by a JSON object or a call's arguments: the first action-like key holding a string, else
    (unless `keyed_only`) its one string value. Open text is read `keyed_only`: the one string of a tool's
    arguments (`Action Input: {"query": "paris"}`) is not the action, where a closed vocabulary still refuses any
    word that is not a move."""
    lowered = {str(k).lower(): v for k, v in value.items()}
    for key in _ACTION_KEYS:
        candidate = lowered.get(key)
        if isinstance(candidate, str):
            return candidate
        if isinstance(candidate, dict):  # {"action": {"direction": "up"}}
            inner = _from_mapping(candidate, keyed_only)
            if inner is not None:
                return inner
    if keyed_only:
        return None
    strings = [v for v in value.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else None


def _call_phrase(name: str, arguments: Mapping[str, Any] | str | None) -> str:
    """A tool call as one phrase: `move` + `up` -> `move up`; `move_up()` -> `move up`."""
    name = name.split(".")[-1].replace("_", " ").replace("-", " ")
    if isinstance(arguments, dict):
        inner = _from_mapping(arguments)
        return f"{name} {inner}" if inner is not None else name
    if isinstance(arguments, str) and arguments.strip():
        return f"{name} {arguments.strip()}"
    return name


def _text_call_arguments(args: str) -> dict[str, Any] | str:
    """`direction="up"` -> {"direction": "up"}; `"up"` or `up` -> "up"."""
    pairs = re.findall(r"(\w+)\s*[=:]\s*(\"[^\"]*\"|'[^']*'|[^,\s]+)", args)
    if pairs:
        return {k: v.strip("\"'") for k, v in pairs}
    return args.strip().strip("\"'")


def _label_start(text: str) -> int:
    """Where the first word a label pattern needs starts, read case-insensitively as the patterns read it, or -1
    when the text has none; 0 when a letter lower() does not fold as re.I does leaves that undecided."""
    if any(odd in text for odd in _ODD_CASES):
        return 0
    lowered = text.lower()   # of the same length: only İ lowers to two letters
    found = [at for at in map(lowered.find, _LABEL_WORDS) if at >= 0]
    return min(found) if found else -1


def _line_start(text: str, start: int) -> int:
    """Where a line label (`> Action: up`) before or at `start` may begin: back over what the line pattern lets
    precede the label word (space, newlines too, and `>*#_-`)."""
    while start and (text[start - 1] in ">*#_-" or text[start - 1].isspace()):
        start -= 1
    return start


def _candidates(text: str, open_vocabulary: bool) -> Iterator[list[str]]:
    """Candidate phrases grouped by the strength of the evidence, strongest group first; each in text order.

    Lazy: most outputs are settled by the first group that has a readable phrase. For open text only the explicit
    forms count before the whole text: prose such as `thank you (Mia)` must not read as a call.
    """
    if "{" in text:
        yield [a for a in (_from_mapping(o, keyed_only=open_vocabulary) for o in _json_objects(text)
                           if isinstance(o, dict)) if a is not None]
    if "<" in text:
        yield [m.group(2) for m in _TAG.finditer(text)] + [m.group(1) for m in _BALROG_TAG.finditer(text)]
    # both label patterns need a `:` or `=` and a label word: prose without them skips both
    start = _label_start(text) if ":" in text or "=" in text else -1
    labelled = start >= 0
    if labelled:   # `^` still matches only at a line's start, as from the text's start
        yield [m.group(1) for m in _ACTION_LINE.finditer(text, _line_start(text, start))]
    if not open_vocabulary:
        if labelled:
            # `I think up is bad. Action: left`; its lookbehind still sees the letter before `start`
            yield [m.group(1) for m in _ACTION_INLINE.finditer(text, start)]
        if "(" in text:
            yield [_call_phrase(m.group(1), _text_call_arguments(m.group(2))) for m in _CALL.finditer(text)]
        if "<" in text:
            yield [m.group(1) for m in _ANGLE.finditer(text) if m.group(1).strip().lower() not in _NOT_OBJECTS]
        if "```" in text:
            yield [m.group(1) for m in _FENCE.finditer(text)]
        lines = text.strip().splitlines()
        # reasoning first, the answer alone on the last line; a line of brackets only closes a structured answer.
        # Not for open text, whose last line is just the end of the message.
        if len(lines) > 1 and any(c.isalnum() for c in lines[-1]):
            yield [lines[-1]]
    yield [text]


# -- the reader ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ActionReader:
    """Reads actions in one vocabulary, optionally through a user's regular expression."""

    vocabulary: str = "grid"
    pattern: re.Pattern[str] | None = None
    # what short outputs and calls read as: harnesses repeat them (`<action>Down</action>`) all the time; a dict
    # of its own, so a look-up hashes the text alone (an lru_cache keyed by the reader hashed it every call)
    _known: dict[Any, str | None] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.vocabulary not in VOCABULARIES:
            raise ValueError(f"unknown vocabulary {self.vocabulary!r}")

    @property
    def _word(self) -> Callable[[str], str | None]:
        return VOCABULARIES[self.vocabulary]

    def from_text(self, text: str | None) -> str | None:
        """The action a model's text output names, or None when it names none (or several, ambiguously)."""
        if not text:
            return None
        if len(text) > _CACHED_TEXT:
            return self._read(text)
        known = self._known
        if text in known:
            return known[text]
        return self._remember(text, self._read(text))

    def _remember(self, key: Any, action: str | None) -> str | None:
        if len(self._known) >= _CACHED_ENTRIES:  # bounded: a log of ever new outputs starts the memory afresh
            self._known.clear()
        self._known[key] = action
        return action

    def _read(self, text: str) -> str | None:
        if not text or text.isspace():   # what strip() would leave empty, without the copy
            return None
        word = self._word
        if self.pattern is not None:  # the user's pattern first; the built-in rules still read what it does not
            for match in reversed(list(self.pattern.finditer(text))):
                group = match.group("action") if "action" in self.pattern.groupindex else None
                phrase = group if group is not None else (match.group(1) if self.pattern.groups else match.group(0))
                action = word(phrase) if phrase is not None else None
                if action is not None:
                    return action
        for group in _candidates(text, self.vocabulary == "text"):
            for phrase in reversed(group):  # the last answer of the strongest kind
                action = word(phrase)
                if action is not None:
                    return action
        return None

    def from_call(self, name: str, arguments: Mapping[str, Any] | str | None) -> str | None:
        """The action of a structured tool call (`move` with `{"direction": "up"}`), or None."""
        if type(arguments) is str and len(arguments) <= _CACHED_TEXT:  # `{"direction": "up"}` over and over
            key = (name, arguments)
            known = self._known
            if key in known:
                return known[key]
            return self._remember(key, self._read_call(name, arguments))
        return self._read_call(name, arguments)

    def _read_call(self, name: str, arguments: Mapping[str, Any] | str | None) -> str | None:
        arguments = decoded_arguments(arguments)
        if self.vocabulary == "text":
            return render_call(name, arguments)
        word = self._word
        inner = _from_mapping(arguments) if isinstance(arguments, dict) else arguments
        for phrase in (_call_phrase(name, arguments), inner):
            if isinstance(phrase, str):
                action = word(phrase)
                if action is not None:
                    return action
        return None

    def normalize(self, action: str | None) -> str | None:
        """An action the log already parsed (e.g. BALROG's Action column), in this vocabulary's words."""
        if action is None:
            return None
        return self._word(action) if self.vocabulary != "text" else as_text(action)


_CACHED_TEXT = 200
_CACHED_ENTRIES = 1 << 16


def decoded_arguments(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any] | str | None:
    """A call's arguments as a mapping when an API sent them JSON-encoded (`'{"direction": "up"}'`)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        # the one door: JSON-encoded arguments can hold what a document may not (a lone surrogate, NaN, depth)
        decoded = loads_json(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    return decoded if isinstance(decoded, (dict, str)) else arguments


def render_call(name: str, arguments: Mapping[str, Any] | str | None, *, verbatim: bool = False) -> str:
    """A tool call as text: `bash({"command": "ls"})`. As an action, in one form whatever the log's encoding (keys
    sorted); `verbatim` (for `raw`) keeps JSON-encoded arguments exactly as the model wrote them."""
    if not verbatim:
        arguments = decoded_arguments(arguments)
    if arguments is None or arguments == {} or arguments == "":
        return f"{name}()"
    if isinstance(arguments, str):
        return f"{name}({arguments})"
    return f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"

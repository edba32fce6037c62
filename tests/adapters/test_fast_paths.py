"""The fast paths of `convert` against the exact ones they stand in for: the same verdicts, the same bytes."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eebench.adapters.actions import ActionReader
from eebench.adapters.base import Deferred, dig
from eebench.adapters.chat import chat_steps, typed_chat_documents
from eebench.adapters.convert import ConvertOptions, Converted, KnownInstances, _items, step_documents
from eebench.adapters.convert import _converted as _converted_item
from eebench.adapters.formats.openai_chat import OpenAIChatAdapter, read_fast
from eebench.documents import MAX_DEPTH, DepthGauge, orjson_reads_exactly, too_deep
from eebench.errors import InputError

# text around the depth limit made of what the depth rule looks at: brackets, quotes, runs of backslashes
_noise = st.text(alphabet='[]{}"\\\\a', max_size=40)


@settings(max_examples=250)
@given(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3), _noise, _noise, st.sampled_from("[{"), st.booleans())
def test_too_deep_judges_as_the_depth_gauge_on_any_bytes(opened: int, before: str, inside: str, bracket: str,
                                                         in_string: bool) -> None:
    middle = f'"{inside}"' if in_string else inside
    data = (before + bracket * opened + middle + "]" * opened).encode()
    assert too_deep(data) == (not DepthGauge().feed(data))


@settings(max_examples=250)
@given(st.text(alphabet="[]{}", max_size=30), st.integers(0, MAX_DEPTH + 3), st.booleans())
def test_too_deep_judges_many_brackets_as_the_depth_gauge(noise: str, wide: int, nested: bool) -> None:
    # past MAX_DEPTH brackets in all: shallow ones (a trajectory's steps) are judged in C, the rest by numpy
    data = (("[" * wide + noise + "]" * wide) if nested else ("{}" * wide + noise + "[]" * wide)).encode()
    assert too_deep(data) == (not DepthGauge().feed(data))


def test_too_deep_reads_escaped_quotes_and_brackets_in_strings() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert too_deep(deep.encode())
    assert not too_deep(f'["{deep}"]'.encode())                       # all inside a string
    assert not too_deep(f'["\\"{deep}\\""]'.encode())                 # escaped quotes keep it inside
    assert too_deep(f'["\\\\", {deep}]'.encode())                      # an escaped backslash ends the string
    assert not too_deep(("[" * MAX_DEPTH + '"\\"[x"' + "]" * MAX_DEPTH).encode())


# -- openai-chat: the fast path against the exact one ---------------------------------------------------------------

_text = st.lists(st.sampled_from(list("ab up left :<>{}\"\\\n") + ["Action: down", "<action>Up</action>", "é",
                                                                   "\u2028", "\x00", "😀"]), max_size=12).map("".join)
_count = st.one_of(st.none(), st.integers(-3, 2**65))   # what the fast path types; past 64 bits orjson reads floats
_token = st.one_of(_count, st.floats(0, 1e3, allow_nan=False), st.booleans(), st.just(10**20))
_call_id = st.one_of(st.sampled_from(["c0", "c1", "None"]), st.none())
_arguments = st.one_of(st.sampled_from(['{"direction": "up"}', '{"direction": "left"}', "", "up", "{bad"]), _text)


@st.composite
def _messages(draw, common: bool) -> dict:
    """A chat message; `common`: of the shape the fast path types, else of any shape."""
    roles = ["assistant", "assistant", "user", "tool", "function", "system", "developer"]
    role = draw(st.sampled_from(roles if common else [*roles, 7]))
    message: dict = {"role": role}
    if draw(st.integers(0, 4)):
        contents = st.one_of(_text, st.none())
        message["content"] = draw(contents if common else st.one_of(contents, st.integers(0, 3), st.lists(
            st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2)))
    if role == "assistant" and draw(st.booleans()):
        arguments = _arguments if common else st.one_of(_arguments, st.fixed_dictionaries(
            {"direction": st.sampled_from(["up", "east", "x"])}))
        calls = draw(st.lists(st.fixed_dictionaries(
            {"function": st.fixed_dictionaries({"name": st.sampled_from(["move", "", "look"]),
                                                "arguments": arguments})},
            optional={"id": _call_id if common else st.one_of(_call_id, st.integers(0, 2)),
                      "type": st.just("function")}), max_size=3))
        message["tool_calls"] = draw(st.one_of(st.just(calls), st.just(None)) if common else st.just([1]))
    if role in ("tool", "function") and draw(st.booleans()):
        message["tool_call_id"] = draw(_call_id if common else st.integers(0, 2))
    if role == "assistant" and draw(st.booleans()):
        counts = {"prompt_tokens": _count, "completion_tokens": _count, "total_tokens": _count}
        if not common:
            counts = {"prompt_tokens": _token, "completion_tokens": _token, "input_tokens": _token}
        message["usage"] = draw(st.one_of(st.none(), st.fixed_dictionaries({}, optional=counts)))
    if draw(st.integers(0, 5)) == 0:
        extra = ["model", "name", "refusal"] if common else ["reasoning_content", "reasoning", "extra"]
        message[draw(st.sampled_from(extra))] = draw(_text)
    return message


@st.composite
def _chat_lines(draw) -> bytes:
    """JSON Lines of chat records, most of the shape the fast path types, some damaged (cut, bytes changed, limits
    of the door crossed)."""
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        common = draw(st.integers(0, 3)) > 0
        key = draw(st.sampled_from(["messages", "messages", "traj", "conversation", "turns"]))
        record: dict = {key: [draw(_messages(common or draw(st.booleans())))
                              for _ in range(draw(st.integers(0, 8)))]}
        for field in draw(st.lists(st.sampled_from(["task_id", "model", "id", "trial", "reward", "info"]), max_size=3)):
            record[field] = draw(st.one_of(_text, st.integers(-5, 10**25), st.floats(allow_nan=False), st.none(),
                                           st.booleans(), st.just({"task": {"id": "t"}}), st.just([1, [2]])))
        line = json.dumps(record, ensure_ascii=draw(st.booleans()))
        damage = draw(st.sampled_from(["none"] * 8 + ["cut", "flip", "nan", "surrogate", "deep", "bad utf-8"]))
        if damage == "cut":
            line = line[:draw(st.integers(0, len(line)))]
        elif damage == "flip":
            at = draw(st.integers(0, len(line) - 1))
            line = line[:at] + draw(st.sampled_from(list('{}[]",:\\ 0a'))) + line[at + 1:]
        elif damage == "nan":
            line = line.replace('"role"', '"x": NaN, "role"', 1)
        elif damage == "surrogate":
            line = line.replace('"role"', '"x": "\\ud800", "role"', 1)
        elif damage == "deep":
            depth = draw(st.integers(MAX_DEPTH - 8, MAX_DEPTH + 2))
            line = line.replace('"role"', '"x": ' + "[" * depth + "]" * depth + ', "role"', 1)
        data = line.encode()
        if damage == "bad utf-8":
            data = data.replace(b'"role"', b'"\xff": 1, "role"', 1)
        lines.append(data)
    return b"\n".join(lines) + b"\n"


def _converted(adapter: OpenAIChatAdapter, path: Path, env: str | None, field: str) -> list[bytes | str]:
    """What convert makes of each record: the trajectory's bytes, or the one-line error. With `env` logged the
    actions read as open text, else as grid moves; the instance is read from `field`."""
    options = ConvertOptions(instance_field=field, env=env, known=KnownInstances())
    readers = options.readers()
    made = (_converted_item(item, adapter, path, options, readers, str(path)) for item in _items(path, adapter))
    return [item.data if isinstance(item, Converted) else str(InputError(item.problems)) for item in made]


@settings(max_examples=150, deadline=None)
@given(_chat_lines(), st.sampled_from([None, "logged"]),
       st.sampled_from(["task_id", "task_id", "messages[0].content", "messages", "traj.1.role"]))
def test_the_fast_and_the_exact_path_convert_chat_logs_alike(data: bytes, env: str | None, field: str) -> None:
    # (an instance read from inside the messages: the fast path leaves them as text until a path goes into them)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chat.jsonl"
        path.write_bytes(data)
        exact = OpenAIChatAdapter()
        exact.fast_reader = None
        assert _converted(OpenAIChatAdapter(), path, env, field) == _converted(exact, path, env, field)


def test_the_fast_path_takes_the_common_shape_and_leaves_the_rest() -> None:
    plain = {"task_id": "t", "messages": [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": "go", "usage": {"prompt_tokens": 3, "completion_tokens": 1},
         "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "move", "arguments": "{\"d\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "moved"}]}
    read = read_fast(json.dumps(plain).encode())
    assert read is not None and _value(read[0]) == plain
    assert type(read[0]["messages"]) is Deferred   # left as text: typed alone, read by the door where dug into
    assert dig(read[0], "messages[2].content") == "moved" and dig(read[0], "messages[3]") is None
    reader = ActionReader("text")
    assert typed_chat_documents(read[1], reader) == ([{"action": 'move({"d": 1})', "raw": 'move({"d": 1})',
                                                       "reasoning": "go", "observation": "moved", "tokens_in": 3,
                                                       "tokens_out": 1}], 0)
    for other in ({"reasoning_content": "hm"}, {"content": [{"type": "text", "text": "x"}]},
                  {"usage": {"prompt_tokens": 1.0}}, {"tool_calls": [{"function": {"name": "f", "arguments": {}}}]}):
        shaped = {"task_id": "t", "messages": [{"role": "assistant", "content": "x", **other}]}
        assert read_fast(json.dumps(shaped).encode()) is None, other
    # a tool message without tool_call_id answers a call whose id is the text "None", as chat_turns has it
    odd = {"messages": [{"role": "assistant", "tool_calls": [
        {"id": "None", "function": {"name": "move", "arguments": "up"}},
        {"id": "c1", "function": {"name": "move", "arguments": "down"}}]}, {"role": "tool", "content": "seen"}]}
    read = read_fast(json.dumps(odd).encode())
    assert read is not None
    documents, _ = typed_chat_documents(read[1], reader)
    assert documents == step_documents(chat_steps(odd["messages"]), reader)[0]
    assert [d.get("observation") for d in documents] == ["seen", None]
    assert read_fast(b'{"messages": [], "big": 123456789012345678901}') is None   # orjson would lose digits
    read = read_fast(b'{"messages": [], "big": 18446744073709551615}')
    assert read is not None and (_value(read[0]), read[1]) == ({"messages": [], "big": 2**64 - 1}, [])
    assert read_fast(b'{"messages": [], "x": "\\ud800"}') is None                # the door refuses it
    assert read_fast(b'{"messages": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") is None   # too deep
    assert read_fast(b'{"messages": [], "\xff": 1}') is None   # a key that is not UTF-8


def test_the_fast_path_writes_a_step_s_fields_in_the_exact_path_s_order() -> None:
    # a step's token counts follow its observation in its document, though the observation is read later: from the
    # user's answer to a text step, or from tool messages answering a call after the assistant spoke again
    messages = [{"role": "assistant", "content": "up", "usage": {"prompt_tokens": 3, "completion_tokens": 1}},
                {"role": "user", "content": "moved"},
                {"role": "assistant", "content": "two calls", "usage": {"completion_tokens": 2}, "tool_calls": [
                    {"id": "a", "function": {"name": "move", "arguments": '{"direction": "left"}'}},
                    {"id": "b", "function": {"name": "move", "arguments": '{"direction": "down"}'}}]},
                {"role": "assistant", "content": "right"},
                {"role": "tool", "tool_call_id": "a", "content": "late"},
                {"role": "tool", "tool_call_id": "a", "content": "later"}]
    read = read_fast(json.dumps({"messages": messages}).encode())
    assert read is not None
    reader = ActionReader()
    fast, exact = typed_chat_documents(read[1], reader), step_documents(chat_steps(messages), reader)
    assert orjson.dumps(fast) == orjson.dumps(exact)   # (bytes: dict equality would not see the order)
    assert list(fast[0][0]) == ["action", "raw", "observation", "tokens_in", "tokens_out"]
    assert fast[0][1] == {"action": "left", "raw": 'move({"direction": "left"})', "reasoning": "two calls",
                          "observation": "late\nlater", "tokens_out": 2}


def _value(record: dict) -> dict:
    """A record as the door reads it, its Deferred values read."""
    return {key: dig(record, key) for key in record}


@settings(max_examples=300)
@given(st.integers(-10**30, 10**30), st.text(alphabet="0123456789", min_size=1, max_size=40),
       st.sampled_from(["", "e5", "E-7", "e+300", "e-320"]), st.sampled_from(['"x"', '"1234567890123456789"']))
def test_orjson_reads_numbers_exactly_where_the_door_lets_it(whole: int, fraction: str, exponent: str,
                                                             string: str) -> None:
    data = f"[{whole}.{fraction}{exponent}, {whole}, {string}]".encode()
    # integers of 19 digits or more (strings too, to be safe) go to the standard library; long fractions need not
    assert orjson_reads_exactly(data) == (len(str(abs(whole))) < 19 and string == '"x"')
    if orjson_reads_exactly(data):
        try:
            fast = orjson.loads(data)
        except orjson.JSONDecodeError:   # beyond a 64-bit float: refused, as the door refuses it
            assert math.isinf(json.loads(data)[0])
        else:
            assert fast == json.loads(data)


# -- reading actions: the label patterns tried from the first label word ------------------------------------------

_label_text = st.lists(st.sampled_from(["Action", "ACTION", "move", "MoVe", "next", "final", "answer", "decision",
                                        "DECIſION", "fınal", "\u0130", "aktion", ":", "=", " ", "\n", "-", "x", "up",
                                        "Final ", "next  action", "é", "> ", "#", "*", "_", "\t", "\u2003", "\r\n",
                                        "\n  Action: ", "\n> **Move** = ", "\u2028- final answer:"]),
                     max_size=14).map("".join)


@settings(max_examples=300)
@given(_label_text)
@example("I think up is bad.\n  > Action: left")
def test_the_label_patterns_match_from_the_first_label_word_as_from_the_start(text: str) -> None:
    from eebench.adapters.actions import _ACTION_INLINE, _ACTION_LINE, _label_start, _line_start

    start = _label_start(text)
    if start < 0:
        assert not _ACTION_LINE.search(text) and not _ACTION_INLINE.search(text)
        return
    for pattern, at in ((_ACTION_INLINE, start), (_ACTION_LINE, _line_start(text, start))):
        assert [m.span() for m in pattern.finditer(text, at)] == [m.span() for m in pattern.finditer(text)]


def test_a_refusal_or_a_spoken_answer_is_the_steps_text(tmp_path: Path) -> None:
    # the chat-completions API answers beside a null content: `refusal`, a refusal part, or audio's transcript; the
    # step kept none of it (no action and no raw), on either path
    messages = [{"role": "user", "content": "Where now?"},
                {"role": "assistant", "content": None, "refusal": "I cannot help with that."},
                {"role": "user", "content": "Please move"},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
                {"role": "assistant", "content": None, "audio": {"id": "a1", "transcript": "Going up."}}]
    path = tmp_path / "chat.jsonl"
    path.write_bytes(orjson.dumps({"task_id": "t/x", "messages": messages}) + b"\n")
    exact = OpenAIChatAdapter()
    exact.fast_reader = None
    for adapter in (OpenAIChatAdapter(), exact):
        (made,) = _converted(adapter, path, "logged", "task_id")
        steps = orjson.loads(made)["steps"]
        assert [step.get("raw") for step in steps] == ["I cannot help with that.", "No.", "Going up."], adapter
    path.write_bytes(orjson.dumps({"task_id": "t/x", "messages": messages[:3]}) + b"\n")   # the fast path's shape
    assert _converted(OpenAIChatAdapter(), path, "logged", "task_id") == _converted(exact, path, "logged", "task_id")

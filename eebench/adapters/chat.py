"""Chat transcripts (OpenAI chat-completions messages) as logged steps: shared by every adapter whose format
embeds such messages (openai-chat, and the chat parts of other logs).

Each assistant message is one step, or one step per tool call when it makes calls (`tool_calls`, a legacy
`function_call`, or Anthropic's `tool_use` content parts). What the assistant wrote beside its calls is the step's
reasoning; the observation is what the agent saw before its next message: the `tool` message (or Anthropic
`tool_result` part) answering a call by its id, and any `user` message (harnesses that send the environment's answer
as the user), joined in order. A tool answer that names no call of the last message, and a user message, go to its
last step: nothing the agent was shown is dropped.
`chat_turns` reads messages of any shape; `typed_chat_documents` is the fast path for messages of the common
shape, typed by msgspec (openai-chat's JSON Lines): it makes the steps' documents at once, held to the same output
by a property test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from eebench.adapters.actions import ActionReader, render_call
from eebench.adapters.base import LoggedStep, as_int, count_problem, text_of
from eebench.documents import json_type
from eebench.trajectories import usage_bound


def reasoning_of(message: Mapping[str, Any]) -> str | None:
    """Reasoning a provider keeps apart from the content: `reasoning_content`, `reasoning`, or reasoning parts."""
    content = message.get("content")
    if type(content) is str and "reasoning_content" not in message and "reasoning" not in message:
        return None  # the common case, decided at once
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    if isinstance(content, list):
        # a redacted part (Inspect's `redacted: true`) holds the provider's encrypted reasoning: its summary, if any
        parts = [p.get("summary") if p.get("redacted") is True else p.get("reasoning") or p.get("thinking")
                 or p.get("text")
                 for p in content if isinstance(p, dict) and p.get("type") in ("reasoning", "thinking")]
        texts = [p for p in parts if isinstance(p, str)]
        if texts:
            return "\n".join(texts)
    return None


def visible_text(content: Any) -> str | None:
    """The text parts of a content, refusal parts included, without reasoning parts (which `reasoning_of`
    reads)."""
    if isinstance(content, list):
        content = [p for p in refusals_as_text(content)
                   if not (isinstance(p, dict) and p.get("type") in ("reasoning", "thinking"))]
    return text_of(content)


def refusals_as_text(content: Any) -> Any:
    """A message's content with its `refusal` parts as text parts: what the model answered instead of acting."""
    if not isinstance(content, list):
        return content
    return [{"type": "text", "text": part.get("refusal")} if isinstance(part, Mapping) and part.get("type") == "refusal"
            else part for part in content]


def spoken_answer(message: Mapping[str, Any]) -> str | None:
    """What an assistant message with no content answered: its `refusal`, else its audio's transcript (the
    chat-completions API puts them beside `content`, which is then null)."""
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return refusal
    audio = message.get("audio")
    transcript = audio.get("transcript") if isinstance(audio, Mapping) else None
    return transcript if isinstance(transcript, str) and transcript else None


_USAGE_KEYS = (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))   # (in, out): either name


def usage_of(message: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(tokens in, tokens out) of a message that carries a `usage` (raw completions), else (None, None). Check it
    with `usage_problem` first."""
    usage = message.get("usage")
    if type(usage) is not dict:
        return None, None
    tokens_in = as_int(usage.get("prompt_tokens", usage.get("input_tokens")))
    tokens_out = as_int(usage.get("completion_tokens", usage.get("output_tokens")))
    return tokens_in, tokens_out


def usage_problem(message: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, what was expected and found) for a `usage` that is not an object or null, or a count in it that
    `usage_of` reads and `count_problem` refuses; None when its counts are counts or absent."""
    usage = message.get("usage")
    if usage is None:
        return None
    if type(usage) is not dict:
        return "usage", f"expected an object or null, found {json_type(usage)}"
    for names in _USAGE_KEYS:
        name = names[0] if names[0] in usage else names[1]
        problem = count_problem(usage.get(name))
        if problem is not None:
            return f"usage.{name}", problem
    return None


# What a message's fields must be for its step to be read (a number as `content` would be a step with no action)
_SHAPES = (("role", (str,), "a string"), ("content", (str, list, type(None)), "a string, a list of parts or null"),
           ("tool_calls", (list, type(None)), "a list or null"),
           ("reasoning_content", (str, type(None)), "a string or null"),
           ("reasoning", (str, type(None)), "a string or null"))


def message_problem(message: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, what was expected and found) for the first field of a chat message of the wrong type, or None: the
    one check of a message's shape, for every format that embeds chat messages."""
    for name, kinds, expected in _SHAPES:
        if name in message and not isinstance(message[name], kinds):
            return name, f"expected {expected}, found {json_type(message[name])}"
    content = message.get("content")
    for k, part in enumerate(content if type(content) is list else ()):   # (a part of no text, an image, is read)
        if not isinstance(part, (str, dict)):
            return f"content[{k}]", f"expected a text or an object part, found {json_type(part)}"
        if isinstance(part, dict) and part.get("type") == "tool_use" and not (isinstance(part.get("name"), str)
                                                                             and part["name"]):
            return f"content[{k}].name", f"expected the tool's name as a string, found {json_type(part.get('name'))}"
        for key in ("text", "reasoning", "thinking"):   # what reasoning_of and text_of read of a part
            if isinstance(part, dict) and not isinstance(part.get(key), (str, type(None))):
                return f"content[{k}].{key}", f"expected a string, found {json_type(part[key])}"
    legacy = message.get("function_call")
    if legacy is not None and not (isinstance(legacy, dict) and isinstance(legacy.get("name"), str) and legacy["name"]):
        return "function_call", "expected a call naming its function (`name`)"
    for k, call in enumerate(message.get("tool_calls") or ()):   # chat-completions' shape, or a flat one
        function = call.get("function", call.get("name")) if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else function
        if not (isinstance(name, str) and name):   # (an empty name was written as the action `()`)
            return f"tool_calls[{k}]", "expected a call naming its function (`function.name`)"
    return usage_problem(message) if "usage" in message else None


def messages_problem(messages: list[Any], key: str = "messages") -> tuple[str, str] | None:
    """(field, what was expected and found) for the first message of a list (`key`) with a field of the wrong
    type (see message_problem), or None."""
    for i, message in enumerate(messages):
        problem = message_problem(message) if isinstance(message, Mapping) else None
        if problem is not None:
            return f"{key}[{i}].{problem[0]}", problem[1]
    return None


def call_parts(call: Mapping[str, Any]) -> tuple[str, Any, str | None]:
    """(name, arguments, id) of a tool call in the chat-completions shape, a flat one, or an Anthropic `tool_use`
    content part (`input`)."""
    function = call.get("function")
    if isinstance(function, dict):
        return str(function.get("name") or ""), function.get("arguments"), call.get("id")
    return (str(call.get("function") or call.get("name") or ""), call.get("arguments", call.get("input")),
            call.get("id"))


def _tool_results(content: Any) -> list[dict[str, Any]]:
    """The `tool_result` parts of a user message's content (Anthropic's shape), none for any other content."""
    if type(content) is not list:
        return []
    return [part for part in content if isinstance(part, dict) and part.get("type") == "tool_result"]


def chat_steps(messages: Iterable[Any]) -> list[LoggedStep]:
    """The steps of a chat transcript, with observations joined to the calls they answer."""
    return [step for _, steps in chat_turns(messages) for step in steps]


def chat_turns(messages: Iterable[Any]) -> list[tuple[Mapping[str, Any], list[LoggedStep]]]:
    """Each assistant message with the steps made of it, for formats that keep per-turn data (tokens, timing)
    beside the transcript."""
    turns: list[tuple[Mapping[str, Any], list[LoggedStep]]] = []
    by_call: dict[str, LoggedStep] = {}
    waiting: list[LoggedStep] = []   # the steps of the last assistant message: what the agent sees next answers them
    for message in messages:
        if type(message) is not dict and not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            waiting = _assistant_steps(message, by_call)
            turns.append((message, waiting))
        elif role == "user":
            content = message.get("content")
            results = _tool_results(content)
            for part in results:   # Anthropic's answers to tool_use parts, by id
                step = by_call.get(str(part.get("tool_use_id"))) or (waiting[-1] if waiting else None)
                text = text_of(part.get("content"))
                if step is not None and text is not None:
                    step.observation = text if step.observation is None else f"{step.observation}\n{text}"
            if results:   # the message's other parts, as any user message
                content = [part for part in content if not any(part is result for result in results)]
            text = content if type(content) is str else text_of(content)
            if waiting and text is not None:
                step = waiting[-1]
                step.observation = text if step.observation is None else f"{step.observation}\n{text}"
        elif role == "tool" or role == "function":
            content = message.get("content")
            text = content if type(content) is str else text_of(content)
            call_id = message.get("tool_call_id")
            step = by_call.get(call_id if type(call_id) is str else str(call_id)) or (waiting[-1] if waiting else None)
            if step is not None and text is not None:
                step.observation = text if step.observation is None else f"{step.observation}\n{text}"
    return turns


def _assistant_steps(message: Mapping[str, Any], by_call: dict[str, LoggedStep]) -> list[LoggedStep]:
    content = message.get("content")
    if type(content) is str and "reasoning_content" not in message and "reasoning" not in message:
        text, reasoning = content, None   # the common case, decided at once
    else:
        text, reasoning = visible_text(content), reasoning_of(message)
    if text is None:
        text = spoken_answer(message)
    usage = message.get("usage")
    tokens_in, tokens_out = usage_of(message) if usage is not None else (None, None)
    calls = message.get("tool_calls")
    if not calls and type(message.get("function_call")) is dict:   # the API's one call before tool_calls
        calls = [message["function_call"]]
    if not calls and type(content) is list:   # Anthropic's calls: `tool_use` content parts
        calls = [part for part in content if isinstance(part, dict) and part.get("type") == "tool_use"]
    if type(calls) is list:
        calls = [c for c in calls if isinstance(c, dict)]
    if not calls or type(calls) is not list:
        think, answer = split_think(text)   # an inline <think> block is reasoning; the action is read after it
        if think is None:
            return [LoggedStep(text=text, reasoning=reasoning, tokens_in=tokens_in, tokens_out=tokens_out)]
        return [LoggedStep(text=answer, raw=text, reasoning="\n".join(t for t in (reasoning, think) if t),
                           tokens_in=tokens_in, tokens_out=tokens_out)]
    steps = []
    thought = "\n".join(t for t in (reasoning, text) if t) or None
    for i, call in enumerate(calls):
        name, arguments, call_id = call_parts(call)
        step = LoggedStep(call=(name, arguments), reasoning=thought if i == 0 else None,
                          tokens_in=tokens_in if i == 0 else None, tokens_out=tokens_out if i == 0 else None)
        if call_id is not None:
            by_call[str(call_id)] = step
        steps.append(step)
    return steps


# -- the fast path: messages of the common shape, typed by msgspec ------------------------------------------------
# A message that fits these types exactly (unknown fields refused) needs none of the checks chat_turns makes on a
# message of any shape: content is text or null, no reasoning fields, calls in the chat-completions shape with
# JSON-string arguments, non-negative integer token counts. Anything else fails msgspec.convert, and its record
# takes the exact path. The types nest six levels at most, so a record of such messages and scalars is never too
# deep. They hold no `Any`, so no instance can be part of a reference cycle: gc=False spares the garbage collector
# tracking them.

class ChatFunction(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    name: Annotated[str, msgspec.Meta(min_length=1)]   # (an empty one: the exact path refuses it)
    arguments: str


class ChatCall(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    function: ChatFunction
    id: str | None = None
    type: str | None = None


# a count that count_problem accepts as it is; any other (negative, above the schema's bound) leaves its record to
# the exact path, which refuses it
TokenCount = Annotated[int, msgspec.Meta(ge=0, le=int(usage_bound("tokens_in")))]


class ChatUsage(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    total_tokens: int | None = None


class ChatMessage(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    role: str
    content: str | None = None
    tool_calls: list[ChatCall] | None = None
    tool_call_id: str | None = None
    usage: ChatUsage | None = None
    model: str | None = None
    name: str | None = None
    refusal: str | None = None


def typed_chat_documents(messages: list[ChatMessage], reader: ActionReader) -> tuple[list[dict[str, Any]], int]:
    """What convert makes of `chat_steps(messages)` (see convert.step_documents), in one pass for messages of the
    common shape: the same step documents and count of unreadable actions, without a LoggedStep per step or the
    checks the types make unnecessary (a property test holds the two paths to the same output).

    Each step's document is made when its message is read; a `tool` message may still add the observation to any
    earlier call, so the token counts, which come after the observation in a step document, are added last."""
    from_text, from_call = reader.from_text, reader.from_call
    documents: list[dict[str, Any]] = []
    counted: list[tuple[dict[str, Any], int | None, int | None]] = []   # steps with token counts, added at the end
    by_call: dict[str, dict[str, Any]] = {}
    waiting: list[dict[str, Any]] = []   # the steps of the last assistant message (as in chat_turns)
    unreadable = 0
    for message in messages:
        role = message.role
        if role == "assistant":
            text, usage, calls = message.content, message.usage, message.tool_calls
            if text is None and message.refusal:   # (as spoken_answer: an audio answer takes the exact path)
                text = message.refusal
            if not calls:
                think, answer = split_think(text)   # (as in _assistant_steps)
                action = from_text(answer)
                document = {"action": action} if text is None else {"action": action, "raw": text}
                if think is not None:
                    document["reasoning"] = think
                unreadable += action is None
                documents.append(document)
                waiting = [document]
            else:
                waiting = []
                for call in calls:
                    name, arguments = call.function.name, call.function.arguments
                    action = from_call(name, arguments)
                    unreadable += action is None
                    document = {"action": action, "raw": render_call(name, arguments, verbatim=True)}
                    if not waiting and text:   # the first call carries what the assistant wrote beside the calls
                        document["reasoning"] = text
                    if call.id is not None:
                        by_call[call.id] = document
                    waiting.append(document)
                documents.extend(waiting)
            if usage is not None and (usage.prompt_tokens is not None or usage.completion_tokens is not None):
                counted.append((waiting[0], usage.prompt_tokens, usage.completion_tokens))
        elif role == "user":
            text = message.content
            if waiting and text is not None:
                seen = waiting[-1].get("observation")
                waiting[-1]["observation"] = text if seen is None else f"{seen}\n{text}"
        elif role == "tool" or role == "function":
            text = message.content
            document = by_call.get(str(message.tool_call_id)) or (waiting[-1] if waiting else None)
            if document is not None and text is not None:
                seen = document.get("observation")
                document["observation"] = text if seen is None else f"{seen}\n{text}"
    for document, tokens_in, tokens_out in counted:
        if tokens_in is not None:
            document["tokens_in"] = tokens_in
        if tokens_out is not None:
            document["tokens_out"] = tokens_out
    return documents, unreadable


_THINK = re.compile(r"^\s*<(think|thinking)>(.*?)</\1>\s*", re.S)


def split_think(text: str | None) -> tuple[str | None, str | None]:
    """(reasoning, answer) of an output that opens with an inline `<think>…</think>` block, else (None, text)."""
    match = _THINK.match(text) if text else None
    if match is None:
        return None, text
    return match.group(2).strip() or None, text[match.end():]


@dataclass
class ModelTurn:
    """A model call as a trace records it (an OTel span, a LangSmith run): what it answered and what it cost."""

    text: str | None
    calls: list[tuple[str, Any]] = field(default_factory=list)   # (tool name, arguments) it asked for
    reasoning: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    latency_ms: float | None = None
    timestamp: str | None = None


@dataclass
class ToolRun:
    """A tool execution as a trace records it, apart from the model call that asked for it."""

    name: str
    arguments: Any
    observation: str | None
    timestamp: str | None = None


def traced_steps(records: Iterable[ModelTurn | ToolRun]) -> list[LoggedStep]:
    """The steps of a trace whose model calls and tool executions are separate records, in time order.

    A tool run is a step, credited with the model call that asked for it (its tokens, latency, reasoning and
    the text it wrote beside the call). A model call that answered in text is a step, unless a tool run follows
    it: then its text named that run (a ReAct agent's `Action: Search`, run by the framework), and the run is
    the step, credited with it and its text as reasoning. Calls a model asked for that no tool run followed are
    steps too, without observation: the agent still chose them.
    """
    steps: list[LoggedStep] = []
    waiting: ModelTurn | None = None        # the last model call that asked for tools
    not_run: list[tuple[str, Any]] = []     # its calls no tool run has answered yet
    credited = False                        # whether one of its steps carries its tokens and reasoning
    spoken: ModelTurn | None = None         # the last model call, when it answered in text: held for a tool run

    def credit(step: LoggedStep, turn: ModelTurn) -> LoggedStep:
        step.tokens_in, step.tokens_out, step.latency_ms = turn.tokens_in, turn.tokens_out, turn.latency_ms
        step.reasoning = "\n".join(t for t in (turn.reasoning, turn.text if turn.calls else None) if t) or None
        return step

    def flush() -> None:
        """The calls of the waiting model call that never ran, as steps of their own."""
        if waiting is None:
            return
        made = [LoggedStep(call=call, timestamp=waiting.timestamp) for call in not_run]
        if made and not credited:
            credit(made[0], waiting)
        steps.extend(made)

    def say() -> None:
        """The held text answer, as a step of its own (no tool run followed it)."""
        if spoken is not None:
            steps.append(credit(LoggedStep(text=spoken.text, timestamp=spoken.timestamp), spoken))

    for record in records:
        if isinstance(record, ModelTurn):
            say()
            flush()
            waiting, not_run, credited = (record, list(record.calls), False) if record.calls else (None, [], False)
            spoken = None if record.calls else record
        else:
            step = LoggedStep(call=(record.name, record.arguments), observation=record.observation,
                              timestamp=record.timestamp)
            if spoken is not None:
                credit(step, spoken).reasoning = "\n".join(t for t in (spoken.reasoning, spoken.text) if t) or None
                spoken = None
            elif waiting is not None:
                if not credited:
                    credit(step, waiting)
                    credited = True
                ran = next((i for i, (name, _) in enumerate(not_run) if name == record.name), None)
                if ran is not None:
                    del not_run[ran]
            steps.append(step)
    say()
    flush()
    return steps

"""`openai-responses`: OpenAI Responses-API rollouts (NeMo Gym JSONL), one rollout per record.

A record is a rollout `{responses_create_params, response, reward, ...}` or a bare Response object. The steps are
the items of `response.output`: each assistant `message` (a text action such as `<action>Down</action>`) and each
tool call (`function_call` and the other `*_call` items); a `reasoning` item's summary is the reasoning of the
step after it; the observation is the `*_call_output` answering a call, or the `user` message that follows (the
next board, in multi-turn environments). The API reports token usage for the whole response (the totals go to the
trajectory's meta); NeMo Gym's training rollouts also keep each item's `prompt_token_ids` and
`generation_token_ids`, which give a step's tokens: in, the prompt of the turn's first item; out, what the turn's
items generated (its reasoning and the step's own item), where each item's prompt is the one before it and its
generation (one generation cut into items), else the step's own item's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from eebench.adapters.base import (Adapter, Episode, as_int, as_label, count_problem, dig, iso_utc, listed,
                                   scalars, text_of)
from eebench.adapters.chat import chat_steps, refusals_as_text
from eebench.adapters.records import JsonRecord, bad_item, json_records
from eebench.documents import json_type
from eebench.errors import InputError

ROLLOUT_MARKER = b'"responses_create_params"'
_RESPONSE_OBJECT = (b'"object": "response"', b'"object":"response"')


class OpenAIResponsesAdapter(Adapter):
    name = "openai-responses"
    summary = ("OpenAI Responses-API rollouts (NeMo Gym JSONL: responses_create_params + response), or bare "
               "Response objects; message, function_call and reasoning items")
    example = "eebench convert example_rollouts.jsonl --from openai-responses --out runs.jsonl"
    suffixes = (".jsonl", ".json")
    # the API times only the response, never its items (tokens: per item in NeMo Gym's training rollouts)
    never_carries = frozenset({"latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        return path.suffix.lower() in self.suffixes and (
            ROLLOUT_MARKER in head or (any(m in head for m in _RESPONSE_OBJECT) and b'"output"' in head))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        for item in json_records(path):
            yield item if isinstance(item, InputError) else self._episode(path, item)

    def _episode(self, path: Path, item: JsonRecord) -> Episode | InputError:
        bad = functools.partial(bad_item, path, item)
        record = item.value
        if not isinstance(record, Mapping):
            return bad(f"expected a rollout object with a `response`, found {json_type(record)}")
        if "response" not in record and "output" not in record:   # e.g. a chat log in a file of rollouts
            return bad(f"expected a rollout with a `response` or a Response with `output`, found an object with "
                       f"{', '.join(sorted(map(str, record))[:6]) or 'no keys'}")
        response = record.get("response", record)
        if not isinstance(response, Mapping):
            return bad(f"expected a Responses-API object, found {json_type(response)}", "response")
        output = response.get("output")
        if not isinstance(output, list):
            return bad(f"expected a list of output items, found {json_type(output)}", "response.output")
        wrong = next((i for i, o in enumerate(output) if not isinstance(o, Mapping)), None)
        if wrong is not None:
            return bad(f"expected an output item object, found {json_type(output[wrong])}",
                       f"response.output[{wrong}]")
        for i, o in enumerate(output):   # (what names a call or a kind of item: a repr would name it)
            for name in ("type", "name", "role"):
                if o.get(name) is not None and not isinstance(o[name], str):
                    return bad(f"expected a string, found {json_type(o[name])}", f"response.output[{i}].{name}")
            if o.get("type", "message") == "message" and not isinstance(o.get("content"), (str, list, type(None))):
                return bad(f"expected a string, a list of parts or null, found {json_type(o['content'])}",
                           f"response.output[{i}].content")   # (a message of another content was no step)
            # the texts a step is made of (a number there was dropped, the step left without its text)
            for key, field in (("summary", "text"), ("content", "text"), ("content", "refusal")):
                for j, part in enumerate(o[key] if isinstance(o.get(key), list) else ()):
                    if isinstance(part, Mapping) and not isinstance(part.get(field), (str, type(None))):
                        return bad(f"expected a string, found {json_type(part[field])}",
                                   f"response.output[{i}].{key}[{j}].{field}")
        usage = response.get("usage")
        for key in _USAGE_TOTALS.values() if isinstance(usage, Mapping) else ():
            problem = count_problem(dig(usage, key))
            if problem is not None:   # (a count of another type was no total, silently)
                return bad(problem, ("response." if "response" in record else "") + f"usage.{key}")
        task = record.get("_ng_task_index")
        if task is not None and as_label(task) is None:   # (it names the instance: it was dropped unread)
            return bad(f"expected a string or an integer, found {json_type(task)}", "_ng_task_index")
        task = as_label(task)
        if task is not None:   # NeMo Gym numbers tasks and rollouts within the file
            rollout = as_label(record.get("_ng_rollout_index"))
            if rollout is None:
                return bad(f"expected the rollout's number beside _ng_task_index (a string or an integer), found "
                           f"{json_type(record.get('_ng_rollout_index'))}", "_ng_rollout_index")
            record_id: str | int = f"task-{task}/rollout-{rollout}"
            episode_id = f"{path.stem}/{record_id}"
        elif isinstance(response.get("id"), str):
            record_id = episode_id = response["id"]   # the API's response ids are globally unique
        else:
            record_id, episode_id = item.index, f"{path.stem}/{item.index}"
        model = response.get("model") or dig(record, "responses_create_params.model")
        agent_name = dig(record, "agent_ref.name")
        return Episode(id=episode_id, record=record_id, line=item.line, steps=chat_steps(chat_messages(output)),
                       task=task, fields=record,
                       agent={"model": model if isinstance(model, str) else None,
                              "name": agent_name if isinstance(agent_name, str) else None},
                       meta=_meta(record, response))


def chat_messages(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Responses-API items as chat-completions messages, so the shared chat reader makes the steps.

    Calls made together (no other item between them) become one assistant message, as parallel tool calls are;
    an assistant message right before them is the same model turn: its text goes with them, as a chat message's
    content beside its tool calls does.
    """
    messages: list[dict[str, Any]] = []
    reasoning: list[str] = []
    thought: list[Mapping[str, Any]] = []   # the reasoning items not yet given to a step
    made_of: dict[int, list[Mapping[str, Any]]] = {}   # by assistant message (its id()): the items it was made of
    for item in items:
        kind = str(item.get("type") or ("message" if "role" in item else ""))
        if kind == "reasoning":
            parts = [s.get("text") for s in listed(item.get("summary")) if isinstance(s, Mapping)]
            parts.append(text_of(item.get("content")))   # open models' reasoning_text parts
            reasoning.extend(p for p in parts if isinstance(p, str) and p)
            thought.append(item)
            continue
        if kind.endswith("_call_output"):
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))})
        elif kind.endswith("_call"):
            call = {"id": item.get("call_id") or item.get("id"),
                    "function": {"name": item.get("name") or kind,
                                 "arguments": next((item[k] for k in ("arguments", "input", "action")
                                                    if item.get(k) is not None), None)}}
            if not reasoning and messages and messages[-1]["role"] == "assistant":   # the same model turn
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            made_of.setdefault(id(messages[-1]), []).extend([*thought, item])
            thought.clear()
            _take_reasoning(messages[-1], reasoning)
            if item.get("output") is not None:   # mcp_call and hosted tools carry their own output
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": _text(item["output"])})
        elif kind == "message":
            message = {"role": item.get("role"), "content": refusals_as_text(item.get("content"))}
            if message["role"] == "assistant":
                _take_reasoning(message, reasoning)
                made_of[id(message)] = [*thought, item]
                thought.clear()
            messages.append(message)
    if reasoning:   # the model's last output was reasoning alone (cut off): a step of its own, with no action
        messages.append({"role": "assistant", "content": None, "reasoning_content": "\n".join(reasoning)})
        made_of[id(messages[-1])] = thought
    for message in messages:
        counts = _token_counts(made_of.get(id(message), ()))
        if counts is not None:   # (read by the chat rules as a completion's usage: on the turn's first step)
            message["usage"] = {"prompt_tokens": counts[0], "completion_tokens": counts[1]}
    return messages


def _token_counts(items: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """(tokens in, tokens out) of the items a step was made of, from the token ids NeMo Gym's training rollouts
    keep on each (see the module's text); None when they keep none."""
    spans = [(len(prompt), len(generated)) for item in items
             if isinstance(prompt := item.get("prompt_token_ids"), list)
             and isinstance(generated := item.get("generation_token_ids"), list)]
    if not spans:
        return None
    if all(before[0] + before[1] == after[0] for before, after in zip(spans, spans[1:])):   # one generation, cut
        return spans[0][0], sum(generated for _, generated in spans)
    return spans[-1]


def _text(value: Any) -> str | None:
    """A tool output as text: a string, content parts' text, or other JSON written out."""
    if value is None or isinstance(value, str):
        return value
    return text_of(value) or json.dumps(value, ensure_ascii=False)


def _take_reasoning(message: dict[str, Any], reasoning: list[str]) -> None:
    if reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
        reasoning.clear()


def _meta(record: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    meta = scalars({k: v for k, v in record.items() if k not in ("response", "responses_create_params")})
    info = record.get("info")
    if isinstance(info, Mapping):
        meta.update({f"info.{k}": v for k, v in scalars(info).items()})
    for key in ("id", "status"):
        if isinstance(response.get(key), str):
            meta[f"response_{key}"] = response[key]
    for key in ("created_at", "completed_at"):
        # the API's only clock: epoch seconds for the whole response
        if (moment := iso_utc(response.get(key))) is not None:
            meta[key] = moment
    usage = response.get("usage")
    if isinstance(usage, Mapping):   # (its counts were checked by count_problem)
        meta.update({k: n for k, key in _USAGE_TOTALS.items() if (n := as_int(dig(usage, key))) is not None})
    return meta


# the response's token totals: meta field, and where in `usage`
_USAGE_TOTALS = {"tokens_in_total": "input_tokens", "tokens_out_total": "output_tokens",
                 "reasoning_tokens_total": "output_tokens_details.reasoning_tokens",
                 "cached_tokens_total": "input_tokens_details.cached_tokens"}

"""`langsmith`: LangSmith runs: ingest payloads `{post, patch}`, run exports (a JSON list or JSON Lines of runs,
flat or nested in `child_runs`); one trajectory per trace.

Runs are ordered by `dotted_order`. A `tool` (or `retriever`) run is a step: its name and inputs are the action,
its outputs the observation. An `llm` run is a model turn with its usage: it credits the tool step it asked for,
or, when it answered in text, is a step itself (a single llm run is a one-step trajectory). Chains are containers.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, as_int, count_problem, dig, listed, ms_between, text_of
from eebench.adapters.chat import (ModelTurn, ToolRun, call_parts, message_problem, reasoning_of, traced_steps,
                                   visible_text)
from eebench.adapters.records import JsonRecord, bad_item, grouped_records
from eebench.documents import json_type
from eebench.errors import InputError

TOOL_RUNS = ("tool", "retriever")
# A run's first fields, written before its inputs and outputs (which may fill the head: a long message history);
# `trace_id` and `dotted_order` come after them
_RUN_OPENING = re.compile(rb'"start_time"\s*:\s*"[^"]*"\s*,\s*"run_type"\s*:\s*'
                          rb'"(?:llm|chain|tool|retriever|embedding|prompt|parser)"')


class LangSmithAdapter(Adapter):
    name = "langsmith"
    summary = ("LangSmith runs: ingest payloads {post, patch} or run exports (JSON list / JSON Lines, child_runs "
               "nested or flat); tool runs are actions, llm runs model turns with usage; one trajectory per trace")
    example = "eebench convert langsmith-export.jsonl --from langsmith --out runs.jsonl"
    suffixes = (".json", ".jsonl")
    never_carries = frozenset()

    def handles(self, path: Path, head: bytes) -> bool:
        return path.suffix.lower() in self.suffixes and (
            b'"dotted_order"' in head or (b'"run_type"' in head and b'"trace_id"' in head)
            or _RUN_OPENING.search(head) is not None)

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        for group in grouped_records(path, _trace_of_record):
            if isinstance(group, InputError):
                yield group
                continue
            runs = _runs(path, group)
            if isinstance(runs, InputError):
                yield runs
                continue
            by_trace: dict[str, list[Mapping[str, Any]]] = {}
            for run in runs:
                by_trace.setdefault(str(run.get("trace_id") or run.get("id")), []).append(run)
            for trace, members in by_trace.items():
                yield _episode(group[-1], trace, members)


def _trace_of_record(value: Any) -> str | None:
    """The trace a flat exported run belongs to; None for payloads and run trees, which come whole."""
    if not isinstance(value, Mapping) or "post" in value or "patch" in value or value.get("child_runs"):
        return None
    trace = value.get("trace_id") or (value.get("id") if not value.get("parent_run_id") else None)
    return trace if isinstance(trace, str) and trace else None


def _runs(path: Path, group: list[JsonRecord]) -> list[Mapping[str, Any]] | InputError:
    """The runs of some records, payload updates merged into the runs they complete, trees flattened."""
    runs: dict[str, dict[str, Any]] = {}
    origins: dict[str, dict[str, tuple[JsonRecord, str]]] = {}   # run id -> field -> the record and run that set it
    for item in group:
        bad = functools.partial(bad_item, path, item)
        value = item.value
        if not isinstance(value, Mapping):
            return bad(f"expected a LangSmith run or a {{post, patch}} payload, found {json_type(value)}")
        if "post" in value or "patch" in value:
            parts = [(key, value.get(key) or []) for key in ("post", "patch")]
        else:
            parts = [("", [value])]
        for key, given in parts:
            if not isinstance(given, list):
                return bad(f"expected a list of runs, found {json_type(given)}", key)
            for i, run in enumerate(given):
                where = f"{key}[{i}]" if key else None
                if not isinstance(run, Mapping):
                    return bad(f"expected a run object, found {json_type(run)}", where)
                for member, at in _flattened(run, where or "run"):
                    if not isinstance(member.get("id"), str):
                        return bad(f"expected a run `id` string, found {json_type(member.get('id'))}", at)
                    # (they name the trajectory, the tool and the instance: a repr would, or it was dropped unread)
                    for name in ("trace_id", "name", "reference_example_id"):
                        if member.get(name) is not None and not isinstance(member[name], str):
                            return bad(f"expected a string, found {json_type(member[name])}", f"{at}.{name}")
                    merged = runs.setdefault(member["id"], {})
                    # a patch completes its post: later non-null fields win (end_time, outputs, error)
                    merged.update({k: v for k, v in member.items() if v is not None and k != "child_runs"})
                    origins.setdefault(member["id"], {}).update(
                        {k: (item, at) for k, v in member.items() if v is not None})
    for run_id, run in runs.items():   # what a model turn reads, checked where the record set it
        if run.get("run_type") != "llm":
            continue
        at, message = _message(run.get("outputs") if isinstance(run.get("outputs"), Mapping) else {})
        shape = message_problem(message)
        if shape is not None:   # (a content of another type was a step with no text; a call named by a list, its repr)
            item, where = origins[run_id]["outputs"]
            return bad_item(path, item, shape[1], f"{where}.{at}.{shape[0]}")
        for name, value in _counts(run):
            problem = count_problem(value)
            if problem is not None:   # (a count of another type was no count, silently)
                item, at = origins[run_id][name.split(".", 1)[0]]
                return bad_item(path, item, problem, f"{at}.{name}")
    return sorted(runs.values(), key=lambda r: str(r.get("dotted_order") or r.get("start_time") or ""))


def _flattened(run: Mapping[str, Any], where: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    yield run, where
    children = run.get("child_runs")
    for i, child in enumerate(children if isinstance(children, list) else []):
        if isinstance(child, Mapping):
            yield from _flattened({**child, "trace_id": child.get("trace_id") or run.get("trace_id") or run.get("id")},
                                  f"{where}.child_runs[{i}]")


# where an llm run's outputs hold its message: OpenAI wrappers log the completion, LangChain generations of
# serialized messages ('' is the outputs themselves)
_MESSAGE_AT = ("choices[0].message", "generations[0][0].message.kwargs", "generations[0][0].message", "output", "")


def _message(outputs: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The message an llm run answered with, and where in its outputs (`outputs.choices[0].message`)."""
    for at in _MESSAGE_AT:
        message = dig(outputs, at)
        if isinstance(message, Mapping) and ("content" in message or "tool_calls" in message):
            return f"outputs.{at}".rstrip("."), message
    return "outputs", {}


def _counts(run: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(field, value) of the token counts of an llm run: tokens in, tokens out, reasoning tokens."""
    outputs = run.get("outputs") if isinstance(run.get("outputs"), Mapping) else {}
    at, message = _message(outputs)
    places = (("outputs.usage_metadata", outputs.get("usage_metadata")),
              (f"{at}.usage_metadata", message.get("usage_metadata")), ("outputs.usage", outputs.get("usage")),
              ("outputs.llm_output.token_usage", dig(outputs, "llm_output.token_usage")))
    at, usage = next(((where, u) for where, u in places if isinstance(u, Mapping)), ("", {}))
    counts = []
    for names in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        name = next((n for n in names if n in usage), None)
        counts.append((f"{at}.{name}", usage[name]) if name is not None else (names[1], run.get(names[1])))
    reasoning = "outputs.usage_metadata.output_token_details.reasoning"
    return [*counts, (reasoning, dig(run, reasoning))]


def _model_turn(run: Mapping[str, Any]) -> ModelTurn:
    outputs = run.get("outputs") if isinstance(run.get("outputs"), Mapping) else {}
    _, message = _message(outputs)
    text = visible_text(message.get("content"))
    if text is None and isinstance(dig(outputs, "generations.0.0.text"), str):
        text = dig(outputs, "generations.0.0.text")
    calls = []
    for call in listed(message.get("tool_calls")):
        if isinstance(call, Mapping):
            name, arguments, _ = call_parts(call)
            calls.append((name, arguments if arguments is not None else call.get("args")))
    (_, tokens_in), (_, tokens_out), _ = _counts(run)   # (checked by count_problem as the runs were read)
    extra = message.get("additional_kwargs")   # LangChain keeps providers' reasoning_content there
    reasoning = reasoning_of(message) or (reasoning_of(extra) if isinstance(extra, Mapping) else None)
    return ModelTurn(text, calls, reasoning,
                     as_int(tokens_in), as_int(tokens_out), ms_between(run.get("start_time"), run.get("end_time")),
                     _time(run.get("start_time")))


def _tool_run(run: Mapping[str, Any]) -> ToolRun:
    inputs = run.get("inputs")
    arguments = inputs.get("input") if isinstance(inputs, Mapping) and set(inputs) == {"input"} else inputs
    outputs = run.get("outputs")
    output = outputs.get("output", outputs) if isinstance(outputs, Mapping) else outputs
    if isinstance(output, Mapping) and output.get("lc") == 1 and isinstance(output.get("kwargs"), Mapping):
        output = output["kwargs"].get("content")   # a serialized LangChain message (LangGraph's ToolMessage): its text
    observation = output if isinstance(output, str) else (
        text_of(output) or (json.dumps(output, ensure_ascii=False) if output not in (None, {}) else None))
    if isinstance(run.get("error"), str):
        observation = f"{observation}\n{run['error']}" if observation else run["error"]
    return ToolRun(str(run.get("name") or ""), _python_literal(arguments), observation, _time(run.get("start_time")))


def _python_literal(arguments: Any) -> Any:
    """A tool's input as LangChain traces it, `str()` of the arguments (`"{'query': 'sf'}"`), read back into the
    mapping it was, so the call reads as the model's (`search({"query": "sf"})`); anything else as given."""
    if not (isinstance(arguments, str) and arguments.startswith("{'")):
        return arguments
    try:
        value = ast.literal_eval(arguments)   # (literals only: no name is looked up, nothing is called)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return arguments
    return value if isinstance(value, dict) else arguments


def _time(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _episode(item: JsonRecord, trace: str, runs: list[Mapping[str, Any]]) -> Episode:
    root = next((r for r in runs if not r.get("parent_run_id")), runs[0])
    steps = traced_steps(_model_turn(r) if r.get("run_type") == "llm" else _tool_run(r) for r in runs
                         if r.get("run_type") == "llm" or r.get("run_type") in TOOL_RUNS)
    llm_runs = [r for r in runs if r.get("run_type") == "llm"]
    model = next((m for r in llm_runs for m in (dig(r, "outputs.model"), dig(r, "extra.metadata.ls_model_name"),
                                                dig(r, "extra.invocation_params.model")) if isinstance(m, str)), None)
    reasoning = [as_int(dig(r, "outputs.usage_metadata.output_token_details.reasoning")) for r in llm_runs]
    meta = {"trace_id": trace, "root_run_type": root.get("run_type"), "root_name": root.get("name"),
            "status": root.get("status"), "error": root.get("error"), "session_name": root.get("session_name"),
            "start_time": root.get("start_time"), "end_time": root.get("end_time")}
    meta = {k: v for k, v in meta.items() if isinstance(v, str)}
    if any(r is not None for r in reasoning):
        meta["reasoning_tokens_total"] = sum(r for r in reasoning if r is not None)
    task = root.get("reference_example_id")   # the dataset example, when the trace is an evaluation run
    return Episode(id=trace, record=trace, line=item.line, steps=steps,
                   task=task if isinstance(task, str) else None, fields=root,
                   agent={"name": root.get("name") if isinstance(root.get("name"), str) else None, "model": model},
                   meta=meta)

"""`atif`: Harbor's Agent Trajectory Interchange Format (ATIF-v1.x `*.trajectory.json`), one trajectory per document.

Each `agent` step is one step per tool call (or one text step when it made none, e.g. a reply the harness could
not parse): `tool_calls[].function_name` + `arguments`, the observation from `observation.results[]` (joined by
`source_call_id`), the reasoning from `reasoning_content` and the message beside the calls, tokens from `metrics`
and time from `timestamp`. `system` and `user` steps are the prompt, not actions. ATIF has no latency field.
A step marked `is_copied_context` (v1.5: copied from an earlier trajectory that this one continues) is no action of
this trajectory: left out, and counted in meta (`copied_context_steps`). A subagent's trajectory embedded in its
parent's (`subagent_trajectories`, v1.7) is a trajectory of its own, `<parent's id>/<its session id>` (or
`subagent-<i>`), after the parent's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, as_int, count_problem, scalars, text_of
from eebench.adapters.records import JsonRecord, bad_item, json_records
from eebench.documents import json_type
from eebench.errors import InputError, quoted

_SCHEMA = re.compile(rb'"schema_version"\s*:\s*"ATIF-')


class AtifAdapter(Adapter):
    name = "atif"
    summary = ("Harbor / Terminal-Bench Agent Trajectory Interchange Format (ATIF-v1.x trajectory.json): agent "
               "steps with tool_calls, observation.results and per-step metrics")
    example = "eebench convert trial/agent/trajectory.json --from atif --out runs.jsonl"
    suffixes = (".json", ".jsonl")
    never_carries = frozenset({"latency_ms"})

    def handles(self, path: Path, head: bytes) -> bool:
        return path.suffix.lower() in self.suffixes and _SCHEMA.search(head) is not None

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        for item in json_records(path):
            if isinstance(item, InputError):
                yield item
                continue
            yield from self._episodes(path, item, item.value, "")

    def _episodes(self, path: Path, item: JsonRecord, doc: Any, at: str) -> Iterator[Episode | InputError]:
        """The trajectory of `doc` (found at `at` in the record) and those of its subagents; an InputError ends them."""
        episode = self._episode(path, item, doc, at)
        yield episode
        subagents = doc.get("subagent_trajectories") if isinstance(episode, Episode) else None
        if subagents is not None and not isinstance(subagents, list):
            yield bad_item(path, item, f"expected a list of trajectories, found {json_type(subagents)}",
                           f"{at}subagent_trajectories")
            return
        for i, subagent in enumerate(subagents or []):
            if isinstance(subagent, Mapping) and "schema_version" not in subagent:   # (the parent's, if it gives none)
                subagent = {**subagent, "schema_version": doc["schema_version"]}
            for made in self._episodes(path, item, subagent, f"{at}subagent_trajectories[{i}]."):
                if isinstance(made, Episode) and "parent_session_id" not in made.meta:
                    made.meta["parent_session_id"] = episode.meta.get("session_id")
                    # under its parent's id: ids stay apart when session ids repeat (golden files normalise them)
                    own = made.meta.get("session_id") or f"subagent-{i}"
                    made.id = f"{episode.id}/{own}"
                yield made
                if isinstance(made, InputError):
                    return

    def _episode(self, path: Path, item: JsonRecord, doc: Any, at: str) -> Episode | InputError:
        def bad(message: str, field: str | None = None) -> InputError:
            return bad_item(path, item, message, at + (field or "") or None)

        if not isinstance(doc, Mapping):
            return bad(f"expected an ATIF trajectory object, found {json_type(doc)}")
        version = doc.get("schema_version")
        if not (isinstance(version, str) and version.startswith("ATIF-")):
            return bad(f"expected an ATIF schema_version such as 'ATIF-v1.5', found {quoted(version)}",
                       "schema_version")
        raw_steps = doc.get("steps")
        if not isinstance(raw_steps, list):
            return bad(f"expected a list of steps, found {json_type(raw_steps)}", "steps")
        steps: list[LoggedStep] = []
        copied = 0
        for i, step in enumerate(raw_steps):
            if not isinstance(step, Mapping):
                return bad(f"expected a step object, found {json_type(step)}", f"steps[{i}]")
            if not isinstance(step.get("source"), str):   # (a number there would drop the step unread)
                return bad(f"expected the step's source (system, user or agent), found {json_type(step.get('source'))}",
                           f"steps[{i}].source")
            if step["source"] != "agent":
                continue
            if step.get("is_copied_context") is True:
                copied += 1
                continue
            made = _agent_steps(step)
            if isinstance(made, str):
                return bad(made, f"steps[{i}]")
            if isinstance(made, tuple):   # (a field of the step, what was expected and found)
                return bad(made[1], f"steps[{i}].{made[0]}")
            steps.extend(made)
        final = doc.get("final_metrics") if isinstance(doc.get("final_metrics"), Mapping) else {}
        for key in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens"):
            problem = count_problem(final.get(key))   # (a total of another type was copied into meta as it was)
            if problem is not None:
                return bad(problem, f"final_metrics.{key}")
        agent = doc.get("agent") if isinstance(doc.get("agent"), Mapping) else {}
        model = agent.get("model_name") or next((s.get("model_name") for s in raw_steps
                                                 if isinstance(s.get("model_name"), str)), None)
        session = doc.get("session_id")
        # session ids are meant to be unique, but Harbor's own golden files normalise them: the stem keeps ids apart
        record_id = session if isinstance(session, str) and session else item.index
        meta = _meta(doc, agent)
        if copied:
            meta["copied_context_steps"] = copied
        return Episode(id=f"{path.stem}/{record_id}", record=record_id, line=item.line, steps=steps, fields=doc,
                       agent={"name": agent.get("name") if isinstance(agent.get("name"), str) else None,
                              "model": model if isinstance(model, str) else None},
                       meta=meta)


def _agent_steps(step: Mapping[str, Any]) -> list[LoggedStep] | str | tuple[str, str]:
    """The steps of one ATIF agent step, or what is wrong with it (with the field, when one is named apart)."""
    calls = step.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
        return f"expected tool_calls to be a list of objects, found {json_type(calls)}"
    wrong = next((c for c in calls if not isinstance(c.get("function_name"), str)), None)
    if wrong is not None:   # (a list or a boolean there was written as its Python repr)
        return f"expected each tool call's function_name to be a string, found {json_type(wrong.get('function_name'))}"
    # ids join results to calls: a list or an object there ended in a TypeError (unhashable) while joining
    wrong = next((c for c in calls if not isinstance(c.get("tool_call_id"), (str, type(None)))), None)
    if wrong is not None:
        return f"expected each tool call's tool_call_id to be a string, found {json_type(wrong.get('tool_call_id'))}"
    # (each was dropped unread when of another type: the step lost its text, reasoning or observation)
    for name, kinds, expected in (("message", (str, list), "a string or a list of parts"),
                                  ("reasoning_content", (str,), "a string"), ("observation", (Mapping,), "an object"),
                                  ("metrics", (Mapping,), "an object"), ("timestamp", (str,), "a string")):
        if step.get(name) is not None and not isinstance(step[name], kinds):
            return f"expected {name} to be {expected}, found {json_type(step[name])}"
    observation = step.get("observation") or {}
    results = observation.get("results")
    if results is not None and not isinstance(results, list):
        return f"expected observation.results to be a list, found {json_type(results)}"
    for result in results or []:
        if not isinstance(result, Mapping) or not isinstance(result.get("content"), (str, list, type(None))):
            found = json_type(result.get("content")) if isinstance(result, Mapping) else json_type(result)
            return f"expected observation.results to be objects with a text content, found {found}"
        if not isinstance(result.get("source_call_id"), (str, type(None))):
            return ("expected observation.results' source_call_id to be a string, found "
                    f"{json_type(result.get('source_call_id'))}")
    results = results or []
    message = text_of(step.get("message"))
    reasoning = step.get("reasoning_content") if isinstance(step.get("reasoning_content"), str) else None
    metrics = step.get("metrics") if isinstance(step.get("metrics"), Mapping) else {}
    for key in ("prompt_tokens", "completion_tokens"):   # (a count given as text would be dropped unread)
        problem = count_problem(metrics.get(key))
        if problem is not None:
            return f"metrics.{key}", problem
    timestamp = step.get("timestamp") if isinstance(step.get("timestamp"), str) else None
    if not calls:
        made = [LoggedStep(text=message, reasoning=reasoning, observation=_joined(results))]
    else:
        thought = "\n".join(t for t in (reasoning, message) if t) or None
        # results that name no call of the step (no source_call_id: Harbor's terminus-2 writes one result for the
        # commands of a step) are what the agent saw after the last call ran: they are its observation
        ids = {call.get("tool_call_id") for call in calls}
        shared = [r for r in results if r.get("source_call_id") is None or r.get("source_call_id") not in ids]
        made = []
        for i, call in enumerate(calls):
            answers = [r for r in results if r.get("source_call_id") is not None
                       and r.get("source_call_id") == call.get("tool_call_id")]
            made.append(LoggedStep(call=(call["function_name"], call.get("arguments")),
                                   reasoning=thought if i == 0 else None,
                                   observation=_joined(answers + (shared if i == len(calls) - 1 else []))))
    made[0].tokens_in = as_int(metrics.get("prompt_tokens"))
    made[0].tokens_out = as_int(metrics.get("completion_tokens"))
    for logged in made:
        logged.timestamp = timestamp
    return made


def _joined(results: list[Mapping[str, Any]]) -> str | None:
    texts = [text_of(r.get("content")) for r in results]
    present = [t for t in texts if t is not None]
    return "\n".join(present) if present else None


def _meta(doc: Mapping[str, Any], agent: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"schema_version": doc.get("schema_version"), "session_id": doc.get("session_id"),
                            "agent_version": agent.get("version")}
    final = doc.get("final_metrics")
    if isinstance(final, Mapping):
        meta.update(scalars(final))
    return {k: v for k, v in scalars(meta).items() if v is not None}

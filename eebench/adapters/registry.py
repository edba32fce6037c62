"""The adapters eebench knows: the built-in ones and third-party ones from the `eebench.adapters` entry points."""

from __future__ import annotations

import functools
import importlib
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

from eebench.adapters.base import HEAD_BYTES, STEP_FIELDS, Adapter
from eebench.adapters.records import broken_json
from eebench.documents import compressed_problem, open_input
from eebench.errors import InputError, did_you_mean, one_of

ENTRY_POINT_GROUP = "eebench.adapters"

# name -> "module:Class"; imported when first asked for.
BUILTINS: dict[str, str] = {
    "eebench": "eebench.adapters.formats.canonical:CanonicalAdapter",
    "actions": "eebench.adapters.formats.actions_list:ActionsAdapter",
    "openai-chat": "eebench.adapters.formats.openai_chat:OpenAIChatAdapter",
    "balrog": "eebench.adapters.formats.balrog:BalrogAdapter",
    "react": "eebench.adapters.formats.react:ReactAdapter",
    "swe-agent": "eebench.adapters.formats.swe_agent:SweAgentAdapter",
    "mini-swe-agent": "eebench.adapters.formats.mini_swe_agent:MiniSweAgentAdapter",
    "openhands": "eebench.adapters.formats.openhands:OpenHandsAdapter",
    "openhands-sdk": "eebench.adapters.formats.openhands_sdk:OpenHandsSdkAdapter",
    "openhands-eval": "eebench.adapters.formats.openhands_sdk:OpenHandsEvalAdapter",
    "openai-responses": "eebench.adapters.formats.openai_responses:OpenAIResponsesAdapter",
    "inspect": "eebench.adapters.formats.inspect_ai:InspectAdapter",
    "atif": "eebench.adapters.formats.atif:AtifAdapter",
    "harbor-traces": "eebench.adapters.formats.harbor_traces:HarborTracesAdapter",
    "otel": "eebench.adapters.formats.otel:OtelAdapter",
    "langsmith": "eebench.adapters.formats.langsmith:LangSmithAdapter",
    "agentcc": "eebench.adapters.formats.agentcc:AgentCCAdapter",
    "adapt": "eebench.adapters.formats.adapt:AdaptAdapter",
    "scienceworld": "eebench.adapters.formats.scienceworld:ScienceWorldAdapter",
}


class Registered(NamedTuple):
    adapter: Adapter
    origin: str   # "built-in", or the distribution that provides the plug-in


class Registry(NamedTuple):
    adapters: dict[str, Registered]
    problems: list[str]   # plug-ins that could not be loaded, one line each


def _load(target: str) -> type[Adapter]:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@functools.cache
def known_adapters() -> Registry:
    """Every adapter by name. A broken or clashing plug-in is left out and reported, never fatal for the rest."""
    adapters = {name: Registered(_load(target)(), "built-in") for name, target in BUILTINS.items()}
    problems = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        origin = f"plug-in {entry.value}" + (f" from {entry.dist.name}" if entry.dist else "")
        try:
            cls = entry.load()
            adapter = cls()
        except Exception as exc:  # a plug-in's own bug: report it, keep the other adapters working
            problems.append(f"{origin}: cannot load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(adapter, Adapter):
            problems.append(f"{origin}: {entry.value} is not a subclass of eebench.adapters.Adapter")
            continue
        missing = _missing_declarations(adapter)
        if missing:
            problems.append(f"{origin}: {entry.value} does not declare {missing}")
            continue
        name = adapter.name
        if name in adapters:
            problems.append(f"{origin}: format name {name!r} is taken by the {adapters[name].origin} adapter; "
                            "rename the plug-in's format")
            continue
        adapters[name] = Registered(adapter, origin)
    return Registry(adapters, problems)


def _missing_declarations(adapter: Adapter) -> str:
    """What a plug-in class failed to declare, in words ('' when complete): `formats` and `convert` rely on it."""
    missing = [attr for attr in ("name", "summary", "example", "version")
               if not isinstance(getattr(adapter, attr, None), str) or not getattr(adapter, attr)]
    never = getattr(adapter, "never_carries", None)
    if not isinstance(never, frozenset) or not never <= set(STEP_FIELDS):
        missing.append(f"never_carries (a frozenset of {', '.join(STEP_FIELDS)})")
    return ", ".join(missing)


def _claims(registered: Registered, path: Path, head: bytes) -> bool:
    """Whether an adapter says it reads the file; a plug-in whose check fails says no (and `formats` tells why)."""
    try:
        return bool(registered.adapter.handles(path, head))
    except Exception:  # a plug-in's bug must not stop the detection of every other format
        if registered.origin == "built-in":
            raise
        return False


def get_adapter(name: str) -> Adapter:
    adapters = known_adapters().adapters
    if name not in adapters:
        raise InputError(f"--from: unknown format {name!r}{did_you_mean(name, adapters)}; "
                         f"known: auto, {one_of(adapters)} (see `eebench formats`)")
    return adapters[name].adapter


def claiming(path: Path, head: bytes) -> list[Adapter]:
    """Every adapter that says it reads the file whose first HEAD_BYTES are `head`."""
    return [r.adapter for r in known_adapters().adapters.values() if _claims(r, path, head)]


def detect(path: Path, head: bytes | None = None, candidates: list[Adapter] | None = None) -> Adapter:
    """The one adapter that says it reads this file; InputError naming the candidates when none or several do.
    `head` and `candidates` spare a caller that has them already (a folder's files) reading and asking again."""
    if head is None:
        with open_input(path) as handle:
            head = handle.read(HEAD_BYTES)
    if candidates is None:
        candidates = claiming(path, head)
    if len(candidates) == 1:
        return candidates[0]
    canonical = [a for a in candidates if a.name == "eebench"]
    if canonical:  # eebench's own trajectories may quote other formats' fields (meta.schema_version of ATIF)
        return canonical[0]
    compressed = compressed_problem(head)
    if not candidates and compressed:
        raise InputError.at(str(path), compressed)
    broken = broken_json(head) if not candidates and len(head) < HEAD_BYTES else None
    if broken is not None:   # (a log cut short: the parse error says where, not "no adapter recognizes it")
        line, problem = broken
        raise InputError.at(str(path), f"{problem}; no adapter can tell the format of JSON that does not parse",
                            line=line)
    if not candidates:
        raise InputError.at(str(path), "no adapter recognizes this file; name its format with --from "
                                       f"({one_of(known_adapters().adapters)}; see `eebench formats`)")
    names = [a.name for a in candidates]
    raise InputError.at(str(path), f"ambiguous format: it reads as {one_of(names)}; choose one with --from")

"""eebench: declarative benchmark specs and an offline evaluator of how LLM agents explore and exploit.

The Python API (`eebench.load`, `grade`, `grade_files`, `query`, `Scorer`; see the README, "From Python") is
imported on first use, so `import eebench` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it, imported when the name is first used
_LAZY = {
    "load": "eebench.api", "grade": "eebench.api", "grade_files": "eebench.api", "query": "eebench.api",
    "query_arrow": "eebench.api", "Instances": "eebench.api", "Results": "eebench.api",
    "Scorer": "eebench.scorer", "StepRecord": "eebench.scorer", "EndReason": "eebench.scorer",
    "RoomsStepRecord": "eebench.scorer", "EpisodeRecord": "eebench.scorer",
    "EebenchError": "eebench.errors", "InputError": "eebench.errors",
}

if TYPE_CHECKING:
    from eebench.api import Instances, Results, grade, grade_files, load, query, query_arrow
    from eebench.errors import EebenchError, InputError
    from eebench.scorer import EndReason, EpisodeRecord, RoomsStepRecord, Scorer, StepRecord

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'eebench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


# Gymnasium finds environments only once they are registered: a program that has imported gymnasium gets
# eebench/GridDag-v0 and eebench/Rooms-v0 with `import eebench` (else `import eebench.gym` registers them), and one
# that has not pays nothing for them.
if "gymnasium" in __import__("sys").modules:
    importlib.import_module("eebench.gym")

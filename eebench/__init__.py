"""eebench: declarative benchmark specs and an offline evaluator of how LLM agents explore and exploit.

The Python API (`eebench.load`, `grade`, `grade_files`, `query`, `Scorer`; see the README, "From Python") is
imported on first use, so `import eebench` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
import sys
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


class _RegisterWithGymnasium:
    """Gymnasium finds environments only once they are registered (1.x reads no plug-in entry points): this
    finder registers eebench/GridDag-v0 and eebench/Rooms-v0 as gymnasium's own import ends, so `import eebench`
    and `import gymnasium` in either order give them, and a program that never imports gymnasium pays nothing."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != "gymnasium":
            return None
        # the finders after this one find it; this one stays until gymnasium's import runs: a find_spec alone (an
        # "is it installed?" check) imports nothing, and removing the hook then left the environments unregistered
        for finder in sys.meta_path:
            if finder is _RegisterWithGymnasium or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = getattr(spec, "loader", None)
        if loader is not None and hasattr(loader, "exec_module"):
            run = loader.exec_module

            def run_and_register(module: Any) -> None:
                if _RegisterWithGymnasium in sys.meta_path:   # once
                    sys.meta_path.remove(_RegisterWithGymnasium)
                run(module)
                importlib.import_module("eebench.gym")
            loader.exec_module = run_and_register
        return spec


if "gymnasium" in sys.modules:
    importlib.import_module("eebench.gym")
elif _RegisterWithGymnasium not in sys.meta_path:
    sys.meta_path.insert(0, _RegisterWithGymnasium)

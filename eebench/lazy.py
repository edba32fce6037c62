"""Names of a package loaded on first use (PEP 562): a package's `__init__` lists where each name lives, and the
module holding it is imported only when the name is asked for, so importing the package costs nothing more."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def names_on_first_use(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: name -> the submodule (`homes[name]`) it is imported from."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__

"""The YAML door: PyYAML's safe loader within the limits of documents.py (aliases, values once expanded, depth,
duplicate keys), every refusal a located one-line problem; and the trusted read of eebench's own files.

A module of its own so that PyYAML is imported only by runs that read YAML (documents.py calls it when it does):
a grade whose shipped specs come from their JSON cache reads none.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from eebench.documents import (MAX_DEPTH, MAX_INT_DIGITS, MAX_YAML_ALIASES, MAX_YAML_BYTES, MAX_YAML_NODES,
                               json_compatible, too_deep_message, tree_problem)
from eebench.errors import InputError, quote


# YAML 1.2's floats with an exponent: PyYAML reads YAML 1.1, where one without a dot or without the exponent's sign
# (`1e-3`, `1.5e3`) is a string, and a knob such as `p_drop: 1e-3` was refused as "expected number, found a string"
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")
_FLOAT_TAG = "tag:yaml.org,2002:float"


class _TrustedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader where PyYAML's wheel has it (else the pure-Python one), with YAML 1.2's floats."""


def load_trusted(text: str) -> Any:
    """A YAML file eebench ships, read with libyaml and without the limits (see documents.load_shipped)."""
    return json_compatible(yaml.load(text, Loader=_TrustedLoader))  # noqa: S506 - a safe loader


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing before construction a document whose aliases would expand it beyond
    MAX_YAML_NODES values, with more than MAX_YAML_ALIASES aliases, or nested deeper than MAX_DEPTH."""

    def compose_document(self) -> yaml.Node:
        self.aliases = 0
        node = super().compose_document()
        _check_yaml_graph(node, self)
        return node

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                raise _YamlLimit(f"more than {MAX_YAML_ALIASES} aliases (*name); a spec needs few or none")
        return super().compose_node(parent, index)


for _loader in (_TrustedLoader, _BoundedLoader):
    _loader.add_implicit_resolver(_FLOAT_TAG, _EXPONENT_FLOAT, list("-+.0123456789"))


class _YamlLimit(Exception):
    """A YAML document over one of the limits of documents.py, found while composing it."""


def _check_yaml_graph(root: yaml.Node, loader: Any) -> None:
    """Count the values and depth the node graph will have once expanded (shared nodes counted each time they are
    used), in time linear in the graph, before anything is constructed."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values when expanded, depth)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _yaml_children(node)
        if done:
            on_path.discard(key)
            size = 1 + sum(sizes[id(c)][0] for c in children)
            depth = 1 + max((sizes[id(c)][1] for c in children), default=0)
            if size > MAX_YAML_NODES:
                raise _YamlLimit(f"expands to more than {MAX_YAML_NODES:,} values (counted as read, every alias "
                                 "and merge key expanded)")
            if depth > MAX_DEPTH:
                raise _YamlLimit(too_deep_message())
            sizes[key] = (size, depth)
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _YamlLimit("an alias refers to a value that contains it (a cycle)")
        _no_duplicate_keys(node, loader)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _no_duplicate_keys(node: yaml.Node, loader: Any) -> None:
    """A mapping that gives a key twice is refused (PyYAML keeps the last silently: a pasted block or a typo would
    change a spec without a word). Keys are compared as read: as Python values (`1`, `01`, `1.0` and `true` are
    one key) and as the text `json_compatible` makes of them (`1` and `"1"`)."""
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[Any, yaml.Node] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        value = loader.construct_object(key)
        for form in (value, ("text", str(value))):
            first = seen.setdefault(form, key)
            if first is not key:
                raise yaml.MarkedYAMLError(problem=f"duplicate key {quote(repr(key.value))} (also at line "
                                                   f"{first.start_mark.line + 1})", problem_mark=key.start_mark)


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def parse_yaml(text: str, file: str) -> Any:
    """YAML text within the limits of documents.py, every refusal a located one-line problem."""
    if len(text) > MAX_YAML_BYTES:  # characters, a bound on bytes read (read_text already stopped there)
        raise InputError.at(file, f"larger than {MAX_YAML_BYTES >> 20} MiB; a YAML spec is far smaller")
    try:
        value = json_compatible(yaml.load(text, Loader=_BoundedLoader))  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if reason.startswith("but ") and getattr(exc, "context", None):   # a second document: "but found another
            reason = f"{exc.context}, {reason}"                           # document" alone says not what was wrong
        line = mark.line + 1 if mark is not None else None
        raise InputError.at(file, f"malformed YAML: {quote(reason)}", line=line) from None
    except _YamlLimit as exc:
        raise InputError.at(file, f"refused YAML: {exc}") from None
    except RecursionError:  # PyYAML's parser recurses per level of nesting
        raise InputError.at(file, f"refused YAML: {too_deep_message()}") from None
    except ValueError as exc:  # an integer beyond Python's int-string limit
        if "digits" not in str(exc):
            raise
        raise InputError.at(file, f"refused YAML: an integer of more than {MAX_INT_DIGITS} digits") from None
    problem = tree_problem(value)
    if problem:
        raise InputError.at(file, f"refused YAML: {problem}")
    return value

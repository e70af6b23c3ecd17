"""YAML typed by people (run configurations, benchmark options), read with bounds.

A key given twice in one mapping is refused (YAML would keep the last one silently), and so is
a key YAML reads as other than text (`1:`, `yes:`, `null:`), which JSON has no form for. Anchors
and aliases are refused: an alias repeats a node without repeating its text, so a few
hundred bytes can stand for gigabytes once the value is walked (a "billion laughs"). Nesting is
bounded as JSON bodies are (MAX_JSON_DEPTH), since composing a deep document recurses; the text
itself is bounded before the parser sees it. Every refusal is a YamlInputError saying where.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from contracts.text import MAX_JSON_DEPTH

# A run configuration or an options file is a few kilobytes; a megabyte leaves room for long task lists.
MAX_YAML_CHARS = 1_000_000


class YamlInputError(ValueError):
    """The text is not YAML, or is YAML this project does not read (aliases, too deep, too long)."""


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases and nesting past `max_depth` as it composes."""

    max_depth = MAX_JSON_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            raise YamlInputError(f"{_where(event.start_mark)}aliases (*{event.anchor}) are not accepted")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise YamlInputError(f"{_where(event.start_mark)}anchors (&{anchor}) are not accepted")
        nests = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if nests:
            self._depth += 1
            if self._depth > self.max_depth:
                where = _where(event.start_mark)
                raise YamlInputError(f"{where}nested more than {self.max_depth} levels deep")
        try:
            node: Node | None = super().compose_node(parent, index)
        finally:
            if nests:
                self._depth -= 1
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[str, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue  # `<<: {...}` merges a mapping in
            where = _where(key_node.start_mark)
            # JSON keys are text: `1:`, `yes:` and `null:` would become "1", "true" and "null".
            if not isinstance(key_node, ScalarNode):
                raise YamlInputError(f"{where}a key that is a list or mapping is not text")
            key = key_node.value
            if key_node.tag != _STR_TAG:
                kind = _KEY_KINDS.get(key_node.tag, "other than text")
                raise YamlInputError(f"{where}the key {key!r} is read as {kind}, not as text; quote it")
            if key in first:
                raise YamlInputError(
                    f"{where}the key {key!r} is given twice (first on line {first[key] + 1})"
                )
            first[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_KEY_KINDS = {
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
}

# YAML 1.1 (PyYAML) reads `1e-3` and `2.5e3` as strings: its floats need a dot and a signed
# exponent. People write them as JSON and YAML 1.2 do, so those forms are floats here too.
_BoundedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def load_yaml(text: str, *, max_chars: int = MAX_YAML_CHARS) -> Any:
    """The value of a YAML (or JSON) document; raises YamlInputError naming the problem."""
    if len(text) > max_chars:
        raise YamlInputError(f"the text is {len(text)} characters long (at most {max_chars})")
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # its reader refuses control characters at once
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise YamlInputError(f"not valid YAML or JSON: {_where(mark)}{problem}") from exc
    except (ValueError, OverflowError) as exc:  # a scalar its type refuses: an int of 5,000 digits
        if isinstance(exc, YamlInputError):
            raise
        raise YamlInputError(f"a value cannot be read: {exc}") from exc
    except RecursionError as exc:  # below the depth bound on a small stack; never a crash
        raise YamlInputError("the text is nested too deeply") from exc
    finally:
        if loader is not None:
            loader.dispose()

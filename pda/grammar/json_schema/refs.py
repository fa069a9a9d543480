"""`$ref` resolution within one schema document: JSON pointers, `$id`/`id` and `$anchor` names.

`References` indexes the document once, at the first reference it resolves (every
`$id`, `id` and `$anchor`, the first of each name winning, skipping values that are
data: `enum`, `const`, `default`, `examples`), and resolves a reference to the
subschema it names, or raises a `GrammarError` naming the `$ref` and where it is.
Only references into the same document resolve; a remote one is refused. It also
records whether the document declares a draft before 2019-09, where `$ref` ignores
its sibling keywords.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any
from urllib.parse import unquote

from pda.errors import GrammarError
from pda.grammar.json_schema.keywords import pointer


class References:
    """The subschemas of one document by `$ref`."""

    def __init__(self, root: Any, *, names: bool = True) -> None:
        """`names` False: the document holds no `$id`/`id`/`$anchor` name (`validate` says so)."""
        self.root = root
        self._names = names
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = any(d in schema_uri for d in ("draft-03", "draft-04", "draft-06", "draft-07"))

    @cached_property
    def anchors(self) -> dict[str, Any]:
        """The subschemas by `$id`/`id`/`$anchor` name, indexed at the first `$ref` resolved (most
        schemas resolve none, and most that do name nothing: their document is not walked again)."""
        anchors: dict[str, Any] = {}
        if self._names:
            _scan_ids(self.root, anchors)
        return anchors

    def resolve(self, ref: str, path: tuple[str, ...]) -> Any:
        """The subschema `ref` names; `path` is where the `$ref` is, for the error."""
        if ref in self.anchors:
            return self.anchors[ref]
        if not ref.startswith("#"):
            base = ref.split("#", 1)
            if base[0] in self.anchors:
                node = self.anchors[base[0]]
                return self._walk(node, base[1] if len(base) > 1 else "", ref, path)
            raise GrammarError(f"$ref {ref!r} at {pointer(path)}: remote references are not supported")
        return self._walk(self.root, ref[1:], ref, path)

    def _walk(self, node: Any, fragment: str, ref: str, path: tuple[str, ...]) -> Any:
        if fragment and not fragment.startswith("/"):
            if "#" + fragment in self.anchors:
                return self.anchors["#" + fragment]
            raise GrammarError(f"$ref {ref!r} at {pointer(path)}: unknown anchor")
        for part in fragment.split("/")[1:]:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise GrammarError(f"$ref {ref!r} at {pointer(path)} does not resolve") from None
        return node


_DATA = frozenset({"enum", "const", "default", "examples"})  # keywords whose values are data, never schemas


def _scan_ids(root: Any, anchors: dict[str, Any]) -> None:
    """Every `$id`/`id`/`$anchor` in the document into `anchors`, the first of each name winning (depth
    first, in document order: an explicit stack, as the lowering may be deep already when it asks),
    skipping values that are data."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in ("$id", "id"):
                v = node.get(key)
                if isinstance(v, str):
                    anchors.setdefault(v, node)
                    if "#" in v and not v.endswith("#"):
                        anchors.setdefault("#" + v.split("#", 1)[1], node)
            if isinstance(node.get("$anchor"), str):
                anchors.setdefault("#" + node["$anchor"], node)
            children = [v for k, v in node.items() if k not in _DATA and isinstance(v, (dict, list))]
        elif isinstance(node, list):
            children = [v for v in node if isinstance(v, (dict, list))]
        else:
            continue
        stack += reversed(children)

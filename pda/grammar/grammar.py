"""`pda.Grammar`: a grammar from any front end, with whole-text membership."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from pda import collector
from pda.errors import GrammarError
from pda.grammar.builder import GrammarBuilder
from pda.grammar.ir import GrammarIR
from pda.grammar.lark_frontend import SHIPPED_GRAMMARS, default_start, lark_to_ir
from pda.regex.literals import alternation_pattern, leading_inline_flags


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else bytes(text)


class Grammar:
    """A context-free grammar in pda's IR, with the recogniser built on first use."""

    def __init__(self, ir: GrammarIR) -> None:
        self.ir = ir

    def __repr__(self) -> str:
        return f"<pda.Grammar {self.ir.source or ''} start={self.ir.start!r} {len(self.ir.terminals)} terminals, {len(self.ir.rules)} rules>"

    # --- front ends -------------------------------------------------------------------

    @classmethod
    def from_lark(
        cls,
        text: str,
        *,
        start: str = "start",
        import_paths: tuple[str, ...] = (),
        source: str = "<lark>",
        lexer: str | None = None,
    ) -> "Grammar":
        """Lark EBNF (`%import common.*`, templates, priorities: everything Lark loads).

        `lexer="basic"` cuts lexemes by all terminals, as a conventional tokenizer
        does, instead of by those the parser expects (docs/semantics.md); a
        `// pda: lexer=basic` line in the text does the same.
        """
        return cls(lark_to_ir(text, start=start, import_paths=import_paths, source=source, lexer=lexer))

    @classmethod
    def from_gbnf(cls, text: str, *, source: str = "<gbnf>") -> "Grammar":
        """llama.cpp's GBNF format; `root` is the start rule. The IR is built by the shared `GrammarBuilder`."""
        from pda.grammar.gbnf import gbnf_to_ir

        return cls(gbnf_to_ir(text, source=source))

    @classmethod
    def from_json_schema(
        cls,
        schema: dict[str, Any] | str,
        *,
        whitespace: str | None = None,
        max_whitespace: int | None = None,
        exact: bool = False,
        on_unsupported: str | None = None,
        property_order: str = "any",
        **deprecated: Any,
    ) -> "Grammar":
        """JSON text valid against a JSON Schema, with defaults made for generation.

        By default integers are integer literals, numbers finite doubles, objects that
        declare properties take no undeclared key unless the schema allows them, and
        white space is flexible but at most `max_whitespace` characters a gap;
        `exact=True` is JSON Schema's language on those points. `on_unsupported`
        "raise" (default) or "relax" (warn and ignore the keyword); `strict` is its
        deprecated name. docs/json_schema.md has the whole semantics and a comparison
        with XGrammar's, llguidance's and Outlines' defaults.
        """
        from pda.grammar.json_schema import lowered_ir, resolve_options

        options = resolve_options(whitespace=whitespace, max_whitespace=max_whitespace, on_unsupported=on_unsupported,
                                  property_order=property_order, exact=exact, **_strict_only(deprecated))
        with collector.paused():
            return cls(lowered_ir(schema, options))

    @classmethod
    def from_pydantic(
        cls,
        model: Any,
        *,
        whitespace: str | None = None,
        max_whitespace: int | None = None,
        exact: bool = False,
        on_unsupported: str | None = None,
        property_order: str = "any",
        **deprecated: Any,
    ) -> "Grammar":
        """JSON for a Pydantic model (or any type a `TypeAdapter` takes), through its JSON Schema.

        The options are `from_json_schema`'s; with the defaults every complete output
        passes `model.model_validate_json` (tests/test_json_schema_pydantic.py).
        """
        from pda.grammar.json_schema import lowered_ir, pydantic_to_schema, resolve_options

        options = resolve_options(whitespace=whitespace, max_whitespace=max_whitespace, on_unsupported=on_unsupported,
                                  property_order=property_order, exact=exact, **_strict_only(deprecated))
        with collector.paused():
            return cls(lowered_ir(pydantic_to_schema(model), options))

    @classmethod
    def from_regex(cls, pattern: str) -> "Grammar":
        """Text that fully matches a regular expression (Python `re` syntax, plus `\\p{..}`).

        The IR is built by the shared `GrammarBuilder`, not through Lark text (whose `/.../` quoting would have
        to be reversed exactly). A lexeme is never empty, so a regex that matches the
        empty string becomes `start: REGEX | ε` with REGEX the non-empty matches
        (a look-ahead for one character in front). Under fullmatch a lazy quantifier
        means what the greedy one means, so the terminal is not lazy.
        """
        from pda.grammar.ir import NEVER
        from pda.regex.syntax import EMPTY, nullable, translate

        node = translate(pattern, name="REGEX")
        empty_ok = nullable(node)
        if node == EMPTY:
            pattern = NEVER
        elif empty_ok:
            flags = leading_inline_flags(pattern)
            pattern = f"{flags}(?=[\\s\\S])(?:{pattern[len(flags):]})"
        builder = GrammarBuilder()
        regex = builder.fixed_terminal("REGEX", pattern)
        return cls(builder.ir([[regex]] + ([[]] if empty_ok else []), source="<regex>"))

    @classmethod
    def from_choices(cls, choices: Sequence[str]) -> "Grammar":
        """Exactly one of the given strings.

        The choices become one terminal, an alternation of literals, which the
        finite-set engine (`pda.trie`) compiles directly to a trie DFA; the IR is
        built by the shared `GrammarBuilder` rather than through Lark's loader, which is slow for 100k values.
        """
        if isinstance(choices, (str, bytes)):
            raise TypeError("from_choices takes a list of strings, not one string")
        choices = list(choices)
        try:
            "".join(choices).encode("utf-8")  # one pass over all of them; the loop below names the culprit
        except (TypeError, UnicodeEncodeError):
            for i, v in enumerate(choices):
                if not isinstance(v, str):
                    raise TypeError(f"from_choices: choice {i} is a {type(v).__name__}, not a str ({v!r})") from None
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise GrammarError(f"from_choices: choice {i} ({v!r}) is not valid Unicode text: {exc.reason}") from None
        values = list(dict.fromkeys(choices))
        words = [v for v in values if v]
        if not words:
            raise GrammarError("from_choices needs at least one non-empty string")
        builder = GrammarBuilder()
        choice = builder.fixed_terminal("CHOICE", alternation_pattern(words))
        return cls(builder.ir([[choice]] + ([[]] if "" in values else []), source="<choices>"))

    @classmethod
    def from_structural_tag(cls, spec: dict[str, Any] | str) -> "Grammar":
        """Free text with constrained islands, from XGrammar's structural-tag JSON (`pda.grammar.structural`):
        `{"type": "structural_tag", "format": {...}}`, a format alone, or the older
        `{"structures": [...], "triggers": [...]}`. `GrammarError` names the field of a bad spec."""
        from pda.grammar.structural import structural_tag_to_ir

        with collector.paused():
            return cls(structural_tag_to_ir(spec))

    @classmethod
    def from_tools(cls, tools: Sequence[dict[str, Any]], *, format: str = "hermes", mode: str = "auto") -> "Grammar":
        """Tool calls for OpenAI-style tool definitions (`pda.grammar.tools`): `format` "hermes" (Qwen's
        `<tool_call>` tags in free text), "json" or "llama" (the call object alone); `mode` "auto",
        "required" (one call), "parallel" (one or more) or "none". Arguments follow the named tool's schema."""
        from pda.grammar.tools import tools_to_ir

        with collector.paused():
            return cls(tools_to_ir(tools, format=format, mode=mode))

    @classmethod
    def load(cls, spec: str, *, start: str | None = None, lexer: str | None = None) -> "Grammar":
        """A grammar from a path (`.lark`, `.gbnf`, `.json` schema) or a shipped grammar's name."""
        path = Path(spec)
        if not path.exists():
            shipped = SHIPPED_GRAMMARS / f"{spec}.lark"
            if not shipped.exists():
                names = sorted(p.stem for p in SHIPPED_GRAMMARS.glob("*.lark"))
                raise GrammarError(f"no grammar file {spec!r} and no shipped grammar of that name (shipped: {', '.join(names)})")
            path = shipped
        text = path.read_text(encoding="utf-8")
        suffix = path.suffix.lower()
        if suffix == ".gbnf":
            return cls.from_gbnf(text, source=str(path))
        if suffix == ".json":
            try:
                schema = json.loads(text)
            except json.JSONDecodeError as exc:
                raise GrammarError(f"{path}: not valid JSON: {exc}") from None
            return cls.from_json_schema(schema)
        return cls.from_lark(text, start=start or default_start(text), source=str(path), lexer=lexer)

    # --- recognition ------------------------------------------------------------------

    @cached_property
    def recognizer(self):
        """The compiled recogniser (built once, on first use)."""
        from pda.recognizer import Recognizer

        return Recognizer(self.ir)

    def check(self, text: str | bytes, *, prefix: bool = False) -> None:
        """Raise `ParseError` (with offset and expected terminals) unless the text is in the language."""
        self.recognizer.run(_as_bytes(text), prefix=prefix)

    def accepts(self, text: str | bytes) -> bool:
        """Whether the whole text is a sentence of the grammar."""
        return self.recognizer.accepts(_as_bytes(text))

    def accepts_prefix(self, text: str | bytes) -> bool:
        """Whether the text can still be completed to a sentence (viable prefix)."""
        return self.recognizer.accepts(_as_bytes(text), prefix=True)


def _strict_only(deprecated: dict[str, Any]) -> dict[str, Any]:
    """The deprecated keywords of `from_json_schema` (only `strict`); others are a TypeError."""
    unknown = sorted(set(deprecated) - {"strict"})
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    return dict(deprecated)


__all__ = ["Grammar", "SHIPPED_GRAMMARS"]

"""The engines the mask benchmark drives: pda and its peers, behind one small interface.

Each engine turns a `GrammarSpec` into its compiled form and gives a `Session` per
document. A session exposes three callables the replay loop times or checks:

- `fill()`     compute the next-token mask into the session's own buffer (timed);
- `advance(t)` accept token t, returning whether the engine took it (timed);
- `allows(t)`  read token t's bit from the buffer (not timed: the replay's check).

The callables are the engines' own bound methods wherever possible, so the loop
measures the engine and not an adapter. Every engine fills the packed int32 layout
`[1, ceil(V/32)]` except transformers-CFG, whose API returns a boolean vector.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

from bench.workloads import GrammarSpec

# `name.N:` at the start of a rule or terminal definition.
_PRIORITY = re.compile(r"^([ \t]*[?!]?[A-Za-z_][A-Za-z0-9_]*)\.-?\d+[ \t]*:", re.MULTILINE)

ENGINES = ("pda", "llguidance", "llguidance-lark", "xgrammar", "transformers-cfg")


class Unsupported(Exception):
    """This engine cannot run this workload; the message says why (shown in the table)."""


@dataclass
class Session:
    """One document's matcher, reduced to what the replay loop calls."""

    fill: Callable[[], Any]
    advance: Callable[[int], bool]
    allows: Callable[[int], bool]


def _bit_reader(words: np.ndarray) -> Callable[[int], bool]:
    """Read token t's bit from a packed int32 mask row (bit t % 32 of word t // 32)."""
    flat = words.reshape(-1).view(np.uint32)
    return lambda t: bool((int(flat[t >> 5]) >> (t & 31)) & 1)


class Engine(ABC):
    """A constrained-decoding engine, set up once per tokenizer."""

    name: str

    def import_error(self) -> str | None:
        """Why the engine cannot be imported here, or None when it can."""
        return None

    @abstractmethod
    def load_vocab(self, tokenizer: Any, logits_size: int) -> None:
        """Build the engine's view of the vocabulary (timed as "vocab")."""

    @abstractmethod
    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        """Compile the grammar; returns the compiled form and which grammar input was used."""

    @abstractmethod
    def session(self, compiled: Any) -> Session:
        """A fresh matcher for one document."""


class PdaEngine(Engine):
    """pda through its public API (docs/design.md, "Public surface")."""

    name = "pda"

    def import_error(self) -> str | None:
        try:
            import pda
        except ImportError as e:
            return f"import pda failed: {e}"
        missing = [n for n in ("Vocabulary", "Grammar", "compile", "Matcher") if not hasattr(pda, n)]
        if missing:
            return f"pda does not export {', '.join(missing)} yet"
        return None

    def load_vocab(self, tokenizer: Any, logits_size: int) -> None:
        import pda

        self.words = math.ceil(logits_size / 32)
        self.vocab = pda.Vocabulary.from_hf(tokenizer)

    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        import pda

        if spec.kind == "json_schema":
            if not hasattr(pda.Grammar, "from_json_schema"):
                raise Unsupported("pda.Grammar.from_json_schema does not exist yet")
            grammar, used = pda.Grammar.from_json_schema(json.dumps(spec.schema), whitespace="flexible"), "JSON Schema (flexible whitespace)"
        elif spec.lark is None:
            raise Unsupported("no Lark grammar for this workload yet (pda/grammars/json.lark missing)")
        else:
            grammar, used = pda.Grammar.from_lark(spec.lark), spec.lark_origin or "Lark"
        return pda.compile(grammar, self.vocab), used

    def session(self, compiled: Any) -> Session:
        import pda

        matcher = pda.Matcher(compiled)
        bitmask = np.full((1, self.words), -1, dtype=np.int32)
        return Session(
            fill=partial(matcher.fill_bitmask, bitmask, 0),
            advance=matcher.accept_token,
            allows=_bit_reader(bitmask),
        )


class LLGuidanceEngine(Engine):
    """llguidance: its native JSON / JSON-Schema compiler where one applies, else Lark."""

    name = "llguidance"
    prefer_lark = False

    def import_error(self) -> str | None:
        try:
            import llguidance  # noqa: F401
            import llguidance.hf  # noqa: F401
        except ImportError as e:
            return f"import llguidance failed: {e}"
        return None

    def load_vocab(self, tokenizer: Any, logits_size: int) -> None:
        import llguidance.hf

        self.words = math.ceil(logits_size / 32)
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, n_vocab=logits_size)

    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        import llguidance

        if spec.kind == "json_schema":
            text, used = llguidance.grammar_from("json_schema", json.dumps(spec.schema)), "JSON Schema"
        elif spec.kind == "json" and not self.prefer_lark:
            text, used = llguidance.grammar_from("lark", "start: %json {}"), "%json {}"
        elif spec.lark is None:
            raise Unsupported("no Lark grammar for this workload yet (pda/grammars/json.lark missing)")
        else:
            # llguidance refuses priorities ("priority not supported yet"). A rule's only
            # picks a parse tree; a terminal's breaks lexing ties, which llguidance
            # keeps open instead: dropping them keeps every document in the language.
            lark, n = _PRIORITY.subn(r"\1:", spec.lark)
            text = llguidance.grammar_from("lark", lark)
            used = (spec.lark_origin or "Lark") + (f" ({n} priorities dropped)" if n else "")
        # A matcher built here checks the grammar; its errors surface as a state, not a raise.
        probe = llguidance.LLMatcher(self.tokenizer, text, log_level=0)
        if probe.is_error():
            raise Unsupported(f"llguidance rejects the grammar: {probe.get_error()[:200]}")
        return text, used

    def session(self, compiled: Any) -> Session:
        import llguidance

        matcher = llguidance.LLMatcher(self.tokenizer, compiled, log_level=0)
        bitmask = np.full((1, self.words), -1, dtype=np.int32)
        row = bitmask[0]
        return Session(
            fill=partial(matcher.unsafe_compute_mask_ptr, row.ctypes.data, row.nbytes),
            advance=matcher.consume_token,
            allows=_bit_reader(bitmask),
        )


class LLGuidanceLarkEngine(LLGuidanceEngine):
    """llguidance on the same Lark text pda loads (the like-for-like grammar comparison)."""

    name = "llguidance-lark"
    prefer_lark = True

    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        if spec.kind == "json_schema":
            raise Unsupported("JSON Schema workload: see the llguidance row")
        return super().compile(spec)


class XGrammarEngine(Engine):
    """XGrammar: built-in JSON grammar, JSON-Schema compiler, or EBNF converted from Lark."""

    name = "xgrammar"

    def import_error(self) -> str | None:
        try:
            import xgrammar  # noqa: F401
        except Exception as e:  # its import pulls torch and triton, which fail in many ways
            return f"import xgrammar failed: {type(e).__name__}: {e}"
        return None

    def load_vocab(self, tokenizer: Any, logits_size: int) -> None:
        import xgrammar as xgr

        self.logits_size = logits_size
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=logits_size)
        # One thread per compile: the benchmark machine's cores are shared.
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        if spec.kind == "json":
            return self.compiler.compile_builtin_json_grammar(), "built-in JSON grammar"
        if spec.kind == "json_schema":
            return self.compiler.compile_json_schema(json.dumps(spec.schema), any_whitespace=True), "JSON Schema"
        if spec.lark is None:
            raise Unsupported("no grammar")
        try:
            ebnf = lark_to_xgrammar_ebnf(spec.lark)
        except ValueError as e:
            raise Unsupported(f"Lark to EBNF conversion failed: {e}") from e
        return self.compiler.compile_grammar(ebnf), f"{spec.lark_origin}, converted to EBNF (scannerless)"

    def session(self, compiled: Any) -> Session:
        import xgrammar as xgr

        matcher = xgr.GrammarMatcher(compiled)
        bitmask = xgr.allocate_token_bitmask(1, self.logits_size)
        return Session(
            fill=partial(matcher.fill_next_token_bitmask, bitmask, 0),
            advance=matcher.accept_token,
            allows=_bit_reader(bitmask.numpy()),
        )


class TransformersCfgEngine(Engine):
    """transformers-CFG (GBNF, pure Python) on the any-JSON workloads.

    Its tokenizer adapter downloads the GPT-2 tokenizer for the byte map whenever it
    is given a fast tokenizer; offline, the byte map (`bytes_to_unicode`, the same
    table GPT-2 ships) is passed in instead, and the byte trie is built here from the
    same mapping.
    """

    name = "transformers-cfg"

    def import_error(self) -> str | None:
        try:
            import transformers_cfg.token_grammar_recognizer  # noqa: F401
        except Exception as e:
            return f"import transformers_cfg failed: {type(e).__name__}: {e}"
        return None

    def load_vocab(self, tokenizer: Any, logits_size: int) -> None:
        from transformers.convert_slow_tokenizer import bytes_to_unicode
        from transformers_cfg.tokenization.byte_trie import ByteTrie
        from transformers_cfg.tokenization.middle.ByteProxyMapping import ByteProxyMapping
        from transformers_cfg.tokenization.middle.TokenizerMiddleMapping import (
            GPT2TokenizerMiddleMapping,
            TokenizerMiddleMapping,
        )

        class OfflineByteProxyMapping(ByteProxyMapping):
            def __init__(self, tok: Any) -> None:  # noqa: D401 - replaces the hub download
                self.tokenizer = tok
                self.byte2proxychar = bytes_to_unicode()
                self.proxychar2byte = {c: b for b, c in self.byte2proxychar.items()}
                self.cdp2byte = {ord(c): b for c, b in self.proxychar2byte.items()}
                self.byte2cdp = {v: k for k, v in self.cdp2byte.items()}
                self.PROXY_CDP_SET = set(self.cdp2byte)

        class OfflineMapping(GPT2TokenizerMiddleMapping):
            def __init__(self, tok: Any) -> None:
                TokenizerMiddleMapping.__init__(self, tok)
                self.byte_proxy_mapper = OfflineByteProxyMapping(tok)

        self.tokenizer = tokenizer
        self.mapping = OfflineMapping(tokenizer)
        self.trie = ByteTrie()
        special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
        for token_id in range(len(tokenizer)):
            if token_id not in special:
                self.trie.insert(self.mapping.map(token_id), token_id)
        self.trie.vocab_size = len(tokenizer)

    def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
        from transformers_cfg.token_grammar_recognizer import IncrementalTokenRecognizer

        if spec.kind != "json" or spec.gbnf is None:
            raise Unsupported("run on the any-JSON workloads only")
        recognizer = IncrementalTokenRecognizer(
            spec.gbnf, "root", self.tokenizer, trie=self.trie, homomorphism=self.mapping
        )
        return recognizer, "RFC 8259 GBNF (bench/workloads.py)"

    def session(self, compiled: Any) -> Session:
        import torch

        recognizer = compiled
        state = [recognizer.string_recognizer.get_initial_parsing_state()]
        mask: list[Any] = [None]
        device = torch.device("cpu")

        def fill() -> None:
            mask[0] = recognizer.filter_vocab(state[0], device)

        def advance(token_id: int) -> bool:
            if not recognizer.try_accept_token_id(token_id, state[0]):
                return False
            state[0] = recognizer._update_state_with_token_id(token_id, state[0])
            return True

        def allows(token_id: int) -> bool:
            return token_id < len(mask[0]) and bool(mask[0][token_id])

        return Session(fill=fill, advance=advance, allows=allows)


def make_engine(name: str) -> Engine:
    """The engine called `name` (one of ENGINES)."""
    engines: dict[str, type[Engine]] = {
        "pda": PdaEngine,
        "llguidance": LLGuidanceEngine,
        "llguidance-lark": LLGuidanceLarkEngine,
        "xgrammar": XGrammarEngine,
        "transformers-cfg": TransformersCfgEngine,
    }
    if name not in engines:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}")
    return engines[name]()


# --- Lark to XGrammar EBNF -------------------------------------------------------------

# Lark's common.lark ESCAPED_STRING, written with a look-behind, and its regular
# equivalent: a quote, then non-quote characters or backslash pairs, then a quote.
_ESCAPED_STRING_RE = r'".*?(?<!\\)(\\\\)*?"'
_ESCAPED_STRING_EBNF = r'"\"" ( [^"\\\n] | "\\" [^\n] )* "\""'

_CATEGORY_CLASSES = {
    "CATEGORY_DIGIT": (False, r"0-9"),
    "CATEGORY_NOT_DIGIT": (True, r"0-9"),
    "CATEGORY_SPACE": (False, r" \t\n\r\f\v"),
    "CATEGORY_NOT_SPACE": (True, r" \t\n\r\f\v"),
    "CATEGORY_WORD": (False, r"a-zA-Z0-9_"),
    "CATEGORY_NOT_WORD": (True, r"a-zA-Z0-9_"),
}


def _class_char(code: int) -> str:
    ch = chr(code)
    if ch in "\\]^-[":
        return "\\" + ch
    if 0x20 <= code < 0x7F:
        return ch
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _string_literal(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _case_variants(code: int) -> set[int]:
    ch = chr(code)
    return {ord(c) for c in (ch, ch.lower(), ch.upper()) if len(c) == 1}


def _regex_to_ebnf(pattern: str, terminal: str) -> str:
    """An XGrammar EBNF expression for a Python regex (as Lark compiles terminals)."""
    import re._constants as c
    import re._parser as p

    def node_list(items: Any, icase: bool) -> str:
        parts = [node(op, av, icase) for op, av in items]
        return "(" + " ".join(parts) + ")" if parts else '""'

    def char_class(items: Any, icase: bool) -> str:
        negate = False
        ranges: list[str] = []
        for op, av in items:
            if op is c.NEGATE:
                negate = True
            elif op is c.LITERAL:
                codes = _case_variants(av) if icase else {av}
                ranges.extend(_class_char(x) for x in sorted(codes))
            elif op is c.RANGE:
                lo, hi = av
                ranges.append(f"{_class_char(lo)}-{_class_char(hi)}")
                if icase:
                    for x in range(max(lo, 0x41), min(hi, 0x7A) + 1):
                        ranges.extend(_class_char(y) for y in sorted(_case_variants(x) - {x}))
            elif op is c.CATEGORY:
                neg, body = _CATEGORY_CLASSES[str(av)]
                if neg and len(items) > 1:
                    raise ValueError(f"terminal {terminal}: negated category inside a class")
                negate = negate or neg
                ranges.append(body)
            else:
                raise ValueError(f"terminal {terminal}: {op} inside a character class")
        return "[" + ("^" if negate else "") + "".join(ranges) + "]"

    def node(op: Any, av: Any, icase: bool) -> str:
        if op is c.LITERAL:
            codes = _case_variants(av) if icase else {av}
            if len(codes) == 1:
                return _string_literal(chr(av))
            return "[" + "".join(_class_char(x) for x in sorted(codes)) + "]"
        if op is c.NOT_LITERAL:
            return "[^" + _class_char(av) + "]"
        if op is c.ANY:
            return "[^\\n]"
        if op is c.IN:
            return char_class(av, icase)
        if op is c.BRANCH:
            return "(" + " | ".join(node_list(alt, icase) for alt in av[1]) + ")"
        if op is c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            sub_icase = (icase or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
            return node_list(sub, sub_icase)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            lo, hi, sub = av
            body = node_list(sub, icase)
            if hi is c.MAXREPEAT:
                return f"{body}*" if lo == 0 else f"{body}+" if lo == 1 else f"{body}{{{lo},}}"
            if (lo, hi) == (0, 1):
                return f"{body}?"
            return f"{body}{{{lo},{hi}}}"
        if op is c.CATEGORY:
            neg, body = _CATEGORY_CLASSES[str(av)]
            return "[" + ("^" if neg else "") + body + "]"
        raise ValueError(f"terminal {terminal}: regex construct {op} has no EBNF form")

    parsed = p.parse(pattern)
    return node_list(list(parsed), bool(parsed.state.flags & re.IGNORECASE))


def lark_to_xgrammar_ebnf(lark_text: str, start: str = "start") -> str:
    """Translate a Lark grammar into XGrammar's (character-level, scannerless) EBNF.

    Lark's own loader expands the EBNF operators into plain rules; each terminal
    becomes a rule holding its regex, preceded by any number of `%ignore` lexemes
    (and the document may end with them). A scannerless grammar has no greedy
    lexer, so its language can be larger than Lark's (two adjacent identifiers
    need no separator): fine for replaying documents Lark accepts.
    """
    import lark

    parser = lark.Lark(lark_text, parser="earley", lexer="basic", start=start)
    terminals = {t.name: t for t in parser.terminals}

    def term_body(name: str) -> str:
        regex = terminals[name].pattern.to_regexp()
        if regex == _ESCAPED_STRING_RE:
            return "(" + _ESCAPED_STRING_EBNF + ")"
        return _regex_to_ebnf(regex, name)

    lines = []
    ignore = [term_body(n) for n in parser.ignore_tokens]
    skip = "ign " if ignore else ""
    if ignore:
        lines.append("ign ::= (" + " | ".join(ignore) + ")*")
    lines.append(f"root ::= r_{start} {skip}".rstrip())
    alternatives: dict[str, list[str]] = {}
    used_terminals: set[str] = set()
    for rule in parser.rules:
        symbols = []
        for sym in rule.expansion:
            if sym.is_term:
                used_terminals.add(sym.name)
                symbols.append(f"t_{sym.name}")
            else:
                symbols.append(f"r_{sym.name}")
        alternatives.setdefault(rule.origin.name, []).append(" ".join(symbols) or '""')
    for name, alts in alternatives.items():
        lines.append(f"r_{name} ::= " + " | ".join(f"({a})" for a in alts))
    for name in sorted(used_terminals):
        lines.append(f"t_{name} ::= {skip}{term_body(name)}")
    return "\n".join(lines) + "\n"

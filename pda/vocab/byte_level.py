"""GPT-2's byte-level alphabet: every byte is written as one printable character.

Byte-level BPE vocabularies (GPT-2, Llama 3, Qwen2, anything converted from a
tiktoken file) store each token as a string over a 256-character alphabet: the
printable bytes stand for themselves, the other 68 bytes are shifted to code
points 256..323. Decoding a token is therefore one `str.translate` to the
Latin-1 character of each byte followed by `encode("latin-1")`, both in C.
"""

from __future__ import annotations

from collections.abc import Sequence

_NOT_IN_ALPHABET = "\uffff"  # translate target for characters outside the alphabet: Latin-1 cannot encode it


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte value to the character that stands for it."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shifted)
            shifted += 1
    return mapping


def _decode_table() -> dict[int, str]:
    """`str.translate` table from alphabet characters to the Latin-1 character of their byte.

    Characters below 256 that are not in the alphabet (space, control characters)
    map to a character Latin-1 cannot encode, so a string outside the alphabet
    fails at the encode step instead of decoding to wrong bytes.
    """
    table = {c: _NOT_IN_ALPHABET for c in range(256)}
    for byte, char in bytes_to_unicode().items():
        table[ord(char)] = chr(byte)
    return table


_DECODE_TABLE = _decode_table()


def decode_byte_level(strings: Sequence[str]) -> list[bytes]:
    """Decode byte-level token strings to their bytes.

    Raises `ValueError` naming the position in `strings` of the first string
    that uses a character outside the byte-level alphabet.
    """
    # One translate and one encode over the concatenation, then slice: the
    # alphabet is one character per byte, so character offsets are byte offsets.
    joined = "".join(strings)
    try:
        blob = joined.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError as exc:
        offset = exc.start
        for position, s in enumerate(strings):
            if offset < len(s):
                raise ValueError(
                    f"string {position} ({s!r}) has {s[offset]!r}, which is not in the byte-level alphabet"
                ) from None
            offset -= len(s)
        raise AssertionError("unreachable: the failing offset lies inside the joined strings") from exc
    out: list[bytes] = []
    start = 0
    for s in strings:
        end = start + len(s)
        out.append(blob[start:end])
        start = end
    return out


def is_byte_level(strings: Sequence[str]) -> bool:
    """Whether every string is written in the byte-level alphabet."""
    try:
        "".join(strings).translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True

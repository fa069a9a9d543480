"""The regexes of the `format` values the lowering knows, exact (JSON Schema's) and for generation.

`FORMATS` is RFC 3339/4291/5321/3986 as the JSON Schema spec reads them (`exact=True`);
`GENERATION_FORMATS` differs only in dates and times, which follow what Python's
`datetime` (so Pydantic) writes and reads. Each regex is Python syntax, unanchored,
over the string's decoded characters; `format_pattern` anchors one as a `pattern`.
"""

from __future__ import annotations

# An RFC 1123 label: one letter or digit, or 2-63 characters with a letter or digit at both ends. Spelled as the
# alternation of the two (not `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`, the same language): the lexer
# composes a hostname around an alternation, built once per process through the NFA and shared by every label
# (`pda.regex.compose`), where the optional tail's `{0,61}` followed by a letter or digit cannot be composed and
# the whole hostname went through the NFA (0.39 ms against 0.60 for a quoted hostname, docs/profile.md
# "Fifty-second profile").
_LABEL = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9])"
FORMATS = {
    # RFC 3339 full-date with the real month lengths and leap years.
    "date": r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])"
            r"|(?:[02468][048]|[13579][26])00)-02-29)",
    "time": r"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]|23:59:60)(?:\.[0-9]+)?"
            r"(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}"
            r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])",
    "hostname": rf"{_LABEL}(?:\.{_LABEL})*",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
             rf"@(?:{_LABEL}(?:\.{_LABEL})*"
             r"|\[(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\])",
    "uri": r"[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*"
           r"(?:#(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?",
}
# RFC 3986 URI-reference, with the same character sets as "uri": a URI, or a relative reference
# whose first segment holds no ":" (else it would read as a scheme).
_URI_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})"
_URI_FIRST_SEGMENT_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|%[0-9A-Fa-f]{2})"
FORMATS["uri-reference"] = (rf"(?:[A-Za-z][A-Za-z0-9+.-]*:{_URI_CHAR}*"
                            rf"|{_URI_FIRST_SEGMENT_CHAR}*(?:[/?]{_URI_CHAR}*)?)(?:#{_URI_CHAR}*)?")
_H16 = r"[0-9A-Fa-f]{1,4}"
_V4 = FORMATS["ipv4"]
_LS32 = rf"(?:{_H16}:{_H16}|{_V4})"
# RFC 4291 section 2.2 as RFC 3986's IPv6address ABNF spells it: eight groups, or fewer around one
# "::" (`[ *k( h16 ":" ) h16 ] "::"` and what may follow it), the last 32 bits possibly as IPv4. The
# seven forms that end in ls32 share one copy of it (the same language as one ls32 each, a fifth of the
# text: the lexer's DFA of it built in ~2 ms, not ~7).
_IPV6_BEFORE_GAP = [rf"(?:(?:{_H16}:){{0,{k}}}{_H16})?::" for k in range(7)]
_IPV6_BEFORE_LS32 = [rf"(?:{_H16}:){{6}}", rf"::(?:{_H16}:){{5}}", *(before + after for before, after in zip(
    _IPV6_BEFORE_GAP, [rf"(?:{_H16}:){{4}}", rf"(?:{_H16}:){{3}}", rf"(?:{_H16}:){{2}}", rf"{_H16}:", ""]))]
FORMATS["ipv6"] = ("(?:(?:" + "|".join(_IPV6_BEFORE_LS32) + f"){_LS32}|{_IPV6_BEFORE_GAP[5]}{_H16}|"
                   f"{_IPV6_BEFORE_GAP[6]})")
FORMATS["date-time"] = FORMATS["date"] + "[Tt]" + FORMATS["time"]  # RFC 3339 ABNF: no space
# The generation default's dates and times: what Python's `datetime` (so Pydantic) parses and
# what Pydantic writes. RFC 3339 with the offset optional (Pydantic dumps a naive datetime as
# "2024-01-02T03:04:05"), without year 0000 and without the leap second `23:59:60`, which
# `datetime` cannot hold.
_YEAR = r"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26]|0[48])00)"
_GEN_DATE = (rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
             rf"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")
_GEN_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
# ISO 8601 duration with at least one component (and at least one after T).
FORMATS["duration"] = (r"P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
                       r"(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
                       r"|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))")
GENERATION_FORMATS = {**FORMATS, "date": _GEN_DATE, "time": _GEN_TIME, "date-time": _GEN_DATE + "[Tt]" + _GEN_TIME}


def format_pattern(regex: str) -> str:
    """A `format`'s regex as an anchored pattern (its syntax means the same in ECMA and Python)."""
    return f"^(?:{regex})$"

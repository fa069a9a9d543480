"""The shipped SQL grammars (pda/grammars/sqlite.lark, pda/grammars/postgresql.lark).

Hand-written accept/reject lists per dialect feature, the NAME terminal's keyword
exclusion, and the corpus rates (issue 7) with their floors: a deterministic sample
in the default run, every row under `--long`. Corpus-derived tests skip when
../shared/corpus is absent.
"""
from __future__ import annotations

import importlib.util
import re
import sqlite3
import sys
from functools import lru_cache
from pathlib import Path

import pytest

import pda

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("sql_corpus_check", ROOT / "bench" / "sql_corpus_check.py")
assert _spec and _spec.loader
check = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check
_spec.loader.exec_module(check)

SAMPLE = 150  # rows per corpus file in the default run


@lru_cache(maxsize=None)
def grammar(dialect: str) -> pda.Grammar:
    return pda.Grammar.from_lark(check.grammar_text(dialect), start="start")


def corpus_or_skip(dialect: str) -> None:
    if not (check.CORPUS / check.DIALECTS[dialect]).is_dir():
        pytest.skip(f"SQL corpus not found at {check.CORPUS / check.DIALECTS[dialect]}")


# ------------------------------------------------------------------ feature lists
SQLITE_ACCEPT = [
    "SELECT 1",
    "select a, b AS c, t.* FROM t",
    "SELECT * FROM a NATURAL LEFT OUTER JOIN b USING (x) CROSS JOIN c, d INNER JOIN e ON a.x = e.x",
    "SELECT a FROM t LEFT ANTI JOIN u ON 1",  # join words are checked semantically
    "WITH RECURSIVE c(x) AS (VALUES(1) UNION ALL SELECT x+1 FROM c WHERE x<5) SELECT x FROM c",
    "WITH t AS MATERIALIZED (SELECT 1) SELECT * FROM t",
    "SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v EXCEPT SELECT 1 ORDER BY 1 LIMIT 3 OFFSET 1",
    "SELECT a, count(*) FROM t GROUP BY a HAVING count(*) > 1 ORDER BY a DESC NULLS LAST LIMIT 5, 10",
    "SELECT sum(x) OVER (PARTITION BY y ORDER BY z ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) FROM t",
    "SELECT rank() OVER w, count(*) FILTER (WHERE x) OVER w FROM t WINDOW w AS (ORDER BY x RANGE 2 PRECEDING)",
    "SELECT (SELECT 1), EXISTS (SELECT 1), x IN (SELECT y FROM u), x NOT IN (1, 2), x IN t, x IN ()",
    "SELECT CASE WHEN a THEN b WHEN c THEN d ELSE e END, CASE x WHEN 1 THEN 2 END",
    "SELECT CAST(x AS VARCHAR(10)), x COLLATE nocase, x LIKE 'a%' ESCAPE '\\', x NOT GLOB 'a*', x REGEXP 'b', x MATCH 'c'",
    "SELECT a IS NOT DISTINCT FROM b, a IS DISTINCT FROM b, a IS NOT NULL, a ISNULL, a NOTNULL, a NOT NULL",
    "SELECT a BETWEEN 1 AND 2, a NOT BETWEEN b AND c OR d",
    "SELECT j -> '$.a', j ->> 'b', 1 || 2, ~1, -+1, 1 << 2 & 3 | 4, 5 % 2, NOT 0, 1 + NOT 0",
    "SELECT x'0aFF', X'', 1.5e10, .5, 1., 0x1F, 'it''s', NULL, TRUE, current_timestamp",
    "SELECT ?, ?12, :name, @name, $name, $a::b(c)",
    'SELECT "quoted id", [bracket id], `backtick id`, "a""b" FROM "t"',
    "SELECT a -- comment\n FROM /* block\n comment */ t",
    "SeLeCt A fRoM T wHeRe B",
    "SELECT abort, key, replace, rowid, action, window, over, filter FROM temp",
    "SELECT replace(a, 'b', 'c'), like(a, b), left, right FROM t",
    "VALUES (1, 2), (3, 4)",
    "INSERT OR REPLACE INTO t (a, b) VALUES (1, 2) RETURNING *",
    "INSERT INTO t SELECT * FROM u WHERE true ON CONFLICT (a) DO UPDATE SET b = excluded.b WHERE 1 ON CONFLICT DO NOTHING",
    "REPLACE INTO t DEFAULT VALUES",
    "UPDATE OR IGNORE t SET a = 1, (b, c) = (2, 3) FROM u WHERE t.x = u.x RETURNING a",
    "UPDATE t SET a = 1 ORDER BY b LIMIT 1",
    "DELETE FROM main.t INDEXED BY i WHERE a = 1 RETURNING *",
    "CREATE TEMP TABLE IF NOT EXISTS s.t (a INTEGER PRIMARY KEY AUTOINCREMENT, b TEXT NOT NULL DEFAULT 'x' COLLATE nocase, "
    "c REAL CHECK (c > 0) REFERENCES u(x) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, d GENERATED ALWAYS AS (a + 1) STORED, "
    "e UNIQUE ON CONFLICT REPLACE, CONSTRAINT pk UNIQUE (b, c), FOREIGN KEY (a) REFERENCES u) WITHOUT ROWID, STRICT",
    "CREATE TABLE t AS SELECT * FROM u",
    "CREATE UNIQUE INDEX IF NOT EXISTS i ON t (a COLLATE nocase DESC, b) WHERE a > 0",
    "CREATE VIEW v (a, b) AS SELECT 1, 2",
    "CREATE TRIGGER tr AFTER UPDATE OF a ON t FOR EACH ROW WHEN new.a > 0 BEGIN "
    "INSERT INTO log VALUES (new.a); SELECT RAISE(ABORT, 'no'); DELETE FROM x WHERE y; END",
    "CREATE VIRTUAL TABLE ft USING fts5(a, b, tokenize = 'porter unicode61', prefix='2 3')",
    "ALTER TABLE t RENAME COLUMN a TO b",
    "ALTER TABLE t ADD COLUMN c INT DEFAULT -1",
    "ALTER TABLE t DROP COLUMN c",
    "DROP TABLE IF EXISTS main.t",
    "BEGIN IMMEDIATE TRANSACTION; SAVEPOINT s; RELEASE s; ROLLBACK TO SAVEPOINT s; COMMIT",
    "PRAGMA main.cache_size = -2000",
    "PRAGMA table_info(t)",
    "EXPLAIN QUERY PLAN SELECT 1",
    "ATTACH DATABASE 'f.db' AS aux",
    "VACUUM INTO 'x.db'",
    ";;SELECT 1;; SELECT 2;",
    "SELECT 0x1g",
    "SELECT 1 'b'",
    "SELECT * FROM t like",
    "SELECT count(all) FROM t",
    "WITH RECURSIVE recursive AS (SELECT 1) SELECT 1",
    "INSERT INTO t SELECT * FROM u WHERE 1 ON CONFLICT DO NOTHING",
    "CREATE VIRTUAL TABLE v USING m(a.b + 1, x'00' ?3 $x; select)",
]
SQLITE_REJECT = [
    "",
    "SELECT",
    "SELECT FROM t",
    "SELECT a FROM select",
    "SELECT a, FROM t",
    "SELECT * FROM t WHERE",
    "SELCT 1",
    "SELECT 'abc' REGEXP",
    "SELECT x'0G'",
    "SELECT (1",
    "SELECT 'unterminated",
    "INSERT INTO t VALUES",
    "SELECT sum(x) OVER (ORDER BY x ROWS UNBOUNDED FOLLOWING) FROM t",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND UNBOUNDED PRECEDING) FROM t",
    "DROP t",
    "SELECT 1 2",
    # basic lexer mode, Lemon's fallback and upsert rules (docs/sql.md)
    "SELECT cast.*",
    "SELECT current_time()",
    "SELECT left(1)",
    "SELECT 123abc",
    "SELECT 1e5x",
    "selectx 1",
    "CREATE VIRTUAL TABLE v USING m(0aa)",
    "INSERT INTO t SELECT * FROM u ON CONFLICT DO NOTHING",
    "INSERT INTO t SELECT 1 ON CONFLICT DO NOTHING ON CONFLICT DO NOTHING",
    "WITH recursive AS (SELECT 1) SELECT 1",
    "SELECT 1 WINDOW indexed AS ()",
    "SELECT count(*) OVER (range) FROM t",
    "CREATE TABLE if(a)",
    "DROP TABLE if",
    "RELEASE savepoint",
    "CREATE TABLE x(a) without",
    "CREATE TABLE x(a indexed)",
]
SQLITE_PREFIX = ["SELECT a FROM", "SELECT a, b FROM t WHERE a =", "CREATE TABLE t (a INT,", "WITH x AS (SELECT 1)"]

POSTGRES_ACCEPT = [
    "SELECT 1",
    "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b DESC NULLS FIRST",
    "SELECT * FROM t1 FULL OUTER JOIN t2 USING (id) LEFT JOIN LATERAL (SELECT * FROM t3 WHERE t3.x = t1.x) s ON true",
    "SELECT * FROM a NATURAL JOIN b CROSS JOIN c",
    "SELECT count(*) FILTER (WHERE x > 0), percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM t",
    "SELECT a, b, sum(c) FROM t GROUP BY GROUPING SETS ((a), (b), ()), ROLLUP (a, b), CUBE (a)",
    "SELECT * FROM t ORDER BY a OFFSET 5 ROWS FETCH FIRST 10 ROWS ONLY",
    "SELECT * FROM t FOR UPDATE OF t SKIP LOCKED",
    "SELECT * FROM t FOR NO KEY UPDATE NOWAIT",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT * FROM r",
    "SELECT rank() OVER (PARTITION BY a ORDER BY b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t",
    "SELECT x::int, '1'::numeric(10, 2), y::text[], CAST(z AS double precision), w::varchar(3)[]",
    "SELECT ARRAY[1, 2, 3], ARRAY[[1, 2], [3, 4]], a[1], a[1:2], a[:3], ARRAY(SELECT 1)",
    "SELECT ROW(1, 2), (1, 2), (a).b, (a).*",
    "SELECT $$dollar 'quoted'$$, $body$x$body$, E'esc\\'aped', U&'d\\0061t', B'0101', X'1F'",
    "SELECT a ~ 'x', a !~* 'y', a @> b, a <@ b, a && b, a || b, j -> 'k', j ->> 'k', j #> '{a}', j ?| array['a'], a - -1",
    "SELECT a ILIKE 'x%', a NOT SIMILAR TO 'y' ESCAPE '#', a IS NOT DISTINCT FROM b, a BETWEEN SYMMETRIC 1 AND 2",
    "SELECT now() AT TIME ZONE 'UTC', interval '1 day', INTERVAL '1' YEAR TO MONTH, timestamp with time zone '2020-01-01'",
    "SELECT $1, $2::int",
    "SELECT 1 /* outer /* nested */ still comment */ + 2 -- line",
    "SELECT a AS select, b AS from FROM t",
    "SELECT left('abc', 2), coalesce(a, b), extract(year from d), substring(s from 1 for 2), trim(both 'x' from s), position('a' in s)",
    "SELECT name, type, key, action, value FROM data",
    "SELECT x = ANY (ARRAY[1, 2]), y < ALL (SELECT 1), EXISTS (SELECT 1)",
    "INSERT INTO t (a, b) VALUES (1, DEFAULT) ON CONFLICT (a) DO UPDATE SET b = excluded.b WHERE t.b < 3 RETURNING *",
    "INSERT INTO t SELECT * FROM u ON CONFLICT ON CONSTRAINT c DO NOTHING",
    "UPDATE t SET (a, b) = (1, 2), c = DEFAULT FROM u WHERE t.id = u.id RETURNING t.*",
    "DELETE FROM ONLY t USING u WHERE t.id = u.id RETURNING id",
    "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.x THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v) WHEN MATCHED THEN DELETE",
    "CREATE TABLE IF NOT EXISTS s.t (id serial PRIMARY KEY, name varchar(20) NOT NULL DEFAULT 'x', "
    "price numeric(10, 2) CHECK (price > 0), tags text[], ref int REFERENCES u (id) ON DELETE CASCADE, "
    "CONSTRAINT uq UNIQUE (name), FOREIGN KEY (ref) REFERENCES u)",
    "CREATE TEMP TABLE t AS SELECT 1 WITH NO DATA",
    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON t USING btree (lower(a), b DESC) WHERE a IS NOT NULL",
    "CREATE OR REPLACE VIEW v AS SELECT 1",
    "CREATE MATERIALIZED VIEW mv AS SELECT 1 WITH DATA",
    "CREATE SEQUENCE s INCREMENT BY 2 START WITH 10 NO CYCLE",
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    "ALTER TABLE t ADD COLUMN c int, ALTER COLUMN d TYPE text USING d::text, DROP CONSTRAINT k",
    "ALTER TABLE t RENAME TO u",
    "DROP TABLE IF EXISTS a, b CASCADE",
    "BEGIN ISOLATION LEVEL SERIALIZABLE; SAVEPOINT s; ROLLBACK TO s; COMMIT",
    "EXPLAIN (ANALYZE, COSTS off) SELECT 1",
    "SET search_path TO public, other",
    "TRUNCATE t RESTART IDENTITY",
    # statement kinds beyond issue 7's list (the regression suite uses them all)
    "CREATE OR REPLACE FUNCTION f(a int, OUT b text DEFAULT 'x', VARIADIC c int[]) RETURNS SETOF t.c%TYPE "
    "LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$ begin return; end $$",
    "CREATE FUNCTION f() RETURNS TABLE (a int, b text) RETURN 1",
    "CREATE PROCEDURE p(INOUT a int) BEGIN ATOMIC SELECT 1; SELECT 2; END",
    "DROP FUNCTION IF EXISTS f(int), g CASCADE",
    "DROP AGGREGATE a(float8 ORDER BY anyelement)",
    "CREATE TRIGGER t BEFORE INSERT OR UPDATE OF a, b ON s.t REFERENCING NEW TABLE AS n FOR EACH ROW "
    "WHEN (NEW.a > 0) EXECUTE FUNCTION f('x', 1)",
    "CREATE RULE r AS ON UPDATE TO t WHERE new.a <> old.a DO INSTEAD (DELETE FROM u; NOTIFY c)",
    "CREATE POLICY p ON t AS RESTRICTIVE FOR SELECT TO PUBLIC, CURRENT_USER USING (a % 2 = 0) WITH CHECK (true)",
    "CREATE DOMAIN d AS int CONSTRAINT c CHECK (VALUE > 0) NOT NULL",
    "CREATE ROLE r WITH LOGIN NOINHERIT PASSWORD 'x' VALID UNTIL 'infinity' IN ROLE a, b",
    "GRANT SELECT (a, b), INSERT ON ALL TABLES IN SCHEMA s TO r WITH GRANT OPTION",
    "REVOKE GRANT OPTION FOR ALL PRIVILEGES ON FUNCTION f(int) FROM PUBLIC CASCADE",
    "ALTER DEFAULT PRIVILEGES FOR ROLE a IN SCHEMA s GRANT USAGE ON TYPES TO PUBLIC",
    "CREATE AGGREGATE a(int4) (SFUNC = f(int8, int4), STYPE = int8, INITCOND = '0', PARALLEL = SAFE)",
    "CREATE OPERATOR === (LEFTARG = bool, RIGHTARG = bool, PROCEDURE = f, COMMUTATOR = ===, NEGATOR = !==, HASHES)",
    "COPY t (a, b) FROM STDIN WITH (FORMAT csv, FORCE_NOT_NULL (a), DEFAULT '\\D')",
    "COPY (SELECT 1) TO STDOUT",
    "DECLARE c SCROLL CURSOR WITH HOLD FOR SELECT 1; FETCH BACKWARD 2 FROM c; CLOSE c",
    "COMMENT ON CONSTRAINT c ON DOMAIN d IS 'x'",
    "LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE NOWAIT",
    "SELECT JSON_VALUE(j, '$.a' PASSING 1 AS x RETURNING int DEFAULT 0 ON EMPTY ERROR ON ERROR), "
    "JSON_QUERY(j, '$' WITH CONDITIONAL WRAPPER KEEP QUOTES), JSON_OBJECT('a': 1 ABSENT ON NULL WITH UNIQUE KEYS)",
    "SELECT * FROM JSON_TABLE(jsonb '[]', '$[*]' COLUMNS (id FOR ORDINALITY, a int PATH '$.a' NULL ON EMPTY)) jt",
    "SELECT xmlelement(name e, xmlattributes(1 AS a), 'x'), xmlserialize(DOCUMENT d AS text NO INDENT)",
    "SELECT int4 '1', box '(1,1)' @> p, (a, b) OVERLAPS (c, d), a=-1, b*-2, f(x =>-1) FROM current_date",
    "SELECT 1 FROM a JOIN b JOIN c ON b.x = c.x ON a.x = b.x ORDER BY a USING <",
    "SELECT E'\\ud83d\\ude00', U&'\\d83d\\de00', N'national'",
    # scan.l's numbers (basic lexer: a number ends where PostgreSQL's does)
    "SELECT 0x1F, 0o17, 0b101, 1_000_000, 1e1_0, .5e-3, $2147483647::int, 1::char(2147483647)",
    "UPDATE t SET a=-3, b=+1 WHERE c=-1",
    "SELECT a ||/ b, |/ 4, a -|- b, !!a, a <-> b -- comment",
    "CREATE TABLE t (a int) WITH (fillfactor=-1)",
    "SELECT a LIKE ANY (ARRAY['x']), a = ANY (ARRAY[1]) = true",
    "SELECT 1 ORDER BY 1 FETCH FIRST ROW WITH TIES FOR UPDATE NOWAIT",
    "SELECT * FROM ROWS FROM (f() AS (a int), g()) WITH ORDINALITY AS x (a, b)",
    "CREATE TABLE t (a int, CHECK (a > 0) NOT VALID NO INHERIT, "
    "FOREIGN KEY (a) REFERENCES u DEFERRABLE INITIALLY DEFERRED NOT ENFORCED)",
    "CREATE TABLE p PARTITION OF t FOR VALUES WITH (MODULUS 4, REMAINDER 1)",
    "CREATE TRIGGER t AFTER UPDATE OR DELETE OR INSERT ON t FOR EACH STATEMENT EXECUTE FUNCTION f()",
    "CREATE CONSTRAINT TRIGGER c AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION f()",
]
POSTGRES_REJECT = [
    "",
    "SELECT a FROM select",
    "SELECT * FROM t WHERE",
    "SELECT a, FROM t",
    "SELEC 1",
    "SELECT 'unterminated",
    "SELECT (1",
    "SELECT a b c FROM t",
    "INSERT INTO t VALUES",
    "SELECT 1 /* unclosed",
    "SELECT * FROM t JOIN u",
    "UPDATE t SET",
    "DROP TABLE",
    # found by bench/sql_fuzz.py (the grammar used to accept them)
    "SELECT ROW() OVERLAPS ROW()",
    "SELECT $function$x$fn$",
    "EXPLAIN (case) SELECT",
    "CREATE ROLE session_user",
    "TRUNCATE a.b.c.d",
    "SELECT ()",
    "START TRANSACTION TRANSACTION",
    "DELETE FROM t AS u (a)",
    "LOCK ONLY t *",
    "CREATE SERVER s FOREIGN DATA WRAPPER w OPTIONS (a)",
    "CREATE PUBLICATION p FOR CURRENT_SCHEMA",
    "CREATE PROCEDURE p() RETURNS int",
    "SELECT int(1)",
    "SELECT E'\\udb99'",
    "CREATE OPERATOR => (rightarg = int8, procedure = f)",
    # scan.l: trailing junk, glued keywords, integer and parameter bounds
    "SELECT 123abc",
    "SELECT 0x0y",
    "SELECT 1e",
    "SELECT 1_000._5",
    "selecta 1",
    "CREATEE TABLE t (a int)",
    "releasesavepoint s",
    "SELECT 1::char(2147483648)",
    "SELECT 1::int[0x80000000]",
    "SELECT $2147483648",
    "SELECT 1 --x\rFROM",
    # found by the fuzzer after issue 7's first round (gram.y's checks and rule shapes)
    "MOVE 2.0 c",
    "DROP OPERATOR ^ (NONE, NONE)",
    "SELECT 1 FETCH NEXT ROW WITH TIES",
    "SELECT 1 ORDER BY 1 FETCH FIRST ROW WITH TIES FOR UPDATE SKIP LOCKED",
    "((SELECT 1 LIMIT 1)) LIMIT 1",
    "SELECT DISTINCT INTO x FROM t",
    "SELECT 1 = 2 = 3",
    "SELECT a LIKE b LIKE c",
    "SELECT a IS DISTINCT FROM b IS NULL",
    "SELECT 1 BETWEEN DEFAULT AND 2",
    "SELECT f(DISTINCT VARIADIC a)",
    "SELECT sum(x) OVER (ROWS UNBOUNDED FOLLOWING)",
    "SELECT * FROM ROWS FROM (f() WITH ORDINALITY)",
    "SELECT * FROM ROWS FROM (f()) (a)",
    "INSERT INTO t (a) DEFAULT VALUES",
    "CREATE VIEW v WITHOUT OIDS AS SELECT 1",
    "CREATE RECURSIVE VIEW v AS SELECT 1",
    "CREATE INDEX ON t (a) WITHOUT OIDS",
    "CREATE TYPE t AS RANGE (a.b = c)",
    "CREATE TABLE t (a int STORAGE outer)",
    "CREATE TABLE t (a int UNIQUE INCLUDE (b))",
    "CREATE TABLE t (a int NOT NULL NOT VALID)",
    "CREATE TABLE t (a int, UNIQUE (a) NOT VALID)",
    "CREATE TABLE t (a int, CHECK (a > 0) DEFERRABLE)",
    "CREATE TABLE t (a int REFERENCES u ON DELETE CASCADE ON DELETE CASCADE)",
    "CREATE TABLE t (a int REFERENCES u ON UPDATE SET NULL (a))",
    "CREATE TABLE t (a int) PARTITION BY foo (a)",
    "CREATE TABLE p PARTITION OF t FOR VALUES WITH (modulus 2, remainder 1, modulus 3)",
    "CREATE TRIGGER x AFTER INSERT OR INSERT ON t EXECUTE FUNCTION f()",
    "CREATE TRIGGER x AFTER INSERT ON t FROM u FOR EACH ROW EXECUTE FUNCTION f()",
    "CREATE CONSTRAINT TRIGGER x AFTER INSERT ON t EXECUTE FUNCTION f()",
    "CREATE SCHEMA IF NOT EXISTS s CREATE TABLE t (a int)",
    "CREATE SCHEMA s GRANT r TO u",
    "CREATE SERVER s FOREIGN DATA WRAPPER w OPTIONS (ADD a 'b')",
    "CREATE FUNCTION f() RETURNS TABLE (setof int)",
    "DROP FUNCTION f(a int = 1)",
    "DROP SCHEMA a.b",
    "ALTER INDEX a SET SCHEMA b",
    "ALTER TYPE IF EXISTS a RENAME TO b",
    "ALTER DOMAIN d ADD NOT NULL NOT VALID",
    "ALTER PUBLICATION p SET TABLE t, CURRENT_SCHEMA",
    "LOCK t IN SHARE EXCLUSIVE MODE",
    "COPY t TO 'f' WHERE a",
    "EXPLAIN CREATE VIEW v AS SELECT 1",
    "SECURITY LABEL ON LANGUAGE a.b IS 'x'",
    "GRANT ALL ON TABLESPACE a.b TO r",
    "COMMENT ON SCHEMA a.b IS 'x'",
    "SET ROLE DEFAULT",
    "SET TIME ZONE true",
    "SET x TO constraint",
    "COMMENT ON TYPE precision IS 'x'",
    "CREATE SEQUENCE s AS int[]",
    "ALTER TABLE t DISABLE ALWAYS TRIGGER x",
    "SELECT E'\\0'",
    "SELECT E'\\400'",
    "SELECT U&'\\0000'",
    "SELECT a @-- b",
    "SELECT a < b < c",
    "DROP TYPE json_value.x",
    "CREATE FUNCTION f(INOUT a int) RETURNS TABLE (b int) AS 'x'",
    "CREATE TABLE t (a int REFERENCES u MATCH PARTIAL)",
    "ALTER ROLE a SYSID 1",
    "REINDEX SCHEMA a.b",
    "REVOKE end OPTION FOR SELECT FROM r",
    "CREATE TABLESPACE t LOCATION 'x' WITH (a = precision)",
    "CREATE TABLE t (a int, UNIQUE (a b WITHOUT OVERLAPS))",
    "ALTER INDEX i ALTER COLUMN 0 SET STATISTICS 1",
    "SELECT 1::float(54)",
    "SET TIME ZONE INTERVAL '1' DAY",
]
# Valid PostgreSQL the grammar rejects by design: the bounds on the non-regular lexemes.
POSTGRES_OUTSIDE_BOUNDS = [
    "SELECT $tag_not_listed$x$tag_not_listed$",
    "SELECT 1 /* 1 /* 2 /* 3 /* 4 /* 5 */ */ */ */ */",
]
POSTGRES_PREFIX = ["SELECT a FROM", "SELECT a::", "INSERT INTO t (a) VALUES (1) ON CONFLICT", "SELECT 1 /* open"]

CASES = {
    "sqlite": (SQLITE_ACCEPT, SQLITE_REJECT, SQLITE_PREFIX),
    "postgresql": (POSTGRES_ACCEPT, POSTGRES_REJECT, POSTGRES_PREFIX),
}


@pytest.mark.parametrize("dialect", sorted(CASES))
def test_feature_accept_list(dialect: str) -> None:
    g = grammar(dialect)
    rejected = [s for s in CASES[dialect][0] if not g.accepts(s)]
    assert rejected == []


@pytest.mark.parametrize("dialect", sorted(CASES))
def test_feature_reject_list(dialect: str) -> None:
    g = grammar(dialect)
    accepted = [s for s in CASES[dialect][1] if g.accepts(s)]
    assert accepted == []


def test_postgres_bounds_are_enforced() -> None:
    g = grammar("postgresql")
    assert [s for s in POSTGRES_OUTSIDE_BOUNDS if g.accepts(s)] == []
    assert g.accepts("SELECT 1 /* 1 /* 2 /* 3 */ */ */")


@pytest.mark.parametrize("dialect", sorted(CASES))
def test_viable_prefixes(dialect: str) -> None:
    g = grammar(dialect)
    for text in CASES[dialect][2]:
        assert g.accepts_prefix(text), text
        assert not g.accepts(text), text


def _syntax_ok_sqlite(sql: str) -> bool:
    db = sqlite3.connect(":memory:")
    try:
        db.execute("EXPLAIN " + sql if not sql.lstrip().upper().startswith("EXPLAIN") else sql)
    except sqlite3.ProgrammingError:
        return True
    except sqlite3.Error as e:
        return not re.search(r"syntax error|incomplete input|unrecognized token", str(e))
    finally:
        db.close()
    return True


def test_sqlite_lists_agree_with_sqlite3() -> None:
    """The hand-written SQLite lists are themselves checked by the real parser."""
    for sql in SQLITE_ACCEPT:
        # Trigger bodies and virtual-table arguments hold their own semicolons; other
        # items are statement lists.
        statements = [sql] if "TRIGGER" in sql or "VIRTUAL" in sql else [t for t in sql.split(";") if t.strip()]
        for stmt in statements:
            assert _syntax_ok_sqlite(stmt), stmt
    for sql in SQLITE_REJECT:
        assert not _syntax_ok_sqlite(sql), sql


def test_postgres_lists_agree_with_pglast() -> None:
    pglast = pytest.importorskip("pglast")
    for sql in POSTGRES_ACCEPT + POSTGRES_OUTSIDE_BOUNDS:
        pglast.parse_sql(sql)
    for sql in POSTGRES_REJECT:
        if sql:  # pglast accepts the empty string as zero statements; pda's start needs one
            with pytest.raises(pglast.parser.ParseError):
                pglast.parse_sql(sql)


# ------------------------------------------------------------------ NAME terminal
@pytest.mark.parametrize("dialect", sorted(CASES))
def test_name_terminal_is_current(dialect: str) -> None:
    """NAME must be exactly the identifiers minus the excluded keywords; regenerate with
    `python bench/sql_corpus_check.py --name-regex DIALECT` after editing keywords."""
    text = check.grammar_text(dialect)
    found = re.search(r"^NAME: /(.*)/$", text, re.M)
    assert found, "NAME terminal missing"
    assert found.group(1) == check.name_regex(dialect, text)


def test_name_regex_is_the_keyword_complement() -> None:
    words = ["select", "sel", "in", "int", "current_date"]
    rx = re.compile(check.identifier_complement_regex(words))
    for w in words:
        for variant in (w, w.upper(), w.capitalize()):
            assert not rx.fullmatch(variant), variant
    for ident in ["s", "se", "selects", "i", "inte", "current_", "current_dates", "_x", "a$", "é", "Sel1", "ſel"]:
        assert rx.fullmatch(ident), ident
    for bad in ["", "1a", "$a", "a b"]:
        assert not rx.fullmatch(bad), bad


# ------------------------------------------------------------------ PostgreSQL number terminals
def _terminal_regex(dialect: str, name: str) -> re.Pattern[str]:
    found = re.search(rf"^{name}(?:\.-?\d+)?: /(.*)/$", check.grammar_text(dialect), re.M)
    assert found, f"{name} terminal missing"
    return re.compile(found.group(1))


def _pg_int32(text: str) -> bool:
    """scan.l + pg_strtoint32: is `text` an integer literal that fits in 32 bits?"""
    forms = {"": (r"[0-9](?:_?[0-9])*", 10), "0x": (r"(?:_?[0-9a-f])+", 16), "0o": (r"(?:_?[0-7])+", 8), "0b": (r"(?:_?[01])+", 2)}
    low = text.lower()
    prefix = low[:2] if low[:2] in forms else ""
    pattern, base = forms[prefix]
    body = low[len(prefix):]
    return re.fullmatch(pattern, body) is not None and int(body.replace("_", ""), base) < 2**31


def test_iconst_is_the_32_bit_integers() -> None:
    """ICONST (gram.y's Iconst positions) against Python's int() on random literals."""
    import random

    rx = _terminal_regex("postgresql", "ICONST")
    rnd = random.Random(5)
    cases = ["0", "0_0", "2147483647", "2147483648", "0x7fffffff", "0X80000000", "0o17777777777", "0o20000000000",
             "0b" + "1" * 31, "0b1" + "0" * 31, "00000000002147483647", "2_147_483_647", "1__0", "1_", "0x", "0x_1", "_1"]
    for _ in range(3000):
        prefix, digits, base = rnd.choice([("", "0123456789", 10), ("0x", "0123456789abcdefABCDEF", 16), ("0o", "01234567", 8), ("0b", "01", 2)])
        value = rnd.choice([rnd.randrange(2**40), 2**31 + rnd.randrange(-3, 3), rnd.randrange(100)])
        body = {10: str, 16: lambda v: format(v, "X"), 8: lambda v: format(v, "o"), 2: lambda v: format(v, "b")}[base](value)
        body = "0" * rnd.randrange(3) + body
        cases.append(prefix + "".join(c + ("_" if rnd.random() < 0.15 else "") for c in body).rstrip("_"))
        cases.append(prefix + "".join(rnd.choice(digits + "_") for _ in range(rnd.randrange(1, 12))))
    assert [c for c in cases if bool(rx.fullmatch(c)) != _pg_int32(c)] == []


def test_parameter_numbers_fit_in_32_bits() -> None:
    rx = _terminal_regex("postgresql", "VARIABLE")
    for n in ["0", "1", "00001", "2147483647", "0002147483647"]:
        assert rx.fullmatch("$" + n), n
    for n in ["2147483648", "9999999999", "1_0", ""]:
        assert not rx.fullmatch("$" + n), n


def _scan_l_operator_run(run: str) -> bool:
    """scan.l's {operator} rule: is the run of operator characters returned whole (not cut
    at a comment start, no trailing + or - stripped)?"""
    if "--" in run or "/*" in run:
        return False
    return run[-1] not in "+-" or any(c in "~!@#%^&|`?" for c in run[:-1])


def test_operator_terminal_follows_scan_l() -> None:
    """OPERATOR against scan.l's rule on every run of up to four operator characters (the
    one- and two-character operators with their own terminals outrank it)."""
    import itertools

    rx = _terminal_regex("postgresql", "OPERATOR")
    chars = "*/<>=~!@#%^&|`?+-"
    runs = ("".join(p) for n in range(1, 5) for p in itertools.product(chars, repeat=n))
    assert [r for r in runs if bool(rx.fullmatch(r)) != _scan_l_operator_run(r)] == []


# ------------------------------------------------------------------ corpus rates
def _assert_floors(dialect: str, tally) -> None:
    low = {c: round(tally.rate(c), 4) for c, f in check.FLOORS.items() if tally.total[c] and tally.rate(c) < f}
    assert low == {}, {c: [r["id"] for r in tally.failures.get(c, [])[:10]] for c in low}


CORPUS_DIALECTS = ["sqlite", "postgresql"]


@pytest.mark.parametrize("dialect", CORPUS_DIALECTS)
def test_corpus_rates_sample(dialect: str) -> None:
    corpus_or_skip(dialect)
    g = grammar(dialect)
    _assert_floors(dialect, check.evaluate(dialect, g.accepts, g.accepts_prefix, SAMPLE))


@pytest.mark.slow
@pytest.mark.parametrize("dialect", CORPUS_DIALECTS)
def test_corpus_rates_full(dialect: str) -> None:
    corpus_or_skip(dialect)
    g = grammar(dialect)
    _assert_floors(dialect, check.evaluate(dialect, g.accepts, g.accepts_prefix, None))


# ------------------------------------------------------------------ soundness by sampling
_spec_fuzz = importlib.util.spec_from_file_location("sql_fuzz", ROOT / "bench" / "sql_fuzz.py")
assert _spec_fuzz and _spec_fuzz.loader
sql_fuzz = importlib.util.module_from_spec(_spec_fuzz)
sys.modules[_spec_fuzz.name] = sql_fuzz
_spec_fuzz.loader.exec_module(sql_fuzz)

# Share of sampled statements the real parser accepts (docs/sql.md); issue 7's target is
# 0.99 over 5,000 (the --long runs). The fast runs are small samples (PostgreSQL's pays
# ~10 s of lexer-table warm-up for its own Grammar), so their floors leave room for noise.
FUZZ_FLOORS = {"sqlite": 0.99, "postgresql": 0.99}
FAST_FUZZ_FLOORS = {"sqlite": 0.99, "postgresql": 0.95}
FAST_FUZZ_SAMPLES = {"sqlite": 150, "postgresql": 80}


def _real_parser_or_skip(dialect: str) -> None:
    if dialect == "postgresql":
        pytest.importorskip("pglast")


@pytest.mark.parametrize("dialect", sorted(FUZZ_FLOORS))
def test_sampled_statements_pass_the_real_parser(dialect: str) -> None:
    _real_parser_or_skip(dialect)
    n = FAST_FUZZ_SAMPLES[dialect]
    report = sql_fuzz.fuzz(dialect, n, seed=7, keep=0)
    assert report.samples == n
    assert report.rate >= FAST_FUZZ_FLOORS[dialect], report.rejected[:5]


@pytest.mark.slow
@pytest.mark.parametrize("dialect", sorted(FUZZ_FLOORS))
def test_sampled_statements_pass_the_real_parser_5000(dialect: str) -> None:
    _real_parser_or_skip(dialect)
    report = sql_fuzz.fuzz(dialect, 5000, seed=0, keep=10)
    print(report.to_text())
    assert report.rate >= FUZZ_FLOORS[dialect], report.counterexamples

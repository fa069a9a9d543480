/* pda.kernels._derive: byte regexes as hash-consed terms, their Brzozowski derivatives, and lazy DFAs.
 *
 * Written against the plain Python C API (no numpy); pda/kernels/derive.py is the Python side and
 * documents the interface. The core (everything above "Python objects") touches no Python object:
 * plain C structs, PyMem_Raw* memory and a PyThread lock, failures as E_* codes, so a C caller can
 * step a lazy DFA without the GIL (the capsule _C_API, see DeriveAPI).
 *
 * Terms live in an Arena, hash-consed (equal terms are one id, whatever DFA or grammar built them):
 *     EMPTY (no word), EPS (the empty word), BYTES (a set of bytes: the words of one byte),
 *     CONCAT(a, b), OR(kids), AND(kids), NOT(a), REPEAT(a, lo, hi or -1: unbounded), FIRST(a)
 *     (the words of a with no proper prefix in a: first-match, lazy terminals).
 * Smart constructors normalise: CONCAT is right-nested (its left part is never a CONCAT), EMPTY and
 * EPS vanish from it; OR and AND are flat, sorted by id, without duplicates, their BYTES kids merged
 * into one, EMPTY and FULL (= NOT EMPTY) absorbed; NOT NOT a = a; REPEAT never unrolls a count
 * (its derivative is CONCAT(d(a), REPEAT(a, lo-1, hi-1))), and a nullable body makes lo 0. So the
 * derivatives of a term are finitely many (Brzozowski, with sets for OR and AND), and a counted
 * repeat's cost is what is visited, not its count.
 *
 * Invariants:
 * - terms 0, 1, 2 are EMPTY, EPS and FULL; a term's kids have lower ids (terms are only appended);
 * - a term's `nullable` and its structural `live` (known or LIVE_UNKNOWN) are set when it is made;
 *   `part` (the partition of the 256 bytes into classes its derivative cannot tell apart, from the
 *   BYTES leaves at its front) and `deriv` (its derivative per class) are filled on first need;
 * - everything of an Arena is read and written under its lock, except what a lazy DFA publishes
 *   (below);
 * - a Lazy's states are terms, numbered densely from 0 (the start); its dead state is the EMPTY
 *   term, and every term whose language is empty maps to it, so every other state is live. A state
 *   holds its term's byte classes and a row of int32 successors per class (-1: not yet computed);
 *   states sit in chunks (chunk k holds 16 << k), rows in slabs and partitions alone, none of
 *   which moves once allocated; a row entry is written once, with release order, after the state it
 *   names is complete, so a reader needs no lock for a filled entry (a row per class, not per byte:
 *   `.{50000}` read whole holds 50,000 states, ~50 bytes each where 256 int32 took 1 KB);
 * - the Arena counts the bytes it and its DFAs hold (`nbytes`); making a term, a derivative memo or
 *   a state that would pass `max_bytes` fails with E_LIMIT and changes nothing already built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ failure codes */

#define E_NOMEM 1  /* an allocation failed */
#define E_LIMIT 2  /* the arena would pass its byte budget */
#define E_STATES 3 /* a lazy DFA would pass its max_states */
#define E_DEPTH 4  /* a term nests deeper than MAX_DEPTH (the recursion's bound) */

/* Recursion through a term's structure stops here (E_DEPTH): ~160 bytes of C stack a level (derive's frame;
 * what holds a Partition is kept out of the recursion), so a thread of 256 KB runs it. */
#define MAX_DEPTH 1000

enum { K_EMPTY, K_EPS, K_BYTES, K_CONCAT, K_OR, K_AND, K_NOT, K_REPEAT, K_FIRST };
enum { LIVE_UNKNOWN, LIVE_YES, LIVE_NO };
enum { T_EMPTY = 0, T_EPS = 1, T_FULL = 2 };

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else
#define NOINLINE
#define LOAD_ACQUIRE(p) (*(volatile int32_t *)(p))
#define STORE_RELEASE(p, v) (*(volatile int32_t *)(p) = (v))
#endif

typedef struct {
    uint8_t kind, nullable, live;
    int32_t a, b;   /* CONCAT: a, b; NOT, REPEAT, FIRST: a; OR, AND: kids[a .. a + b); BYTES: masks[a] */
    int32_t lo, hi; /* REPEAT: hi -1 is unbounded */
    int32_t part;   /* partition id, -1 until computed */
    int32_t *deriv; /* derivative per class of `part` (-1 unknown), NULL until the first */
    uint32_t hash;
} Term;

typedef struct {
    uint8_t cls[256]; /* byte -> class, classes numbered by their lowest byte */
    uint8_t rep[256]; /* class -> its lowest byte */
    int n;
    uint32_t hash;
} Partition;

typedef struct {
    uint64_t w[4];
} Mask;

typedef struct {
    PyThread_type_lock lock;
    Term *terms;
    int32_t n_terms, cap_terms;
    int32_t *kids;
    int32_t n_kids, cap_kids;
    Mask *masks;
    int32_t n_masks, cap_masks;
    int32_t *table; /* hash set of term ids, -1 empty; capacity a power of two, at most half full */
    int32_t cap_table;
    Partition **parts; /* each allocated alone and never moved: a state reads its classes without the lock */
    int32_t n_parts, cap_parts;
    int32_t *part_table;
    int32_t cap_part_table;
    int32_t (*refined)[3]; /* refine()'s memo, direct-mapped: (p1, p2, result), p1 -1 when empty */
    size_t nbytes, max_bytes;
} Arena;

/* ------------------------------------------------------------------ memory accounting */

/* Grow *p (of *cap items of `size` bytes, `used` in use) to hold one more, counting the bytes. */
static int grow(Arena *A, void **p, int32_t *cap, int32_t used, size_t size, int32_t first)
{
    if (used < *cap)
        return 0;
    int32_t ncap = *cap ? *cap * 2 : first;
    if (ncap <= *cap)
        return E_NOMEM;
    size_t extra = (size_t)(ncap - *cap) * size;
    if (A->nbytes + extra > A->max_bytes)
        return E_LIMIT;
    void *q = PyMem_RawRealloc(*p, (size_t)ncap * size);
    if (q == NULL)
        return E_NOMEM;
    *p = q;
    *cap = ncap;
    A->nbytes += extra;
    return 0;
}

static inline uint32_t mix(uint32_t h, uint32_t v)
{
    h ^= v * 0x9E3779B1u;
    h = (h << 13) | (h >> 19);
    return h * 5u + 0xE6546B64u;
}

/* ------------------------------------------------------------------ hash-consing */

static uint32_t term_hash(uint8_t kind, int32_t a, int32_t b, int32_t lo, int32_t hi, const int32_t *kids,
                          const Mask *mask)
{
    uint32_t h = mix(0x2545F491u, kind);
    if (kind == K_OR || kind == K_AND) {
        h = mix(h, (uint32_t)b);
        for (int32_t i = 0; i < b; i++)
            h = mix(h, (uint32_t)kids[i]);
    } else if (kind == K_BYTES) {
        for (int i = 0; i < 4; i++)
            h = mix(mix(h, (uint32_t)mask->w[i]), (uint32_t)(mask->w[i] >> 32));
    } else {
        h = mix(mix(mix(mix(h, (uint32_t)a), (uint32_t)b), (uint32_t)lo), (uint32_t)hi);
    }
    return h ^ (h >> 16);
}

static int term_equal(const Arena *A, const Term *t, uint8_t kind, int32_t a, int32_t b, int32_t lo, int32_t hi,
                      const int32_t *kids, const Mask *mask)
{
    if (t->kind != kind)
        return 0;
    if (kind == K_OR || kind == K_AND)
        return t->b == b && memcmp(A->kids + t->a, kids, (size_t)b * sizeof(int32_t)) == 0;
    if (kind == K_BYTES)
        return memcmp(&A->masks[t->a], mask, sizeof(Mask)) == 0;
    return t->a == a && t->b == b && t->lo == lo && t->hi == hi;
}

static int rehash(Arena *A)
{
    int32_t ncap = A->cap_table * 2;
    size_t bytes = (size_t)ncap * sizeof(int32_t);
    if (A->nbytes + bytes > A->max_bytes)
        return E_LIMIT;
    int32_t *t = PyMem_RawMalloc(bytes);
    if (t == NULL)
        return E_NOMEM;
    memset(t, 0xff, bytes);
    for (int32_t i = 0; i < A->n_terms; i++) {
        uint32_t j = A->terms[i].hash & (uint32_t)(ncap - 1);
        while (t[j] >= 0)
            j = (j + 1) & (uint32_t)(ncap - 1);
        t[j] = i;
    }
    A->nbytes += bytes;
    A->nbytes -= (size_t)A->cap_table * sizeof(int32_t);
    PyMem_RawFree(A->table);
    A->table = t;
    A->cap_table = ncap;
    return 0;
}

/* The structural live flag of a new term (LIVE_UNKNOWN where only a search can tell: AND, NOT). */
static uint8_t structural_live(const Arena *A, uint8_t kind, int32_t a, int32_t b, int32_t lo, int nullable,
                               const int32_t *kids)
{
    if (nullable)
        return LIVE_YES;
    switch (kind) {
    case K_EMPTY:
        return LIVE_NO;
    case K_BYTES:
        return LIVE_YES; /* an empty set is EMPTY */
    case K_CONCAT: {
        uint8_t x = A->terms[a].live, y = A->terms[b].live;
        return x == LIVE_NO || y == LIVE_NO ? LIVE_NO : (x == LIVE_YES && y == LIVE_YES ? LIVE_YES : LIVE_UNKNOWN);
    }
    case K_OR: {
        int all_dead = 1;
        for (int32_t i = 0; i < b; i++) {
            uint8_t x = A->terms[kids[i]].live;
            if (x == LIVE_YES)
                return LIVE_YES;
            all_dead &= x == LIVE_NO;
        }
        return all_dead ? LIVE_NO : LIVE_UNKNOWN;
    }
    case K_AND:
        for (int32_t i = 0; i < b; i++)
            if (A->terms[kids[i]].live == LIVE_NO)
                return LIVE_NO;
        return LIVE_UNKNOWN;
    case K_REPEAT:
        return lo == 0 ? LIVE_YES : A->terms[a].live;
    case K_FIRST:
        return A->terms[a].live;
    default: /* NOT of a non-nullable term */
        return LIVE_UNKNOWN;
    }
}

static int structural_nullable(const Arena *A, uint8_t kind, int32_t a, int32_t b, int32_t lo, const int32_t *kids)
{
    switch (kind) {
    case K_EPS:
        return 1;
    case K_CONCAT:
        return A->terms[a].nullable && A->terms[b].nullable;
    case K_OR:
        for (int32_t i = 0; i < b; i++)
            if (A->terms[kids[i]].nullable)
                return 1;
        return 0;
    case K_AND:
        for (int32_t i = 0; i < b; i++)
            if (!A->terms[kids[i]].nullable)
                return 0;
        return 1;
    case K_NOT:
        return !A->terms[a].nullable;
    case K_REPEAT:
        return lo == 0 || A->terms[a].nullable;
    case K_FIRST:
        return A->terms[a].nullable;
    default:
        return 0;
    }
}

/* The id of the term (kind, fields), made if new; a negative E_* code on failure. `kids` (OR, AND: b of
 * them) and `mask` (BYTES) are copied. */
static int32_t intern(Arena *A, uint8_t kind, int32_t a, int32_t b, int32_t lo, int32_t hi, const int32_t *kids,
                      const Mask *mask)
{
    uint32_t h = term_hash(kind, a, b, lo, hi, kids, mask);
    uint32_t j = h & (uint32_t)(A->cap_table - 1);
    for (int32_t id; (id = A->table[j]) >= 0; j = (j + 1) & (uint32_t)(A->cap_table - 1))
        if (A->terms[id].hash == h && term_equal(A, &A->terms[id], kind, a, b, lo, hi, kids, mask))
            return id;
    if (A->n_terms == INT32_MAX)
        return -E_LIMIT;
    int rc;
    if ((size_t)(A->n_terms + 1) * 2 > (size_t)A->cap_table) {
        if ((rc = rehash(A)))
            return -rc;
        for (j = h & (uint32_t)(A->cap_table - 1); A->table[j] >= 0; j = (j + 1) & (uint32_t)(A->cap_table - 1))
            ;
    }
    if ((rc = grow(A, (void **)&A->terms, &A->cap_terms, A->n_terms, sizeof(Term), 256)))
        return -rc;
    if (kind == K_OR || kind == K_AND) {
        while (A->cap_kids - A->n_kids < b)
            if ((rc = grow(A, (void **)&A->kids, &A->cap_kids, A->cap_kids, sizeof(int32_t), 1024)))
                return -rc;
        memcpy(A->kids + A->n_kids, kids, (size_t)b * sizeof(int32_t));
        a = A->n_kids;
        A->n_kids += b;
    } else if (kind == K_BYTES) {
        if ((rc = grow(A, (void **)&A->masks, &A->cap_masks, A->n_masks, sizeof(Mask), 64)))
            return -rc;
        A->masks[A->n_masks] = *mask;
        a = A->n_masks++;
    }
    const int32_t *stored = kind == K_OR || kind == K_AND ? A->kids + a : NULL;
    Term *t = &A->terms[A->n_terms];
    t->kind = kind;
    t->a = a;
    t->b = b;
    t->lo = lo;
    t->hi = hi;
    t->part = -1;
    t->deriv = NULL;
    t->hash = h;
    t->nullable = (uint8_t)structural_nullable(A, kind, a, b, lo, stored);
    t->live = structural_live(A, kind, a, b, lo, t->nullable, stored);
    int32_t id = A->n_terms++;
    A->table[j] = id;
    return id;
}

/* ------------------------------------------------------------------ smart constructors */

static int32_t mk_bytes(Arena *A, const Mask *m)
{
    if (!(m->w[0] | m->w[1] | m->w[2] | m->w[3]))
        return T_EMPTY;
    return intern(A, K_BYTES, 0, 0, 0, 0, NULL, m);
}

static int32_t mk_not(Arena *A, int32_t a)
{
    if (A->terms[a].kind == K_NOT)
        return A->terms[a].a;
    return intern(A, K_NOT, a, 0, 0, 0, NULL, NULL);
}

/* a followed by b, right-nested: a's own chain is walked into a buffer, then folded from the right. */
static int32_t mk_concat(Arena *A, int32_t a, int32_t b)
{
    if (a == T_EMPTY || b == T_EMPTY)
        return T_EMPTY;
    if (a == T_EPS)
        return b;
    if (b == T_EPS)
        return a;
    if (A->terms[a].kind != K_CONCAT)
        return intern(A, K_CONCAT, a, b, 0, 0, NULL, NULL);
    int32_t n = 0, cap = 16, *heads = PyMem_RawMalloc((size_t)cap * sizeof(int32_t));
    if (heads == NULL)
        return -E_NOMEM;
    int32_t x = a;
    for (;;) {
        if (n == cap) {
            int32_t *q = PyMem_RawRealloc(heads, (size_t)(cap *= 2) * sizeof(int32_t));
            if (q == NULL) {
                PyMem_RawFree(heads);
                return -E_NOMEM;
            }
            heads = q;
        }
        if (A->terms[x].kind != K_CONCAT) {
            heads[n++] = x;
            break;
        }
        heads[n++] = A->terms[x].a;
        x = A->terms[x].b;
    }
    int32_t r = b;
    for (int32_t i = n - 1; i >= 0 && r >= 0; i--)
        r = intern(A, K_CONCAT, heads[i], r, 0, 0, NULL, NULL);
    PyMem_RawFree(heads);
    return r;
}

static int cmp_id(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* OR (is_and 0) or AND (1) of n terms, normalised (see the top of the file). */
static int32_t mk_set(Arena *A, int is_and, const int32_t *ts, int32_t n)
{
    uint8_t kind = is_and ? K_AND : K_OR;
    int32_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += A->terms[ts[i]].kind == kind ? A->terms[ts[i]].b : 1;
    int32_t *buf = PyMem_RawMalloc((size_t)(total + 1) * sizeof(int32_t));
    if (buf == NULL)
        return -E_NOMEM;
    Mask acc;
    memset(&acc, is_and ? 0xff : 0, sizeof acc);
    int have_bytes = 0, has_eps = 0, all_nullable = 1, others_nullable = 0;
    int32_t m = 0, r = -1;
    for (int32_t i = 0; i < n && r < 0; i++) {
        const Term *t = &A->terms[ts[i]];
        int32_t count = t->kind == kind ? t->b : 1;
        const int32_t *items = t->kind == kind ? A->kids + t->a : &ts[i];
        for (int32_t k = 0; k < count; k++) {
            int32_t x = items[k];
            const Term *u = &A->terms[x];
            if (x == (is_and ? T_EMPTY : T_FULL)) {
                r = x;
                break;
            }
            if (x == (is_and ? T_FULL : T_EMPTY))
                continue;
            all_nullable &= u->nullable;
            if (x == T_EPS) {
                has_eps = 1;
                continue;
            }
            others_nullable |= u->nullable;
            if (u->kind == K_BYTES) {
                const Mask *mm = &A->masks[u->a];
                for (int w = 0; w < 4; w++)
                    acc.w[w] = is_and ? acc.w[w] & mm->w[w] : acc.w[w] | mm->w[w];
                have_bytes = 1;
                continue;
            }
            buf[m++] = x;
        }
    }
    if (r >= 0) {
        PyMem_RawFree(buf);
        return r;
    }
    if (is_and && has_eps) { /* AND with EPS: EPS if every kid holds the empty word */
        PyMem_RawFree(buf);
        return all_nullable ? T_EPS : T_EMPTY;
    }
    if (have_bytes) {
        int32_t bt = mk_bytes(A, &acc);
        if (bt < 0) {
            PyMem_RawFree(buf);
            return bt;
        }
        if (bt == T_EMPTY && is_and) {
            PyMem_RawFree(buf);
            return T_EMPTY;
        }
        if (bt != T_EMPTY)
            buf[m++] = bt;
    }
    if (!is_and && has_eps && !others_nullable)
        buf[m++] = T_EPS; /* an OR keeps EPS only where no other kid holds the empty word */
    qsort(buf, (size_t)m, sizeof(int32_t), cmp_id);
    int32_t d = 0;
    for (int32_t i = 0; i < m; i++)
        if (d == 0 || buf[d - 1] != buf[i])
            buf[d++] = buf[i];
    if (d == 0)
        r = is_and ? T_FULL : T_EMPTY;
    else if (d == 1)
        r = buf[0];
    else
        r = intern(A, kind, 0, d, 0, 0, buf, NULL);
    PyMem_RawFree(buf);
    return r;
}

static int32_t mk_repeat(Arena *A, int32_t a, int32_t lo, int32_t hi)
{
    if (hi >= 0 && hi < lo)
        return T_EMPTY;
    if (hi == 0 || a == T_EPS)
        return T_EPS;
    if (a == T_EMPTY)
        return lo == 0 ? T_EPS : T_EMPTY;
    if (A->terms[a].nullable)
        lo = 0; /* a^k holds a^(k-1): the counts below hi add nothing */
    if (lo == 1 && hi == 1)
        return a;
    const Term *t = &A->terms[a];
    if (lo == 0 && t->kind == K_REPEAT && t->lo == 0 && t->hi < 0)
        return a; /* (x*){0,n} = x* */
    return intern(A, K_REPEAT, a, 0, lo, hi, NULL, NULL);
}

static int32_t mk_first(Arena *A, int32_t a)
{
    const Term *t = &A->terms[a];
    if (a == T_EMPTY || t->kind == K_FIRST || t->kind == K_BYTES)
        return a;
    if (t->nullable)
        return T_EPS;
    return intern(A, K_FIRST, a, 0, 0, 0, NULL, NULL);
}

/* ------------------------------------------------------------------ byte classes */

static int32_t intern_part(Arena *A, const Partition *p)
{
    uint32_t h = 0x811C9DC5u;
    for (int i = 0; i < 256; i++)
        h = mix(h, p->cls[i]);
    uint32_t mask = (uint32_t)(A->cap_part_table - 1), j = h & mask;
    for (int32_t id; (id = A->part_table[j]) >= 0; j = (j + 1) & mask)
        if (A->parts[id]->hash == h && memcmp(A->parts[id]->cls, p->cls, 256) == 0)
            return id;
    int rc;
    if ((rc = grow(A, (void **)&A->parts, &A->cap_parts, A->n_parts, sizeof(Partition *), 16)))
        return -rc;
    if (A->nbytes + sizeof(Partition) > A->max_bytes)
        return -E_LIMIT;
    if ((size_t)(A->n_parts + 1) * 2 > (size_t)A->cap_part_table) {
        int32_t ncap = A->cap_part_table * 2;
        size_t bytes = (size_t)ncap * sizeof(int32_t);
        if (A->nbytes + bytes > A->max_bytes)
            return -E_LIMIT;
        int32_t *t = PyMem_RawMalloc(bytes);
        if (t == NULL)
            return -E_NOMEM;
        memset(t, 0xff, bytes);
        for (int32_t i = 0; i < A->n_parts; i++) {
            uint32_t k = A->parts[i]->hash & (uint32_t)(ncap - 1);
            while (t[k] >= 0)
                k = (k + 1) & (uint32_t)(ncap - 1);
            t[k] = i;
        }
        A->nbytes += bytes - (size_t)A->cap_part_table * sizeof(int32_t);
        PyMem_RawFree(A->part_table);
        A->part_table = t;
        A->cap_part_table = ncap;
        mask = (uint32_t)(ncap - 1);
        for (j = h & mask; A->part_table[j] >= 0; j = (j + 1) & mask)
            ;
    }
    Partition *q = PyMem_RawMalloc(sizeof(Partition));
    if (q == NULL)
        return -E_NOMEM;
    A->nbytes += sizeof(Partition);
    A->parts[A->n_parts] = q;
    *q = *p;
    q->hash = h;
    A->part_table[j] = A->n_parts;
    return A->n_parts++;
}


/* Slots of refine()'s memo: a new state's term refines its kids' partitions, and the same pairs recur
 * (o79409's string: one OR of ~60 UTF-8 branches in every state). */
#define REFINED_SLOTS 1024

/* The partition of the bytes into the classes both p1 and p2 make (numbered by their lowest byte). */
static NOINLINE int32_t refine(Arena *A, int32_t p1, int32_t p2)
{
    if (p1 == 0 || p1 == p2)
        return p2;
    if (p2 == 0)
        return p1;
    if (p1 > p2) { /* the common refinement does not depend on the order */
        int32_t x = p1;
        p1 = p2;
        p2 = x;
    }
    int32_t *memo = A->refined[mix((uint32_t)p1, (uint32_t)p2) & (REFINED_SLOTS - 1)];
    if (memo[0] == p1 && memo[1] == p2)
        return memo[2];
    Partition out;
    const uint8_t *c1 = A->parts[p1]->cls, *c2 = A->parts[p2]->cls;
    /* (class in p1, class in p2) -> new class: at most 256 pairs in 512 slots, open addressing */
    uint16_t keys[512];
    int16_t ids[512];
    memset(ids, 0xff, sizeof ids);
    out.n = 0;
    for (int b = 0; b < 256; b++) {
        uint16_t key = (uint16_t)(c1[b] << 8 | c2[b]);
        uint32_t j = (uint32_t)key * 0x9E3779B1u >> 23;
        while (ids[j] >= 0 && keys[j] != key)
            j = (j + 1) & 511;
        if (ids[j] < 0) {
            keys[j] = key;
            ids[j] = (int16_t)out.n;
            out.rep[out.n++] = (uint8_t)b;
        }
        out.cls[b] = (uint8_t)ids[j];
    }
    int32_t r = intern_part(A, &out);
    if (r >= 0) {
        memo[0] = p1;
        memo[1] = p2;
        memo[2] = r;
    }
    return r;
}

/* The partition of a byte set: in it, out of it. Kept out of ensure_part(), which recurses: a Partition on
 * its frame cost ~600 bytes of C stack a level. */
static NOINLINE int32_t bytes_part(Arena *A, const Mask *m)
{
    Partition out;
    int first = (int)(m->w[0] & 1);
    out.n = 1;
    out.rep[0] = 0;
    for (int x = 0; x < 256; x++) {
        int in = (int)(m->w[x >> 6] >> (x & 63) & 1);
        out.cls[x] = (uint8_t)(in != first);
        if (in != first && out.n == 1) {
            out.rep[1] = (uint8_t)x;
            out.n = 2;
        }
    }
    return intern_part(A, &out);
}

/* The term's byte classes (a partition id, or a negative E_* code), from the BYTES leaves at its front. */
static int32_t ensure_part(Arena *A, int32_t t, int depth)
{
    if (A->terms[t].part >= 0)
        return A->terms[t].part;
    if (depth > MAX_DEPTH)
        return -E_DEPTH;
    const Term *T = &A->terms[t];
    int32_t a = T->a, b = T->b, p = 0;
    switch (T->kind) {
    case K_BYTES:
        p = bytes_part(A, &A->masks[a]);
        break;
    case K_CONCAT:
        p = ensure_part(A, a, depth + 1);
        if (p >= 0 && A->terms[a].nullable) {
            int32_t q = ensure_part(A, b, depth + 1);
            p = q < 0 ? q : refine(A, p, q);
        }
        break;
    case K_OR:
    case K_AND:
        for (int32_t i = 0; i < b && p >= 0; i++) {
            int32_t q = ensure_part(A, A->kids[a + i], depth + 1);
            p = q < 0 ? q : refine(A, p, q);
        }
        break;
    case K_NOT:
    case K_REPEAT:
    case K_FIRST:
        p = ensure_part(A, a, depth + 1);
        break;
    default: /* EMPTY, EPS: one class */
        break;
    }
    if (p >= 0)
        A->terms[t].part = p;
    return p;
}

/* ------------------------------------------------------------------ derivatives */

/* The derivative of term t by `byte` (a term id, or a negative E_* code), memoised per (t, class of byte). */
static int32_t derive(Arena *A, int32_t t, int byte, int depth)
{
    if (depth > MAX_DEPTH)
        return -E_DEPTH;
    int32_t p = ensure_part(A, t, depth);
    if (p < 0)
        return p;
    int c = A->parts[p]->cls[byte];
    if (A->terms[t].deriv != NULL && A->terms[t].deriv[c] >= 0)
        return A->terms[t].deriv[c];
    Term T = A->terms[t]; /* a copy: making terms below may move the array */
    int32_t r, x, y;
    switch (T.kind) {
    case K_BYTES:
        r = A->masks[T.a].w[byte >> 6] >> (byte & 63) & 1 ? T_EPS : T_EMPTY;
        break;
    case K_CONCAT:
        if ((x = derive(A, T.a, byte, depth + 1)) < 0) {
            r = x;
            break;
        }
        if ((r = mk_concat(A, x, T.b)) < 0 || !A->terms[T.a].nullable)
            break;
        if ((y = derive(A, T.b, byte, depth + 1)) < 0) {
            r = y;
            break;
        }
        {
            int32_t both[2] = {r, y};
            r = mk_set(A, 0, both, 2);
        }
        break;
    case K_OR:
    case K_AND: {
        int32_t *ds = PyMem_RawMalloc((size_t)T.b * sizeof(int32_t));
        if (ds == NULL)
            return -E_NOMEM;
        r = 0;
        for (int32_t i = 0; i < T.b && r >= 0; i++)
            r = ds[i] = derive(A, A->kids[T.a + i], byte, depth + 1);
        if (r >= 0)
            r = mk_set(A, T.kind == K_AND, ds, T.b);
        PyMem_RawFree(ds);
        break;
    }
    case K_NOT:
        r = (x = derive(A, T.a, byte, depth + 1)) < 0 ? x : mk_not(A, x);
        break;
    case K_REPEAT:
        if ((x = derive(A, T.a, byte, depth + 1)) < 0) {
            r = x;
            break;
        }
        r = (y = mk_repeat(A, T.a, T.lo > 0 ? T.lo - 1 : 0, T.hi < 0 ? -1 : T.hi - 1)) < 0 ? y : mk_concat(A, x, y);
        break;
    case K_FIRST:
        r = (x = derive(A, T.a, byte, depth + 1)) < 0 ? x : mk_first(A, x);
        break;
    default: /* EMPTY, EPS */
        r = T_EMPTY;
        break;
    }
    if (r < 0)
        return r;
    if (A->terms[t].deriv == NULL) {
        int n = A->parts[p]->n;
        size_t bytes = (size_t)n * sizeof(int32_t);
        if (A->nbytes + bytes > A->max_bytes)
            return -E_LIMIT;
        int32_t *d = PyMem_RawMalloc(bytes);
        if (d == NULL)
            return -E_NOMEM;
        memset(d, 0xff, bytes);
        A->nbytes += bytes;
        A->terms[t].deriv = d;
    }
    A->terms[t].deriv[c] = r;
    return r;
}

/* ------------------------------------------------------------------ emptiness */

/* 1 when term t has a word, 0 when not (or a negative E_* code); memoised per term. Beyond the
 * structural rules (AND, NOT) a breadth-first search over derivatives: a nullable term found makes
 * the path to it live; a search that ends without one proves every term it met empty. */
static int is_live(Arena *A, int32_t t)
{
    if (A->terms[t].live != LIVE_UNKNOWN)
        return A->terms[t].live == LIVE_YES;
    int32_t n = 0, cap = 64, cap_seen = 128, rc = 0;
    int32_t *queue = PyMem_RawMalloc((size_t)cap * 2 * sizeof(int32_t)); /* (term, index of its parent) */
    int32_t *seen = PyMem_RawMalloc((size_t)cap_seen * sizeof(int32_t));
    if (queue == NULL || seen == NULL) {
        rc = -E_NOMEM;
        goto done;
    }
    memset(seen, 0xff, (size_t)cap_seen * sizeof(int32_t));
    queue[0] = t;
    queue[1] = -1;
    seen[(uint32_t)t * 0x9E3779B1u & (uint32_t)(cap_seen - 1)] = t;
    n = 1;
    for (int32_t head = 0; head < n; head++) {
        int32_t u = queue[2 * head];
        const Term *U = &A->terms[u];
        if (U->live == LIVE_YES || U->nullable) {
            for (int32_t i = head; i >= 0; i = queue[2 * i + 1])
                A->terms[queue[2 * i]].live = LIVE_YES;
            rc = 1;
            goto done;
        }
        if (U->live == LIVE_NO)
            continue;
        int32_t p = ensure_part(A, u, 0);
        if (p < 0) {
            rc = p;
            goto done;
        }
        for (int c = 0; c < A->parts[p]->n; c++) {
            int32_t v = derive(A, u, A->parts[p]->rep[c], 0);
            if (v < 0) {
                rc = v;
                goto done;
            }
            uint32_t j = (uint32_t)v * 0x9E3779B1u & (uint32_t)(cap_seen - 1);
            while (seen[j] >= 0 && seen[j] != v)
                j = (j + 1) & (uint32_t)(cap_seen - 1);
            if (seen[j] == v)
                continue;
            seen[j] = v;
            if (n == cap) {
                int32_t *q = PyMem_RawRealloc(queue, (size_t)(cap *= 2) * 2 * sizeof(int32_t));
                if (q == NULL) {
                    rc = -E_NOMEM;
                    goto done;
                }
                queue = q;
            }
            queue[2 * n] = v;
            queue[2 * n + 1] = head;
            n++;
            if (n * 2 > cap_seen) { /* rebuild the seen set from the queue, twice as large */
                int32_t *s = PyMem_RawMalloc((size_t)cap_seen * 2 * sizeof(int32_t));
                if (s == NULL) {
                    rc = -E_NOMEM;
                    goto done;
                }
                PyMem_RawFree(seen);
                seen = s;
                cap_seen *= 2;
                memset(seen, 0xff, (size_t)cap_seen * sizeof(int32_t));
                for (int32_t i = 0; i < n; i++) {
                    uint32_t k = (uint32_t)queue[2 * i] * 0x9E3779B1u & (uint32_t)(cap_seen - 1);
                    while (seen[k] >= 0)
                        k = (k + 1) & (uint32_t)(cap_seen - 1);
                    seen[k] = queue[2 * i];
                }
            }
        }
    }
    for (int32_t i = 0; i < n; i++)
        A->terms[queue[2 * i]].live = LIVE_NO;
    rc = 0;
done:
    PyMem_RawFree(queue);
    PyMem_RawFree(seen);
    return rc;
}

/* ------------------------------------------------------------------ arenas */

static void arena_free(Arena *A)
{
    if (A == NULL)
        return;
    for (int32_t i = 0; i < A->n_terms; i++)
        PyMem_RawFree(A->terms[i].deriv);
    PyMem_RawFree(A->terms);
    PyMem_RawFree(A->kids);
    PyMem_RawFree(A->masks);
    PyMem_RawFree(A->table);
    for (int32_t i = 0; i < A->n_parts; i++)
        PyMem_RawFree(A->parts[i]);
    PyMem_RawFree(A->parts);
    PyMem_RawFree(A->part_table);
    PyMem_RawFree(A->refined);
    if (A->lock)
        PyThread_free_lock(A->lock);
    PyMem_RawFree(A);
}

/* A new arena holding EMPTY, EPS, FULL and the one-class partition (these are made whatever max_bytes is). */
static Arena *arena_new(size_t max_bytes)
{
    Arena *A = PyMem_RawCalloc(1, sizeof(Arena));
    if (A == NULL)
        return NULL;
    A->max_bytes = SIZE_MAX;
    A->cap_table = 1024;
    A->cap_part_table = 64;
    A->table = PyMem_RawMalloc((size_t)A->cap_table * sizeof(int32_t));
    A->part_table = PyMem_RawMalloc((size_t)A->cap_part_table * sizeof(int32_t));
    A->refined = PyMem_RawMalloc(REFINED_SLOTS * sizeof *A->refined);
    A->lock = PyThread_allocate_lock();
    if (A->table == NULL || A->part_table == NULL || A->refined == NULL || A->lock == NULL) {
        arena_free(A);
        return NULL;
    }
    memset(A->table, 0xff, (size_t)A->cap_table * sizeof(int32_t));
    memset(A->part_table, 0xff, (size_t)A->cap_part_table * sizeof(int32_t));
    memset(A->refined, 0xff, REFINED_SLOTS * sizeof *A->refined);
    A->nbytes = sizeof(Arena) + (size_t)A->cap_table * sizeof(int32_t) + (size_t)A->cap_part_table * sizeof(int32_t)
                + REFINED_SLOTS * sizeof *A->refined;
    Partition one;
    memset(&one, 0, sizeof one);
    one.n = 1;
    if (intern(A, K_EMPTY, 0, 0, 0, 0, NULL, NULL) != T_EMPTY || intern(A, K_EPS, 0, 0, 0, 0, NULL, NULL) != T_EPS
        || mk_not(A, T_EMPTY) != T_FULL || intern_part(A, &one) != 0) {
        arena_free(A);
        return NULL;
    }
    A->max_bytes = max_bytes;
    return A;
}

/* ------------------------------------------------------------------ lazy DFAs */

#define CHUNK0_LOG 4 /* chunk k holds 16 << k states */
#define N_CHUNKS 28  /* 16 << 27 > INT32_MAX */

typedef struct {
    int32_t *next;      /* successor per class of the term's partition, -1 until computed (in a slab) */
    const uint8_t *cls; /* byte -> class: the term's partition's */
    int32_t term;
    uint8_t accept;
} State;

/* Rows are cut from slabs that never move: the first of 256 int32, each next twice the last, up to this. */
#define SLAB_MAX_INTS 16384

typedef struct {
    Arena *A;
    State *chunks[N_CHUNKS];
    int32_t n_states; /* published with release order once a state is complete */
    int32_t max_states;
    int32_t dead;
    int32_t *map; /* term -> state: (term, state) pairs, open addressing, -1 empty */
    int32_t cap_map;
    int32_t **slabs; /* the rows' slabs; the last is being cut */
    int32_t n_slabs, cap_slabs, slab_size, slab_used;
    size_t nbytes; /* what this DFA adds to its arena's nbytes */
} Lazy;

static inline int high_bit(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return 31 - __builtin_clz(x);
#else
    int b = 0;
    while (x >>= 1)
        b++;
    return b;
#endif
}

static inline State *state_at(const Lazy *L, int32_t s)
{
    uint32_t idx = (uint32_t)s + (1u << CHUNK0_LOG);
    int hb = high_bit(idx);
    return &L->chunks[hb - CHUNK0_LOG][idx - (1u << hb)];
}

/* Count `bytes` more (or fewer) against the arena's budget for DFA L; E_LIMIT past it. */
static int charge(Lazy *L, size_t bytes)
{
    if (L->A->nbytes + bytes > L->A->max_bytes)
        return E_LIMIT;
    L->A->nbytes += bytes;
    L->nbytes += bytes;
    return 0;
}

static void uncharge(Lazy *L, size_t bytes)
{
    L->A->nbytes -= bytes;
    L->nbytes -= bytes;
}

/* A row of n int32, all -1, cut from the current slab (a new one when it is short): NULL and *rc on failure. */
static int32_t *new_row(Lazy *L, int n, int *rc)
{
    if (L->n_slabs == 0 || L->slab_size - L->slab_used < n) {
        int32_t size = L->slab_size ? (L->slab_size < SLAB_MAX_INTS ? L->slab_size * 2 : SLAB_MAX_INTS) : 256;
        if (L->n_slabs == L->cap_slabs) {
            int32_t cap = L->cap_slabs ? L->cap_slabs * 2 : 8;
            if ((*rc = charge(L, (size_t)(cap - L->cap_slabs) * sizeof(int32_t *))))
                return NULL;
            int32_t **q = PyMem_RawRealloc(L->slabs, (size_t)cap * sizeof(int32_t *));
            if (q == NULL) {
                uncharge(L, (size_t)(cap - L->cap_slabs) * sizeof(int32_t *));
                *rc = E_NOMEM;
                return NULL;
            }
            L->slabs = q;
            L->cap_slabs = cap;
        }
        if ((*rc = charge(L, (size_t)size * sizeof(int32_t))))
            return NULL;
        int32_t *slab = PyMem_RawMalloc((size_t)size * sizeof(int32_t));
        if (slab == NULL) {
            uncharge(L, (size_t)size * sizeof(int32_t));
            *rc = E_NOMEM;
            return NULL;
        }
        L->slabs[L->n_slabs++] = slab;
        L->slab_size = size;
        L->slab_used = 0;
    }
    int32_t *row = L->slabs[L->n_slabs - 1] + L->slab_used;
    L->slab_used += n;
    memset(row, 0xff, (size_t)n * sizeof(int32_t));
    return row;
}

/* The state of `term` (made if new): its id or a negative E_* code. Under the arena's lock. */
static int32_t state_of(Lazy *L, int32_t term)
{
    uint32_t mask = (uint32_t)(L->cap_map - 1), j = (uint32_t)term * 0x9E3779B1u & mask;
    for (; L->map[2 * j] >= 0; j = (j + 1) & mask)
        if (L->map[2 * j] == term)
            return L->map[2 * j + 1];
    int32_t s = L->n_states;
    if (s >= L->max_states)
        return -E_STATES;
    int rc;
    if ((size_t)(s + 1) * 2 > (size_t)L->cap_map) {
        int32_t ncap = L->cap_map * 2;
        if ((rc = charge(L, (size_t)ncap * 2 * sizeof(int32_t))))
            return -rc;
        int32_t *m = PyMem_RawMalloc((size_t)ncap * 2 * sizeof(int32_t));
        if (m == NULL) {
            uncharge(L, (size_t)ncap * 2 * sizeof(int32_t));
            return -E_NOMEM;
        }
        memset(m, 0xff, (size_t)ncap * 2 * sizeof(int32_t));
        for (int32_t i = 0; i < L->cap_map; i++)
            if (L->map[2 * i] >= 0) {
                uint32_t k = (uint32_t)L->map[2 * i] * 0x9E3779B1u & (uint32_t)(ncap - 1);
                while (m[2 * k] >= 0)
                    k = (k + 1) & (uint32_t)(ncap - 1);
                m[2 * k] = L->map[2 * i];
                m[2 * k + 1] = L->map[2 * i + 1];
            }
        PyMem_RawFree(L->map);
        uncharge(L, (size_t)L->cap_map * 2 * sizeof(int32_t));
        L->map = m;
        L->cap_map = ncap;
        mask = (uint32_t)(ncap - 1);
        for (j = (uint32_t)term * 0x9E3779B1u & mask; L->map[2 * j] >= 0; j = (j + 1) & mask)
            ;
    }
    uint32_t idx = (uint32_t)s + (1u << CHUNK0_LOG);
    int k = high_bit(idx) - CHUNK0_LOG;
    if (L->chunks[k] == NULL) {
        size_t bytes = ((size_t)1 << (k + CHUNK0_LOG)) * sizeof(State);
        if ((rc = charge(L, bytes)))
            return -rc;
        if ((L->chunks[k] = PyMem_RawMalloc(bytes)) == NULL) {
            uncharge(L, bytes);
            return -E_NOMEM;
        }
    }
    int32_t p = ensure_part(L->A, term, 0);
    if (p < 0)
        return p;
    const Partition *P = L->A->parts[p];
    int32_t *row = new_row(L, P->n, &rc);
    if (row == NULL)
        return -rc;
    State *st = state_at(L, s);
    st->next = row;
    st->cls = P->cls;
    st->term = term;
    st->accept = L->A->terms[term].nullable;
    L->map[2 * j] = term;
    L->map[2 * j + 1] = s;
    STORE_RELEASE(&L->n_states, s + 1);
    return s;
}

/* Fill state s's successor on `byte`'s class: the successor, or a negative E_* code.
 * Under the arena's lock. */
static int32_t fill(Lazy *L, int32_t s, int byte)
{
    State *st = state_at(L, s);
    int c = st->cls[byte];
    if (st->next[c] >= 0)
        return st->next[c];
    Arena *A = L->A;
    int32_t d = derive(A, st->term, byte, 0);
    if (d < 0)
        return d;
    int live = is_live(A, d);
    if (live < 0)
        return live;
    int32_t target = live ? state_of(L, d) : L->dead;
    if (target < 0)
        return target;
    STORE_RELEASE(&st->next[c], target);
    return target;
}

/* Step DFA L from state s (a state of L) by `byte`: 0 and *out, or an E_* code. No GIL needed. */
static int lazy_step(void *lazy, int32_t s, int byte, int32_t *out)
{
    Lazy *L = (Lazy *)lazy;
    const State *st = state_at(L, s);
    int32_t t = LOAD_ACQUIRE(&st->next[st->cls[byte]]);
    if (t < 0) {
        PyThread_acquire_lock(L->A->lock, WAIT_LOCK);
        t = fill(L, s, byte);
        PyThread_release_lock(L->A->lock);
        if (t < 0)
            return -t;
    }
    *out = t;
    return 0;
}

static int lazy_accept(void *lazy, int32_t s)
{
    return state_at((Lazy *)lazy, s)->accept;
}

static int32_t lazy_dead(void *lazy)
{
    return ((Lazy *)lazy)->dead;
}

/* Set up L from `term` (under the arena's lock): state 0 the start, `dead` the EMPTY term's state (0 when
 * the start's language is empty, else 1). 0 or an E_* code. */
static int lazy_init(Lazy *L, Arena *A, int32_t term, int32_t max_states)
{
    memset(L, 0, sizeof *L);
    L->A = A;
    L->max_states = max_states;
    L->cap_map = 16;
    int rc;
    if ((rc = charge(L, (size_t)L->cap_map * 2 * sizeof(int32_t))))
        return rc;
    if ((L->map = PyMem_RawMalloc((size_t)L->cap_map * 2 * sizeof(int32_t))) == NULL)
        return E_NOMEM;
    memset(L->map, 0xff, (size_t)L->cap_map * 2 * sizeof(int32_t));
    int live = is_live(A, term);
    if (live < 0)
        return -live;
    int32_t s;
    if (live && (s = state_of(L, term)) < 0)
        return -s;
    if ((s = state_of(L, T_EMPTY)) < 0)
        return -s;
    L->dead = s;
    state_at(L, s)->next[0] = s; /* EMPTY has one class */
    return 0;
}

static void lazy_release(Lazy *L)
{
    for (int k = 0; k < N_CHUNKS; k++)
        PyMem_RawFree(L->chunks[k]);
    for (int32_t i = 0; i < L->n_slabs; i++)
        PyMem_RawFree(L->slabs[i]);
    PyMem_RawFree(L->slabs);
    PyMem_RawFree(L->map);
    if (L->A != NULL)
        L->A->nbytes -= L->nbytes;
    memset(L, 0, sizeof *L);
}

/* ------------------------------------------------------------------ Python objects */

static PyObject *limit_exceeded; /* pda.errors.LimitExceeded */

typedef struct {
    PyObject_HEAD
    Arena *A;
} ArenaObject;

typedef struct {
    PyObject_HEAD
    ArenaObject *arena; /* held: the DFA's states are the arena's terms */
    Lazy L;
} LazyObject;

static PyTypeObject ArenaType, LazyType;

/* Take the arena's lock from a thread holding the GIL: waiting, if it must, without the GIL (a holder
 * never needs it). */
static void lock_with_gil(Arena *A)
{
    if (!PyThread_acquire_lock(A->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(A->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* Raise the exception of an E_* code; NULL. */
static PyObject *raise_code(int code, const Arena *A, const Lazy *L)
{
    switch (code) {
    case E_NOMEM:
        return PyErr_NoMemory();
    case E_LIMIT:
        PyErr_Format(limit_exceeded,
                     "lazy DFA arena: %zu bytes held, a new term or state would pass its budget of %zu bytes "
                     "(memory budget lazy_dfa_states)",
                     A->nbytes, A->max_bytes);
        return NULL;
    case E_STATES:
        PyErr_Format(limit_exceeded, "lazy DFA exceeds max_states=%d", L ? L->max_states : 0);
        return NULL;
    case E_DEPTH:
        PyErr_Format(limit_exceeded, "a regex term nests deeper than %d levels (lazy DFA derivatives)", MAX_DEPTH);
        return NULL;
    default:
        PyErr_Format(PyExc_SystemError, "lazy DFA: unknown failure code %d", code);
        return NULL;
    }
}

/* A term id result (or a negative E_* code) as a Python int. */
static PyObject *term_result(ArenaObject *self, int32_t r)
{
    if (r < 0)
        return raise_code(-r, self->A, NULL);
    return PyLong_FromLong(r);
}

/* A term id argument: 0 or -1 with an exception naming `what`. Needs the lock (reads n_terms). */
static int check_term(Arena *A, long t, const char *what)
{
    if (t < 0 || t >= A->n_terms) {
        PyErr_Format(PyExc_ValueError, "%s: %ld is not a term of this arena (it has %d)", what, t, A->n_terms);
        return -1;
    }
    return 0;
}

static PyObject *Arena_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"max_bytes", NULL};
    Py_ssize_t max_bytes = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n:Arena", names, &max_bytes))
        return NULL;
    if (max_bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "Arena: max_bytes must be >= 0");
        return NULL;
    }
    ArenaObject *self = (ArenaObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if ((self->A = arena_new((size_t)max_bytes)) == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void Arena_dealloc(ArenaObject *self)
{
    arena_free(self->A);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Arena_empty(ArenaObject *self, PyObject *unused)
{
    return PyLong_FromLong(T_EMPTY);
}

static PyObject *Arena_eps(ArenaObject *self, PyObject *unused)
{
    return PyLong_FromLong(T_EPS);
}

static PyObject *Arena_full(ArenaObject *self, PyObject *unused)
{
    return PyLong_FromLong(T_FULL);
}

static PyObject *Arena_bytes(ArenaObject *self, PyObject *arg)
{
    Mask m;
    unsigned char raw[32];
    if (PyBytes_Check(arg)) {
        if (PyBytes_GET_SIZE(arg) != 32) {
            PyErr_SetString(PyExc_ValueError, "bytes_: a bytes mask must be 32 bytes (bit b of byte b // 8: byte b)");
            return NULL;
        }
        memcpy(raw, PyBytes_AS_STRING(arg), 32);
    } else if (PyLong_Check(arg)) {
        PyObject *as = PyObject_CallMethod(arg, "to_bytes", "is", 32, "little");
        if (as == NULL) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "bytes_: an int mask must be in 0 .. 2**256 - 1");
            }
            return NULL;
        }
        memcpy(raw, PyBytes_AS_STRING(as), 32);
        Py_DECREF(as);
    } else {
        PyErr_SetString(PyExc_TypeError, "bytes_: the mask is an int (bit b: byte b) or 32 bytes");
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        m.w[i] = 0;
        for (int k = 0; k < 8; k++)
            m.w[i] |= (uint64_t)raw[8 * i + k] << (8 * k);
    }
    lock_with_gil(self->A);
    int32_t r = mk_bytes(self->A, &m);
    PyThread_release_lock(self->A->lock);
    return term_result(self, r);
}

/* The shared body of the constructors of one to n terms: kind 'c' concat, '|' or, '&' and, '!' not, '1' first. */
static PyObject *build(ArenaObject *self, char op, PyObject *const *args, Py_ssize_t nargs, int32_t lo, int32_t hi)
{
    int32_t stack_ids[8] = {0}, *ids = nargs <= 8 ? stack_ids : PyMem_Malloc((size_t)nargs * sizeof(int32_t));
    if (ids == NULL)
        return PyErr_NoMemory();
    long v = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        v = PyLong_AsLong(args[i]);
        if (v == -1 && PyErr_Occurred())
            goto fail;
        if (v < INT32_MIN || v > INT32_MAX)
            v = -1;
        ids[i] = (int32_t)v;
    }
    Arena *A = self->A;
    lock_with_gil(A);
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (check_term(A, ids[i], "a term argument") < 0) {
            PyThread_release_lock(A->lock);
            goto fail;
        }
    int32_t r;
    switch (op) {
    case 'c':
        r = mk_concat(A, ids[0], ids[1]);
        break;
    case '|':
    case '&':
        r = mk_set(A, op == '&', ids, (int32_t)nargs);
        break;
    case '!':
        r = mk_not(A, ids[0]);
        break;
    case '*':
        r = mk_repeat(A, ids[0], lo, hi);
        break;
    default:
        r = mk_first(A, ids[0]);
        break;
    }
    PyThread_release_lock(A->lock);
    if (ids != stack_ids)
        PyMem_Free(ids);
    return term_result(self, r);
fail:
    if (ids != stack_ids)
        PyMem_Free(ids);
    return NULL;
}

static PyObject *Arena_concat(ArenaObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "concat(a, b) takes two terms");
        return NULL;
    }
    return build(self, 'c', args, nargs, 0, 0);
}

static PyObject *Arena_or(ArenaObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "or_: too many terms");
        return NULL;
    }
    return build(self, '|', args, nargs, 0, 0);
}

static PyObject *Arena_and(ArenaObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "and_: too many terms");
        return NULL;
    }
    return build(self, '&', args, nargs, 0, 0);
}

static PyObject *Arena_not(ArenaObject *self, PyObject *arg)
{
    return build(self, '!', &arg, 1, 0, 0);
}

static PyObject *Arena_first(ArenaObject *self, PyObject *arg)
{
    return build(self, '1', &arg, 1, 0, 0);
}

static PyObject *Arena_repeat(ArenaObject *self, PyObject *args)
{
    PyObject *t;
    long lo, hi;
    if (!PyArg_ParseTuple(args, "Oll:repeat", &t, &lo, &hi))
        return NULL;
    if (lo < 0 || lo > INT32_MAX - 1 || hi < -1 || hi > INT32_MAX - 1) {
        PyErr_Format(PyExc_ValueError, "repeat: counts %ld, %ld out of range (0 <= lo, hi is -1 or >= 0, below 2**31 - 1)",
                     lo, hi);
        return NULL;
    }
    return build(self, '*', &t, 1, (int32_t)lo, (int32_t)hi);
}

/* A term argument read under the lock: 0, or -1 with an exception. */
static int term_arg(Arena *A, PyObject *arg, int32_t *out)
{
    long t = PyLong_AsLong(arg);
    if (t == -1 && PyErr_Occurred())
        return -1;
    lock_with_gil(A);
    int ok = check_term(A, t, "a term argument");
    PyThread_release_lock(A->lock);
    *out = (int32_t)t;
    return ok;
}

static PyObject *Arena_nullable(ArenaObject *self, PyObject *arg)
{
    int32_t t;
    if (term_arg(self->A, arg, &t) < 0)
        return NULL;
    lock_with_gil(self->A);
    int n = self->A->terms[t].nullable;
    PyThread_release_lock(self->A->lock);
    return PyBool_FromLong(n);
}

static PyObject *Arena_live(ArenaObject *self, PyObject *arg)
{
    int32_t t;
    if (term_arg(self->A, arg, &t) < 0)
        return NULL;
    lock_with_gil(self->A);
    int r = is_live(self->A, t);
    PyThread_release_lock(self->A->lock);
    if (r < 0)
        return raise_code(-r, self->A, NULL);
    return PyBool_FromLong(r);
}

static PyObject *Arena_derivative(ArenaObject *self, PyObject *args)
{
    PyObject *arg;
    int byte;
    int32_t t;
    if (!PyArg_ParseTuple(args, "Oi:derivative", &arg, &byte))
        return NULL;
    if (byte < 0 || byte > 255) {
        PyErr_Format(PyExc_ValueError, "derivative: byte %d is not in 0..255", byte);
        return NULL;
    }
    if (term_arg(self->A, arg, &t) < 0)
        return NULL;
    lock_with_gil(self->A);
    int32_t r = derive(self->A, t, byte, 0);
    PyThread_release_lock(self->A->lock);
    return term_result(self, r);
}

static PyObject *Arena_get_n_terms(ArenaObject *self, void *closure)
{
    lock_with_gil(self->A);
    int32_t n = self->A->n_terms;
    PyThread_release_lock(self->A->lock);
    return PyLong_FromLong(n);
}

static PyObject *Arena_get_nbytes(ArenaObject *self, void *closure)
{
    lock_with_gil(self->A);
    size_t n = self->A->nbytes;
    PyThread_release_lock(self->A->lock);
    return PyLong_FromSize_t(n);
}

static PyObject *Arena_get_max_bytes(ArenaObject *self, void *closure)
{
    return PyLong_FromSize_t(self->A->max_bytes);
}

static PyMethodDef Arena_methods[] = {
    {"empty", (PyCFunction)Arena_empty, METH_NOARGS, "The term with no word."},
    {"eps", (PyCFunction)Arena_eps, METH_NOARGS, "The term of the empty word."},
    {"full", (PyCFunction)Arena_full, METH_NOARGS, "The term of every byte string (NOT EMPTY)."},
    {"bytes_", (PyCFunction)Arena_bytes, METH_O, "The term of one byte from a set (an int's bits or 32 bytes)."},
    {"concat", (PyCFunction)(void (*)(void))Arena_concat, METH_FASTCALL, "a followed by b."},
    {"or_", (PyCFunction)(void (*)(void))Arena_or, METH_FASTCALL, "The union of the terms (EMPTY for none)."},
    {"and_", (PyCFunction)(void (*)(void))Arena_and, METH_FASTCALL, "The intersection of the terms (FULL for none)."},
    {"not_", (PyCFunction)Arena_not, METH_O, "The complement of a term among all byte strings."},
    {"repeat", (PyCFunction)Arena_repeat, METH_VARARGS, "repeat(t, lo, hi): t{lo,hi}, hi -1 unbounded."},
    {"first", (PyCFunction)Arena_first, METH_O, "The words of t with no proper prefix in t."},
    {"nullable", (PyCFunction)Arena_nullable, METH_O, "Does the term hold the empty word?"},
    {"live", (PyCFunction)Arena_live, METH_O, "Does the term hold any word?"},
    {"derivative", (PyCFunction)Arena_derivative, METH_VARARGS, "derivative(t, byte): the words w with byte+w in t."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Arena_getset[] = {
    {"n_terms", (getter)Arena_get_n_terms, NULL, "Terms made so far.", NULL},
    {"nbytes", (getter)Arena_get_nbytes, NULL, "Bytes the arena and its lazy DFAs hold.", NULL},
    {"max_bytes", (getter)Arena_get_max_bytes, NULL, "The budget nbytes may not pass.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ArenaType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._derive.Arena",
    .tp_basicsize = sizeof(ArenaObject),
    .tp_dealloc = (destructor)Arena_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Arena(max_bytes=unbounded): hash-consed byte-regex terms and their derivatives (see derive.py).",
    .tp_methods = Arena_methods,
    .tp_getset = Arena_getset,
    .tp_new = Arena_new,
};

/* ---- Lazy */

static PyObject *Lazy_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"arena", "term", "max_states", NULL};
    PyObject *arena;
    long term, max_states = INT32_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!l|l:Lazy", names, &ArenaType, &arena, &term, &max_states))
        return NULL;
    if (max_states < 2 || max_states > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "Lazy: max_states %ld is not in 2 .. 2**31 - 1", max_states);
        return NULL;
    }
    Arena *A = ((ArenaObject *)arena)->A;
    LazyObject *self = (LazyObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    lock_with_gil(A);
    if (check_term(A, term, "Lazy's start term") < 0) {
        PyThread_release_lock(A->lock);
        Py_DECREF(self);
        return NULL;
    }
    int rc = lazy_init(&self->L, A, (int32_t)term, (int32_t)max_states);
    if (rc) {
        Lazy failed = self->L;
        lazy_release(&self->L);
        PyThread_release_lock(A->lock);
        Py_DECREF(self);
        return raise_code(rc, A, &failed);
    }
    PyThread_release_lock(A->lock);
    Py_INCREF(arena);
    self->arena = (ArenaObject *)arena;
    return (PyObject *)self;
}

static void Lazy_dealloc(LazyObject *self)
{
    if (self->arena != NULL) {
        lock_with_gil(self->arena->A);
        lazy_release(&self->L);
        PyThread_release_lock(self->arena->A->lock);
        Py_DECREF(self->arena);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A state argument: 0, or -1 with an exception. */
static int state_arg(LazyObject *self, PyObject *arg, int32_t *out)
{
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return -1;
    int32_t n = LOAD_ACQUIRE(&self->L.n_states);
    if (s < 0 || s >= n) {
        PyErr_Format(PyExc_ValueError, "%ld is not a state of this lazy DFA (it has %d)", s, n);
        return -1;
    }
    *out = (int32_t)s;
    return 0;
}

/* lazy_step from a thread holding the GIL (a contended lock is waited for without it). */
static int step_with_gil(LazyObject *self, int32_t s, int byte, int32_t *out)
{
    const State *st = state_at(&self->L, s);
    int32_t t = LOAD_ACQUIRE(&st->next[st->cls[byte]]);
    if (t < 0) {
        lock_with_gil(self->L.A);
        t = fill(&self->L, s, byte);
        PyThread_release_lock(self->L.A->lock);
        if (t < 0)
            return -t;
    }
    *out = t;
    return 0;
}

static PyObject *Lazy_step(LazyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t s, t;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "step(state, byte)");
        return NULL;
    }
    if (state_arg(self, args[0], &s) < 0)
        return NULL;
    long byte = PyLong_AsLong(args[1]);
    if (byte == -1 && PyErr_Occurred())
        return NULL;
    if (byte < 0 || byte > 255) {
        PyErr_Format(PyExc_ValueError, "step: byte %ld is not in 0..255", byte);
        return NULL;
    }
    int rc = step_with_gil(self, s, (int)byte, &t);
    if (rc)
        return raise_code(rc, self->L.A, &self->L);
    return PyLong_FromLong(t);
}

/* Inputs at least this long are run without the GIL. */
#define RUN_NOGIL_BYTES 256

static PyObject *Lazy_run(LazyObject *self, PyObject *args)
{
    PyObject *arg;
    Py_buffer data;
    int32_t s;
    if (!PyArg_ParseTuple(args, "Oy*:run", &arg, &data))
        return NULL;
    if (state_arg(self, arg, &s) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const uint8_t *p = data.buf;
    Py_ssize_t n = data.len;
    int32_t dead = self->L.dead;
    int rc = 0;
    if (n >= RUN_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && s != dead && !rc; i++)
            rc = lazy_step(&self->L, s, p[i], &s);
        Py_END_ALLOW_THREADS
    } else {
        for (Py_ssize_t i = 0; i < n && s != dead && !rc; i++)
            rc = step_with_gil(self, s, p[i], &s);
    }
    PyBuffer_Release(&data);
    if (rc)
        return raise_code(rc, self->L.A, &self->L);
    return PyLong_FromLong(s);
}

static PyObject *Lazy_run_many(LazyObject *self, PyObject *args)
{
    PyObject *arg, *items;
    int32_t s0;
    if (!PyArg_ParseTuple(args, "OO:run_many", &arg, &items))
        return NULL;
    if (state_arg(self, arg, &s0) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(items, "run_many: data must be a sequence of bytes");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    int32_t *ends = (int32_t *)PyBytes_AS_STRING(out), dead = self->L.dead;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "run_many: item %zd is not bytes", k);
            goto fail;
        }
        const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(item);
        Py_ssize_t len = PyBytes_GET_SIZE(item);
        int32_t s = s0;
        for (Py_ssize_t i = 0; i < len && s != dead; i++) {
            int rc = step_with_gil(self, s, p[i], &s);
            if (rc) {
                raise_code(rc, self->L.A, &self->L);
                goto fail;
            }
        }
        ends[k] = s;
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(seq);
    Py_DECREF(out);
    return NULL;
}

static PyObject *Lazy_successors(LazyObject *self, PyObject *arg)
{
    int32_t s, row[256];
    if (state_arg(self, arg, &s) < 0)
        return NULL;
    for (int b = 0; b < 256; b++) {
        int rc = step_with_gil(self, s, b, &row[b]);
        if (rc)
            return raise_code(rc, self->L.A, &self->L);
    }
    return PyBytes_FromStringAndSize((const char *)row, sizeof row);
}

static PyObject *Lazy_accept(LazyObject *self, PyObject *arg)
{
    int32_t s;
    if (state_arg(self, arg, &s) < 0)
        return NULL;
    return PyBool_FromLong(lazy_accept(&self->L, s));
}

static PyObject *Lazy_live(LazyObject *self, PyObject *arg)
{
    int32_t s;
    if (state_arg(self, arg, &s) < 0)
        return NULL;
    return PyBool_FromLong(s != self->L.dead);
}

static PyObject *Lazy_term(LazyObject *self, PyObject *arg)
{
    int32_t s;
    if (state_arg(self, arg, &s) < 0)
        return NULL;
    return PyLong_FromLong(state_at(&self->L, s)->term);
}

static PyObject *Lazy_get_n_states(LazyObject *self, void *closure)
{
    return PyLong_FromLong(LOAD_ACQUIRE(&self->L.n_states));
}

static PyObject *Lazy_get_dead(LazyObject *self, void *closure)
{
    return PyLong_FromLong(self->L.dead);
}

static PyObject *Lazy_get_arena(LazyObject *self, void *closure)
{
    Py_INCREF(self->arena);
    return (PyObject *)self->arena;
}

static PyMethodDef Lazy_methods[] = {
    {"step", (PyCFunction)(void (*)(void))Lazy_step, METH_FASTCALL, "step(state, byte) -> the next state."},
    {"run", (PyCFunction)Lazy_run, METH_VARARGS, "run(state, data) -> the state after data (dead once dead)."},
    {"run_many", (PyCFunction)Lazy_run_many, METH_VARARGS,
     "run_many(state, data) -> the state after each bytes object of data from state, as int32 (bytes)."},
    {"successors", (PyCFunction)Lazy_successors, METH_O, "The state's successors by byte 0..255, as 256 int32 (bytes)."},
    {"accept", (PyCFunction)Lazy_accept, METH_O, "Does the state's term hold the empty word?"},
    {"live", (PyCFunction)Lazy_live, METH_O, "Is the state not the dead one (its term holds a word)?"},
    {"term", (PyCFunction)Lazy_term, METH_O, "The arena term the state is."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Lazy_getset[] = {
    {"n_states", (getter)Lazy_get_n_states, NULL, "States made so far (start 0).", NULL},
    {"dead", (getter)Lazy_get_dead, NULL, "The dead state (0 when the start's language is empty, else 1).", NULL},
    {"arena", (getter)Lazy_get_arena, NULL, "The arena whose terms the states are.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LazyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._derive.Lazy",
    .tp_basicsize = sizeof(LazyObject),
    .tp_dealloc = (destructor)Lazy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lazy(arena, term, max_states=2**31-1): the DFA of a term, states made when first stepped to.",
    .tp_methods = Lazy_methods,
    .tp_getset = Lazy_getset,
    .tp_new = Lazy_new,
};

/* ---- the C interface other kernels call (the capsule _C_API) */

typedef struct {
    /* The Lazy core of a Lazy object (borrowed: valid while the object lives), or NULL with TypeError.
     * Needs the GIL; the others do not. */
    void *(*core)(PyObject *lazy);
    /* Step state s (a state of that DFA) by a byte: 0 and *out, or E_NOMEM 1, E_LIMIT 2, E_STATES 3, E_DEPTH 4. */
    int (*step)(void *core, int32_t s, int byte, int32_t *out);
    int (*accept)(void *core, int32_t s);
    int32_t (*dead)(void *core);
} DeriveAPI;

static void *api_core(PyObject *lazy)
{
    if (!PyObject_TypeCheck(lazy, &LazyType)) {
        PyErr_SetString(PyExc_TypeError, "not a pda.kernels._derive.Lazy");
        return NULL;
    }
    return &((LazyObject *)lazy)->L;
}

static DeriveAPI api = {api_core, lazy_step, lazy_accept, lazy_dead};

static struct PyModuleDef derive_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._derive", "Byte-regex terms, derivatives and lazy DFAs (see derive.py).", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__derive(void)
{
    PyObject *errors = PyImport_ImportModule("pda.errors");
    if (errors == NULL)
        return NULL;
    limit_exceeded = PyObject_GetAttrString(errors, "LimitExceeded");
    Py_DECREF(errors);
    if (limit_exceeded == NULL || PyType_Ready(&ArenaType) < 0 || PyType_Ready(&LazyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&derive_module);
    if (m == NULL)
        return NULL;
    PyObject *capsule = PyCapsule_New(&api, "pda.kernels._derive._C_API", NULL);
    if (capsule == NULL || PyModule_AddObjectRef(m, "_C_API", capsule) < 0
        || PyModule_AddObjectRef(m, "Arena", (PyObject *)&ArenaType) < 0
        || PyModule_AddObjectRef(m, "Lazy", (PyObject *)&LazyType) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(capsule);
    return m;
}

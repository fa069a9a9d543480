/* pda.kernels._product: breadth-first exploration of a product of terminal DFAs.
 *
 * Written against the plain Python C API and the buffer protocol, like _walk.c;
 * pda/kernels/product.py is the Python side and documents the interface.
 *
 * explore(table, dead, start, max_states) -> (trans, ptr, ids) or None
 *     table: int32 [g, k], C-contiguous: every terminal's DFA in one table of global
 *     state ids, table[s, c] the successor of global state s on product class c.
 *     dead: uint8 [g], 1 where a global state is its terminal's dead state.
 *     start: int32 [n], the start state's live components (one per terminal, in
 *     terminal order; each a global id that is not dead).
 *     A product state is the list of its live components in terminal order (each
 *     terminal's successor stays in its terminal's place, so the order holds).
 *     State 0 is the empty list (nothing live), state 1 the start; the others are
 *     numbered as breadth-first search meets them (states in id order, classes in
 *     order). A successor with exactly one live component s is "single": from there
 *     the product runs one terminal's DFA, so it is not explored and its entry is
 *     -(s + 1).
 *     Returns bytes objects: trans int64 [m, k] (a product state id, or -(s+1)),
 *     ptr int64 [m + 1] and ids int32 [ptr[m]] (state q's live components are
 *     ids[ptr[q]:ptr[q+1]]); or None when a product state id would exceed max_states.
 *
 * reach(table, dead, seeds) -> bytes
 *     The global states reachable from int64 `seeds` along `table` (the seeds included),
 *     dead states left out and not followed; int64 ids, ascending. (A product's single
 *     states: each runs one terminal's own DFA.)
 *
 * classes(byte_classes) -> (byte_class, rep)
 *     m int32 [256] arrays (any strides): bytes that every one maps alike form one class,
 *     numbered by their lowest byte; int32 bytes byte_class [256] and rep [k] (each class's
 *     lowest byte).
 *
 * combine(trans, byte_classes, accepts, lives, starts, deads, ids, words, max_states)
 *     -> (n, byte_class, trans, ptr, term, state, accept_bits, live_bits) or None
 *     The whole product of m one-terminal DFAs (pda.regex.product.combine documents the result): their
 *     classes as `classes` finds them, their states numbered as one table of global ids over those classes
 *     (DFA j's from offset_j = n_0 + ... + n_(j-1); the table is never made, each row read in place from its
 *     DFA), `explore` from the starts that are not dead, the singles it meets and what they reach (`reach`),
 *     numbered explored states first (the start 0), the singles ascending, dead last, and the live components
 *     and bit rows of every state. trans: int32 [n_j, k_j] (any strides), byte_classes int32 [256],
 *     accepts/lives bool [n_j, >= 1] (column 0 read), starts and deads ints, ids int32 [m] below 64 * words.
 *     Every transition it reads is checked (ValueError; rows no state reaches are not read). None when a
 *     state id would pass max_states.
 *
 * grower() -> capsule; grow(grower, trans, lo, hi, dead, mixed_base, start)
 *     One product grown across calls (pda.regex.product.SharedProduct): `trans` int32
 *     [cap, k], writable, holds every terminal's DFA as rows [lo, hi) of global ids (a
 *     "single" state: one terminal live), whose successors are singles or `dead`; `start`
 *     (int32, ascending, two or more singles) is a candidate set's start. The grower keeps
 *     the mixed states (two or more singles live) interned by content across calls: the
 *     start is interned, and every new state reached from it gets its row written at
 *     mixed_base + (its internal id - 1), where a successor is `dead` (nothing live), a
 *     single (one live), or a mixed state's row. Returns (start's row, first new row, ptr
 *     int64 [m + 1] (absolute offsets: subtract ptr[0]), ids int32) for the m new states'
 *     components, or None when a new state's row would be at or past cap: the grower is
 *     then spent (as after any failure) and every later grow returns None. Holds the GIL:
 *     it writes the caller's table, and two grows of one grower must not interleave.
 *     With `lazy` (a lazy_rows capsule over the same table), a single's UNFILLED entry is
 *     filled as it is read; a filler's failure raises (LimitExceeded) and spends the grower.
 * describe(live_bits, accept_bits, accept_row, first, ptr, ids, lo, term, state, lazy, row_ids, accept_rows)
 *     -> (term, state) int32 bytes: the rest of a grow's new states, written where the shared
 *     product keeps them, so that a candidate set costs two calls and no numpy pass over a few
 *     rows: each new row's live/accept bits (the ORs of its singles' rows), its accept row id
 *     (interned in the dict `row_ids`, row bytes -> id, new masks appended to `accept_rows`
 *     as ints, in row order) and its components (each single's terminal and own state).
 *
 * lazy_rows(trans, rep, live_bits, accept_bits, accept_row, dead, lo, hi, terms) -> capsule
 *     The filler of a shared table's lazy singles: terminals whose DFA is a lazy one
 *     (pda.kernels._derive.Lazy), their states given rows of `trans` (int32 [cap, k]) from
 *     [lo, hi) in the order first reached (a map per terminal, state -> row, in chunks of
 *     MAP_CHUNK states made when first needed). `terms` is a sequence of (lazy, terminal
 *     id, accept row id, max_states); `rep` int32 [k] each class's lowest byte;
 *     live_bits/accept_bits uint64 [cap, words], accept_row int32 [cap]. A row is "made"
 *     the first time a step reaches its state: its entries set to UNFILLED (-1), its live
 *     bit, accept bit and accept row written, and only then its id published (in the map,
 *     then in the entry that leads to it, with release order), so a reader that finds the
 *     id finds its flags. An entry is UNFILLED until read; the filler (lazy_fill_entry here,
 *     and the C function of the capsule _LAZY_API, which the Grower
 *     and the walk kernel call without the GIL) steps the Lazy by the class's lowest byte
 *     and writes the successor's row (DEAD `dead` when the Lazy's is dead). The capsule
 *     holds the arrays' buffers and the Lazy objects while it lives.
 * lazy_start(rows, i) -> int: terminal i's (of `terms`) start row, made; `dead` when its
 *     language is empty.
 * lazy_owner(rows, row) -> (terminal id, lazy state) of a made row.
 * lazy_fill_entry(rows, row, cls) -> int: one entry of a made row, filled if UNFILLED (without the GIL).
 *     Failures raise LimitExceeded (a lazy DFA's arena budget or max_states, a term nested
 *     too deep, or a state past the rows kept for lazy states) or MemoryError.
 *
 * _LAZY_API, a capsule named "pda.kernels._product._LAZY_API" pointing to a LazyAPI struct:
 *     void *rows(PyObject *capsule)   the filler behind a lazy_rows capsule (NULL and an
 *                                     error if not one); needs the GIL
 *     int fill(void *rows, int32_t row, int32_t cls, int32_t *out)
 *                                     0 and the filled entry in *out (written to the table
 *                                     too), or a failure code; no GIL needed
 *     void raise(int code)            the failure as a Python exception; needs the GIL
 *
 * Method: one pass over the queue; a state's successors are gathered per class from its
 * components' successors that are not dead (listed once per global state, when a product state
 * first holds it) and interned in an open-addressing hash table keyed by content, so the work is
 * O(explored states x (classes + the live components' live successors)); a grown state of two singles reads
 * its two rows side by side instead (`grow_pair`). Every index read from the
 * inputs is checked before it is used (ValueError), and the search runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_format.h"

/* The int32 at p, which need not be aligned (arrays read back from the disk cache may not be). */
static inline int32_t load_int32(const char *p)
{
    int32_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

/* combine's terminals' DFAs read in place, as one table of global ids (int32 [g, k]) that is never made:
 * global state s of DFA j (offsets[j] <= s < offsets[j + 1]) has row s - offsets[j] of the view tv[j] (any
 * strides), its successor on class c at byte offset column[j * k + c] of that row (`row_entry`), a state
 * of DFA j, global once offsets[j] is added. A made table cost a pass over every state and ~4 bytes a state and class of fresh
 * memory per call: for a 2,290-state product of 3,735 own states, with the other buffers, the kernel's page
 * faults were as long as its search. */
typedef struct {
    const Py_buffer *tv;
    const int64_t *column, *offsets;
    const int32_t *owner;
    int64_t k;
} Rows;

/* The successor on class c in the row `row` of DFA j, as a state of DFA j (unchecked: callers check it is one). */
static inline int32_t row_entry(const Rows *r, const char *row, int32_t j, int64_t c)
{
    return load_int32(row + r->column[j * r->k + c]);
}

/* Where global state s's row starts in its DFA's view; its DFA in *j. */
static inline const char *row_of(const Rows *r, int64_t s, int32_t *j)
{
    *j = r->owner[s];
    return (const char *)r->tv[*j].buf + (s - r->offsets[*j]) * r->tv[*j].strides[0];
}

typedef struct {
    int64_t k;
    const int32_t *table;
    const Rows *rows; /* combine's: the DFAs read in place (`table` is then NULL) */
    const uint8_t *dead;
    /* explored states: components ids[ptr[q]:ptr[q+1]] */
    int32_t *ids;
    int64_t n_ids, cap_ids;
    int64_t *ptr, n_states, cap_states;
    uint64_t *hash_of;
    int32_t *trans; /* n_states * k, filled as states are expanded: a state id, or -(s + 1) for single s (int32:
                     * half the memory a search writes, and global ids and state ids are below INT32_MAX) */
    /* open addressing: slots hold a state id or -1 */
    int64_t *slots, n_slots;
    /* a grower whose last grow failed midway (states interned without rows): it grows no more */
    int spent;
} Explorer;

/* Whether a[0:n] equals b[0:n]: the lists compared are a few ids long, where a loop beats a call to memcmp. */
static inline int same_ids(const int32_t *a, const int32_t *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static uint64_t hash_ids(const int32_t *ids, int64_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)ids[i];
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    return h;
}

static int grow_slots(Explorer *e)
{
    int64_t n = e->n_slots * 2, q, i;
    int64_t *slots = malloc((size_t)n * sizeof(int64_t));
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)n * sizeof(int64_t));
    for (q = 0; q < e->n_states; q++) {
        i = (int64_t)(e->hash_of[q] & (uint64_t)(n - 1));
        while (slots[i] >= 0)
            i = (i + 1) & (n - 1);
        slots[i] = q;
    }
    free(e->slots);
    e->slots = slots;
    e->n_slots = n;
    return 0;
}

/* The slot where the state with components ids[0:n] (hash h) is, or the empty slot where it would go. */
static int64_t find_slot(const Explorer *e, const int32_t *ids, int64_t n, uint64_t h)
{
    int64_t i = (int64_t)(h & (uint64_t)(e->n_slots - 1)), q;
    while ((q = e->slots[i]) >= 0) {
        if (e->hash_of[q] == h && e->ptr[q + 1] - e->ptr[q] == n
            && same_ids(e->ids + e->ptr[q], ids, n))
            return i;
        i = (i + 1) & (e->n_slots - 1);
    }
    return i;
}

/* Append a new state with components ids[0:n]; its id, or -1 on memory failure. */
static int64_t append_state(Explorer *e, const int32_t *ids, int64_t n, uint64_t h)
{
    int64_t q;
    if (e->n_states + 1 >= e->cap_states) {
        int64_t cap = e->cap_states * 2;
        int64_t *ptr = realloc(e->ptr, (size_t)(cap + 1) * sizeof(int64_t));
        if (!ptr)
            return -1;
        e->ptr = ptr;
        uint64_t *hash_of = realloc(e->hash_of, (size_t)cap * sizeof(uint64_t));
        if (!hash_of)
            return -1;
        e->hash_of = hash_of;
        if (e->trans != NULL) { /* a grower writes its rows into the caller's table instead */
            int32_t *trans = realloc(e->trans, (size_t)cap * (size_t)(e->k ? e->k : 1) * sizeof(int32_t));
            if (!trans)
                return -1;
            e->trans = trans;
        }
        e->cap_states = cap;
    }
    if (e->n_ids + n > e->cap_ids) {
        int64_t cap = e->cap_ids * 2 > e->n_ids + n ? e->cap_ids * 2 : e->n_ids + n;
        int32_t *grown = realloc(e->ids, (size_t)cap * sizeof(int32_t));
        if (!grown)
            return -1;
        e->ids = grown;
        e->cap_ids = cap;
    }
    q = e->n_states++;
    memcpy(e->ids + e->n_ids, ids, (size_t)n * sizeof(int32_t));
    e->n_ids += n;
    e->ptr[q + 1] = e->n_ids;
    e->hash_of[q] = h;
    return q;
}

/* The id of the state with components ids[0:n], added if new (new ids: *added = 1); -1 on memory failure. */
static int64_t intern(Explorer *e, const int32_t *ids, int64_t n, int *added)
{
    uint64_t h = hash_ids(ids, n);
    int64_t i = find_slot(e, ids, n, h), q = e->slots[i];
    *added = q < 0;
    if (q >= 0)
        return q;
    q = append_state(e, ids, n, h);
    if (q < 0)
        return -1;
    e->slots[i] = q;
    if (2 * e->n_states > e->n_slots && grow_slots(e) < 0)
        return -1;
    return q;
}

/* Per global state, its successors that are not dead, by class, in class order: a product state's
 * row then costs what its components can do rather than classes x components (a JSON Schema's key
 * literals are live on one class of seventy). A state's list is made the first time a product state
 * holds it (most of a table's states are never a mixed state's component), its entries checked then. */
typedef struct {
    int64_t *lo, *hi; /* state s's list is cls/dst[lo[s]:hi[s]]; lo[s] < 0 until it is made */
    int32_t *cls, *dst;
    int64_t n, cap;
    int32_t bad; /* the entry that stopped a list (not a global state) */
} Successors;

static int successors_init(Successors *sp, int64_t g, int64_t k)
{
    sp->n = 0;
    sp->cap = 4 * (k ? k : 1);
    sp->lo = malloc((size_t)(g ? g : 1) * sizeof(int64_t));
    sp->hi = malloc((size_t)(g ? g : 1) * sizeof(int64_t));
    sp->cls = malloc((size_t)sp->cap * sizeof(int32_t));
    sp->dst = malloc((size_t)sp->cap * sizeof(int32_t));
    if (sp->lo == NULL || sp->hi == NULL || sp->cls == NULL || sp->dst == NULL)
        return -1;
    memset(sp->lo, 0xff, (size_t)(g ? g : 1) * sizeof(int64_t));
    return 0;
}

static void successors_free(Successors *sp)
{
    free(sp->lo);
    free(sp->hi);
    free(sp->cls);
    free(sp->dst);
}

/* Make global state s's list if it is not made yet: 0, -1 out of memory, 2 on an entry that is not
 * a global state (kept in sp->bad). */
static int successors_of(Successors *sp, const Explorer *e, int64_t g, int32_t s)
{
    int64_t k = e->k, c, n = sp->n;
    if (sp->lo[s] >= 0)
        return 0;
    if (n + k > sp->cap) {
        int64_t cap = 2 * sp->cap > n + k ? 2 * sp->cap : n + k;
        int32_t *cls = realloc(sp->cls, (size_t)cap * sizeof(int32_t));
        if (cls == NULL)
            return -1;
        sp->cls = cls;
        int32_t *dst = realloc(sp->dst, (size_t)cap * sizeof(int32_t));
        if (dst == NULL)
            return -1;
        sp->dst = dst;
        sp->cap = cap;
    }
    /* The arrays in locals: the compiler reloaded each from its struct per entry, as the entries' stores might
     * have changed them. */
    int32_t *cls = sp->cls, *dst = sp->dst;
    const uint8_t *dead = e->dead;
    if (e->rows != NULL) {
        const Rows *r = e->rows;
        int32_t j;
        const char *row = row_of(r, s, &j);
        const int64_t *column = r->column + (int64_t)j * k;
        int64_t lo = r->offsets[j], size = r->offsets[j + 1] - lo;
        for (c = 0; c < k; c++) {
            int32_t local = load_int32(row + column[c]), t = (int32_t)(lo + local);
            if ((uint32_t)local >= (uint64_t)size) {
                sp->bad = local;
                return 2;
            }
            cls[n] = (int32_t)c;
            dst[n] = t;
            n += !dead[t];
        }
    } else {
        const int32_t *row = e->table + (int64_t)s * k;
        for (c = 0; c < k; c++) { /* written at n always, kept where not dead: no branch to mispredict */
            int32_t t = row[c];
            if ((uint32_t)t >= (uint64_t)g) {
                sp->bad = t;
                return 2;
            }
            cls[n] = (int32_t)c;
            dst[n] = t;
            n += !dead[t];
        }
    }
    sp->lo[s] = sp->n;
    sp->hi[s] = sp->n = n;
    return 0;
}

/* Counting sort, second step: offset[c] = where class c's list starts in the bucket (the prefix sums of
 * count), the bucket grown to hold them all. 0, or -1 when out of memory. */
static int bucket_offsets(const int64_t *count, int64_t *offset, int64_t k, int32_t **bucket, int64_t *cap)
{
    int64_t c, total = 0;
    for (c = 0; c < k; c++) {
        offset[c] = total;
        total += count[c];
    }
    if (total > *cap) {
        int32_t *grown = realloc(*bucket, (size_t)total * sizeof(int32_t));
        if (grown == NULL)
            return -1;
        *bucket = grown;
        *cap = total;
    }
    return 0;
}

/* Whether class c's successor list (after the bucket is filled: offset[c] ends it) equals class c - 1's:
 * neighbouring classes of a state often lead to the same components (a string's ordinary characters), and
 * a comparison of the two lists costs less than interning one again. */
static inline int same_as_previous(const int64_t *count, const int64_t *offset, const int32_t *bucket, int64_t c)
{
    return c > 0 && count[c] == count[c - 1]
           && same_ids(bucket + offset[c] - count[c], bucket + offset[c - 1] - count[c], count[c]);
}

/* Explore from the start; 0 when done, 1 over max_states, 2 on a table entry that is not a global
 * state (sp->bad), -1 on memory failure.
 * A state's successors are gathered per class by a counting sort of its components' sparse
 * successors (components in terminal order, so each class's list keeps that order). */
static int run(Explorer *e, Successors *sp, int64_t g, const int32_t *start, int64_t n_start, int64_t max_states)
{
    int64_t k = e->k, q, c, i, j, n, cap = 256;
    int added, status = -1;
    int64_t *count = calloc((size_t)k + 1, sizeof(int64_t)), *offset = malloc(((size_t)k + 1) * sizeof(int64_t));
    int32_t *bucket = malloc((size_t)cap * sizeof(int32_t)), empty = 0;
    if (count == NULL || offset == NULL || bucket == NULL)
        goto done;
    if (max_states > INT32_MAX - 1) /* state ids are int32 in e->trans */
        max_states = INT32_MAX - 1;
    /* state 0, nothing live; state 1, the start, found by content only if no other state has its components */
    if (intern(e, &empty, 0, &added) != 0 || append_state(e, start, n_start, hash_ids(start, n_start)) != 1)
        goto done;
    i = find_slot(e, start, n_start, e->hash_of[1]);
    if (e->slots[i] < 0)
        e->slots[i] = 1;
    for (q = 0; q < e->n_states; q++) {
        const int32_t *live = e->ids + e->ptr[q]; /* read before interning, which may move the pool */
        int64_t n_live = e->ptr[q + 1] - e->ptr[q];
        memset(count, 0, (size_t)k * sizeof(int64_t));
        for (i = 0; i < n_live; i++) {
            if ((status = successors_of(sp, e, g, live[i])) != 0)
                goto done;
            status = -1;
            const int32_t *cls = sp->cls;
            for (j = sp->lo[live[i]], n = sp->hi[live[i]]; j < n; j++)
                count[cls[j]]++;
        }
        if (bucket_offsets(count, offset, k, &bucket, &cap) < 0)
            goto done;
        for (i = 0; i < n_live; i++) {
            const int32_t *cls = sp->cls, *dst = sp->dst;
            for (j = sp->lo[live[i]], n = sp->hi[live[i]]; j < n; j++)
                bucket[offset[cls[j]]++] = dst[j];
        }
        int32_t *out = e->trans + q * k; /* read again after interning, which may move the table */
        for (c = 0; c < k; c++) {
            n = count[c];
            const int32_t *successors = bucket + offset[c] - n; /* offset[c] now ends class c's list */
            if (n == 1) {
                out[c] = (int32_t)(-((int64_t)successors[0] + 1)); /* INT32_MIN at most */
                continue;
            }
            if (same_as_previous(count, offset, bucket, c)) {
                out[c] = out[c - 1];
                continue;
            }
            j = intern(e, successors, n, &added);
            if (j < 0)
                goto done;
            if (added && j > max_states) {
                status = 1;
                goto done;
            }
            out = e->trans + q * k;
            out[c] = (int32_t)j;
        }
    }
    status = 0;
done:
    free(count);
    free(offset);
    free(bucket);
    return status;
}

/* An explorer over `table` (int32 [g, k] global ids) and its successor lists, empty, with room for cap_states
 * states before its arrays grow; 0, or -1 when out of memory (free it with explorer_free either way). */
static int explorer_init(Explorer *e, Successors *sp, const int32_t *table, const uint8_t *dead, int64_t g, int64_t k,
                         int64_t cap_states)
{
    memset(e, 0, sizeof *e);
    memset(sp, 0, sizeof *sp);
    e->k = k;
    e->table = table;
    e->dead = dead;
    e->cap_states = cap_states;
    e->cap_ids = 256;
    e->n_slots = 128;
    e->ptr = calloc((size_t)e->cap_states + 1, sizeof(int64_t));
    e->hash_of = malloc((size_t)e->cap_states * sizeof(uint64_t));
    e->trans = malloc((size_t)e->cap_states * (size_t)(k ? k : 1) * sizeof(int32_t));
    e->ids = malloc((size_t)e->cap_ids * sizeof(int32_t));
    e->slots = malloc((size_t)e->n_slots * sizeof(int64_t));
    if (!e->ptr || !e->hash_of || !e->trans || !e->ids || !e->slots || successors_init(sp, g, k) < 0)
        return -1;
    memset(e->slots, 0xff, (size_t)e->n_slots * sizeof(int64_t));
    return 0;
}

static void explorer_free(Explorer *e, Successors *sp)
{
    successors_free(sp);
    free(e->ptr);
    free(e->hash_of);
    free(e->trans);
    free(e->ids);
    free(e->slots);
}

static int get_buffer(PyObject *obj, Py_buffer *view, int flags, const char *format, Py_ssize_t itemsize,
                      const char *name)
{
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || view->format == NULL || strchr(format, native_code(view->format)[0]) == NULL) {
        PyErr_Format(PyExc_ValueError, "%s has the wrong dtype", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The (table, dead, third) arguments of explore and reach, acquired and checked: table a
 * 2-D int32 array, dead one byte per global state (its row), the third of `format`/`itemsize`.
 * The table's entries are checked as the searches read them (most rows are never read). 0, or -1
 * with an error set and nothing held. */
static int open_product_args(PyObject *const *args, Py_buffer *tv, Py_buffer *dv, Py_buffer *sv, const char *format,
                             Py_ssize_t itemsize, const char *name, int64_t *g, int64_t *k)
{
    if (get_buffer(args[0], tv, PyBUF_ND, "iil", 4, "table") < 0)
        return -1;
    if (get_buffer(args[1], dv, PyBUF_ND, "BB?", 1, "dead") < 0) {
        PyBuffer_Release(tv);
        return -1;
    }
    if (get_buffer(args[2], sv, PyBUF_ND, format, itemsize, name) < 0) {
        PyBuffer_Release(tv);
        PyBuffer_Release(dv);
        return -1;
    }
    int bad = 0;
    if (tv->ndim != 2) {
        PyErr_SetString(PyExc_ValueError, "table must be 2-dimensional");
        bad = 1;
    } else if (dv->len != tv->shape[0]) {
        PyErr_SetString(PyExc_ValueError, "dead must have one entry per global state");
        bad = 1;
    }
    *g = bad ? 0 : tv->shape[0];
    *k = bad ? 0 : tv->shape[1];
    if (bad) {
        PyBuffer_Release(tv);
        PyBuffer_Release(dv);
        PyBuffer_Release(sv);
        return -1;
    }
    return 0;
}

static PyObject *explore(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, dv, sv;
    Explorer e;
    int64_t g, k, i, n_start, max_states;
    int status = 0;
    PyObject *result = NULL;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "explore(table, dead, start, max_states) takes 4 arguments");
        return NULL;
    }
    max_states = PyLong_AsLongLong(args[3]);
    if (max_states == -1 && PyErr_Occurred())
        return NULL;
    if (open_product_args(args, &tv, &dv, &sv, "iil", 4, "start", &g, &k) < 0)
        return NULL;
    n_start = sv.len / 4;
    const int32_t *table = tv.buf, *start = sv.buf;
    for (i = 0; i < n_start; i++)
        if (start[i] < 0 || start[i] >= g || ((const uint8_t *)dv.buf)[start[i]]) {
            PyErr_Format(PyExc_ValueError, "start holds %d, not a live global state", (int)start[i]);
            PyBuffer_Release(&tv);
            PyBuffer_Release(&dv);
            PyBuffer_Release(&sv);
            return NULL;
        }
    Successors sp;
    if (explorer_init(&e, &sp, table, dv.buf, g, k, 64) < 0)
        status = -1;
    else {
        Py_BEGIN_ALLOW_THREADS
        status = run(&e, &sp, g, start, n_start, max_states);
        Py_END_ALLOW_THREADS
    }
    PyObject *wide = status == 0 ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(e.n_states * k * 8)) : NULL;
    if (wide != NULL) { /* the interface's int64 entries */
        int64_t *out = (int64_t *)PyBytes_AS_STRING(wide);
        for (i = 0; i < e.n_states * k; i++)
            out[i] = e.trans[i];
        result = Py_BuildValue("(Oy#y#)", wide, (const char *)e.ptr, (Py_ssize_t)((e.n_states + 1) * 8),
                               (const char *)e.ids, (Py_ssize_t)(e.n_ids * 4));
        Py_DECREF(wide);
    } else if (status == 0)
        ; /* the bytes' MemoryError is set */
    else if (status == 1) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (status == 2)
        PyErr_Format(PyExc_ValueError, "table holds %d, not a global state", (int)sp.bad);
    else
        PyErr_NoMemory();
    explorer_free(&e, &sp);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&sv);
    return result;
}

/* One state's row as the reach reads it: a row of a stacked `table` of every state, or (`flat` NULL) a row of its
 * own DFA read in place (`Rows`), whose entries are that DFA's states, offset by `lo`. */
typedef struct {
    const int32_t *flat;
    const char *row;
    int32_t j;
    int64_t lo, size;
} ReachRow;

static inline void reach_row(const int32_t *table, const Rows *rows, int64_t k, int64_t s, ReachRow *r)
{
    r->flat = table != NULL ? table + s * k : NULL;
    if (table == NULL) {
        r->row = row_of(rows, s, &r->j);
        r->lo = rows->offsets[r->j];
        r->size = rows->offsets[r->j + 1] - r->lo;
    }
}

/* The row's successor on class c as a global state in *t: 0, or 2 with the entry in *bad when it is not a state
 * (of the table's g, or of the row's own DFA). */
static inline int reach_entry(const ReachRow *r, const Rows *rows, int64_t g, int64_t c, int32_t *t, int32_t *bad)
{
    int32_t e = r->flat != NULL ? r->flat[c] : row_entry(rows, r->row, r->j, c);
    if ((uint32_t)e >= (uint64_t)(r->flat != NULL ? g : r->size)) {
        *bad = e;
        return 2;
    }
    *t = r->flat != NULL ? e : (int32_t)(r->lo + e);
    return 0;
}

/* Marks in `reached` the global states reachable from the `top` states on `stack` (marked already), dead states
 * left out and not followed: one depth-first pass. Frees `stack`. 0, or 2 on an entry that is not a state (in
 * *bad). */
static int reach_marked(const int32_t *table, const Rows *rows, const uint8_t *dead, int64_t g, int64_t k,
                        int64_t *stack, int64_t top, uint8_t *reached, int32_t *bad)
{
    ReachRow r;
    while (top > 0) {
        reach_row(table, rows, k, stack[--top], &r);
        for (int64_t c = 0; c < k; c++) {
            int32_t t;
            if (reach_entry(&r, rows, g, c, &t, bad)) {
                free(stack);
                return 2;
            }
            if (!dead[t] && !reached[t]) {
                reached[t] = 1;
                stack[top++] = t;
            }
        }
    }
    free(stack);
    return 0;
}

/* The global states reachable from `seeds` along `table` (seeds included), dead states left
 * out and not followed, marked in `reached`. 0, -1 out of memory, or 2 on an entry that is not a
 * global state (in *bad). */
static int reach_run(const int32_t *table, const uint8_t *dead, int64_t g, int64_t k, const int64_t *seeds,
                     int64_t n_seeds, uint8_t *reached, int32_t *bad)
{
    int64_t *stack = malloc((size_t)(g ? g : 1) * sizeof(int64_t)), top = 0;
    if (stack == NULL)
        return -1;
    for (int64_t i = 0; i < n_seeds; i++) {
        int64_t s = seeds[i];
        if (!dead[s] && !reached[s]) {
            reached[s] = 1;
            stack[top++] = s;
        }
    }
    return reach_marked(table, NULL, dead, g, k, stack, top, reached, bad);
}

static PyObject *reach(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, dv, sv;
    int64_t g, k, i, n_seeds;
    int bad = 0;
    PyObject *result = NULL;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "reach(table, dead, seeds) takes 3 arguments");
        return NULL;
    }
    if (open_product_args(args, &tv, &dv, &sv, "qql", 8, "seeds", &g, &k) < 0)
        return NULL;
    n_seeds = sv.len / 8;
    const int32_t *table = tv.buf;
    const int64_t *seeds = sv.buf;
    for (i = 0; !bad && i < n_seeds; i++)
        if (seeds[i] < 0 || seeds[i] >= g) {
            PyErr_Format(PyExc_ValueError, "seeds hold %lld, not a global state", (long long)seeds[i]);
            bad = 1;
        }
    uint8_t *reached = bad ? NULL : calloc((size_t)(g ? g : 1), 1);
    int status = bad ? 0 : reached == NULL ? -1 : 0;
    int32_t bad_entry = 0;
    if (!bad && status == 0) {
        Py_BEGIN_ALLOW_THREADS
        status = reach_run(table, dv.buf, g, k, seeds, n_seeds, reached, &bad_entry);
        Py_END_ALLOW_THREADS
    }
    if (!bad && status < 0)
        PyErr_NoMemory();
    else if (!bad && status == 2)
        PyErr_Format(PyExc_ValueError, "table holds %d, not a global state", (int)bad_entry);
    else if (!bad) {
        int64_t n = 0;
        for (i = 0; i < g; i++)
            n += reached[i];
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
        if (result != NULL) {
            int64_t *out = (int64_t *)PyBytes_AS_STRING(result), m = 0;
            for (i = 0; i < g; i++)
                if (reached[i])
                    out[m++] = i;
        }
    }
    free(reached);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&sv);
    return result;
}


/* ---- the filler of lazy singles (lazy_rows, lazy_start, lazy_owner, lazy_fill_entry, _LAZY_API) */

#define UNFILLED (-1)
/* Failure codes: pda.kernels._derive's (1 no memory, 2 arena budget, 3 max_states, 4 nesting), and ours. */
#define E_ROWS 5 /* a lazy state past its terminal's rows */
#define E_BAD 6  /* a row or class that is not a made lazy single's */
#define LAZY_ROWS_CAPSULE "pda.kernels._product.lazy_rows"

/* pda.kernels._derive's C interface (its capsule _C_API). */
typedef struct {
    void *(*core)(PyObject *lazy);
    int (*step)(void *core, int32_t s, int byte, int32_t *out);
    int (*accept)(void *core, int32_t s);
    int32_t (*dead)(void *core);
} DeriveAPI;

#define MAP_CHUNK 4096 /* a terminal's state -> row map: chunks of this many states, made when first needed */

typedef struct {
    PyObject *lazy; /* owned: keeps `core` alive */
    void *core;
    int32_t term, accept_id, dead;
    int64_t n_chunks;
    int32_t **map; /* map[s / MAP_CHUNK][s % MAP_CHUNK]: state s's row, 0 until made (no row is 0) */
} LazyTerm;

typedef struct {
    Py_buffer trans_view, rep_view, live_view, accept_view, row_view;
    int32_t *trans, *accept_row;
    const int32_t *rep;
    uint64_t *live_bits, *accept_bits;
    int64_t k, words, cap, lo, hi; /* the lazy rows span [lo, hi) */
    int32_t dead_row;
    LazyTerm *terms;
    int64_t n_terms;
    int64_t used; /* rows [lo, lo + used) are made, in the order made */
    int32_t *owner, *state; /* per row of [lo, hi): its terminal (index into terms) and lazy state */
    PyThread_type_lock lock; /* held only to make a row */
    const DeriveAPI *api;
} LazyRows;

static PyObject *limit_exceeded; /* pda.errors.LimitExceeded, imported with the first lazy_rows */

static void lazy_rows_free(PyObject *capsule)
{
    LazyRows *L = PyCapsule_GetPointer(capsule, LAZY_ROWS_CAPSULE);
    if (L == NULL)
        return;
    for (int64_t i = 0; L->terms != NULL && i < L->n_terms; i++) {
        Py_XDECREF(L->terms[i].lazy);
        for (int64_t c = 0; L->terms[i].map != NULL && c < L->terms[i].n_chunks; c++)
            free(L->terms[i].map[c]);
        free(L->terms[i].map);
    }
    free(L->terms);
    free(L->owner);
    free(L->state);
    if (L->lock)
        PyThread_free_lock(L->lock);
    PyBuffer_Release(&L->trans_view);
    PyBuffer_Release(&L->rep_view);
    PyBuffer_Release(&L->live_view);
    PyBuffer_Release(&L->accept_view);
    PyBuffer_Release(&L->row_view);
    free(L);
}

/* The row of terminal t's lazy state s, made if new (entries UNFILLED, flags written, then published in t's map
 * with release order): 0 and *out, or E_ROWS when the rows are used up or s is past t's map. */
static int make_row(LazyRows *L, LazyTerm *t, int32_t s, int32_t *out)
{
    int64_t chunk = s / MAP_CHUNK;
    if (s < 0 || chunk >= t->n_chunks)
        return E_ROWS;
    int32_t *cells = __atomic_load_n(&t->map[chunk], __ATOMIC_ACQUIRE);
    int32_t row = cells ? __atomic_load_n(&cells[s % MAP_CHUNK], __ATOMIC_ACQUIRE) : 0;
    if (row) {
        *out = row;
        return 0;
    }
    int code = 0;
    PyThread_acquire_lock(L->lock, WAIT_LOCK);
    if (cells == NULL && (cells = t->map[chunk]) == NULL) {
        if ((cells = calloc(MAP_CHUNK, sizeof(int32_t))) == NULL)
            code = 1;
        else
            __atomic_store_n(&t->map[chunk], cells, __ATOMIC_RELEASE);
    }
    if (!code && (row = cells[s % MAP_CHUNK]) == 0) {
        if (L->lo + L->used >= L->hi) {
            code = E_ROWS;
        } else {
            row = (int32_t)(L->lo + L->used++);
            L->owner[row - L->lo] = (int32_t)(t - L->terms);
            L->state[row - L->lo] = s;
            int32_t *entries = L->trans + (int64_t)row * L->k;
            for (int64_t c = 0; c < L->k; c++)
                entries[c] = UNFILLED;
            uint64_t bit = (uint64_t)1 << (t->term & 63);
            L->live_bits[(int64_t)row * L->words + (t->term >> 6)] |= bit;
            if (L->api->accept(t->core, s)) {
                L->accept_bits[(int64_t)row * L->words + (t->term >> 6)] |= bit;
                L->accept_row[row] = t->accept_id;
            } else {
                L->accept_row[row] = -1;
            }
            __atomic_store_n(&cells[s % MAP_CHUNK], row, __ATOMIC_RELEASE);
        }
    }
    PyThread_release_lock(L->lock);
    *out = row;
    return code;
}

/* Fill entry (row, cls) of a made lazy single: 0 and the successor's row in *out (also written to the table), or a
 * failure code. No GIL needed; two threads filling one entry write the same value. */
static int lazy_fill(void *rows, int32_t row, int32_t cls, int32_t *out)
{
    LazyRows *L = rows;
    if (row < L->lo || row >= L->lo + __atomic_load_n(&L->used, __ATOMIC_ACQUIRE) || cls < 0 || cls >= L->k)
        return E_BAD;
    LazyTerm *t = &L->terms[L->owner[row - L->lo]];
    int32_t next, target;
    int code = L->api->step(t->core, L->state[row - L->lo], L->rep[cls], &next);
    if (code)
        return code;
    if (next == t->dead)
        target = L->dead_row;
    else if ((code = make_row(L, t, next, &target)) != 0)
        return code;
    __atomic_store_n(&L->trans[(int64_t)row * L->k + cls], target, __ATOMIC_RELEASE);
    *out = target;
    return 0;
}

/* A failure code as the Python exception (needs the GIL). */
static void lazy_raise(int code)
{
    switch (code) {
    case 1:
        PyErr_NoMemory();
        break;
    case 2:
        PyErr_SetString(limit_exceeded, "a lazy terminal DFA's arena would pass its memory budget lazy_dfa_states");
        break;
    case 3:
        PyErr_SetString(limit_exceeded, "a lazy terminal DFA would pass its max_states");
        break;
    case 4:
        PyErr_SetString(limit_exceeded, "a lazy terminal DFA's term nests too deep");
        break;
    case E_ROWS:
        PyErr_SetString(limit_exceeded, "the lexer's lazy terminal DFAs made more states than the rows their shared "
                                        "product keeps for them (LAZY_SINGLE_ROWS, at most Limits.max_lexer_states)");
        break;
    default:
        PyErr_SetString(PyExc_ValueError, "not an entry of a made lazy single's row");
    }
}

static void *lazy_rows_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, LAZY_ROWS_CAPSULE);
}

typedef struct {
    void *(*rows)(PyObject *capsule);
    int (*fill)(void *rows, int32_t row, int32_t cls, int32_t *out);
    void (*raise)(int code);
} LazyAPI;

static LazyAPI lazy_api = {lazy_rows_of, lazy_fill, lazy_raise};

static PyObject *lazy_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const DeriveAPI *derive_api;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "lazy_rows(trans, rep, live_bits, accept_bits, accept_row, dead, lo, hi, "
                                         "terms)");
        return NULL;
    }
    if (derive_api == NULL && (derive_api = PyCapsule_Import("pda.kernels._derive._C_API", 0)) == NULL)
        return NULL;
    if (limit_exceeded == NULL) {
        PyObject *errors = PyImport_ImportModule("pda.errors");
        if (errors == NULL)
            return NULL;
        limit_exceeded = PyObject_GetAttrString(errors, "LimitExceeded");
        Py_DECREF(errors);
        if (limit_exceeded == NULL)
            return NULL;
    }
    LazyRows *L = calloc(1, sizeof(LazyRows));
    if (L == NULL)
        return PyErr_NoMemory();
    L->api = derive_api;
    PyObject *capsule = PyCapsule_New(L, LAZY_ROWS_CAPSULE, lazy_rows_free), *terms = NULL;
    if (capsule == NULL) {
        free(L);
        return NULL;
    }
    /* From here on the capsule's destructor releases whatever was acquired (zeroed views release nothing). */
    if (get_buffer(args[0], &L->trans_view, PyBUF_ND | PyBUF_WRITABLE, "iil", 4, "trans") < 0)
        goto fail;
    if (get_buffer(args[1], &L->rep_view, PyBUF_ND, "iil", 4, "rep") < 0)
        goto fail;
    if (get_buffer(args[2], &L->live_view, PyBUF_ND | PyBUF_WRITABLE, "QL", 8, "live_bits") < 0)
        goto fail;
    if (get_buffer(args[3], &L->accept_view, PyBUF_ND | PyBUF_WRITABLE, "QL", 8, "accept_bits") < 0)
        goto fail;
    if (get_buffer(args[4], &L->row_view, PyBUF_ND | PyBUF_WRITABLE, "iil", 4, "accept_row") < 0)
        goto fail;
    Py_buffer *tv = &L->trans_view, *lv = &L->live_view, *av = &L->accept_view;
    if (tv->ndim != 2 || lv->ndim != 2 || av->ndim != 2 || tv->shape[1] < 1 || L->rep_view.len / 4 != tv->shape[1]
        || lv->shape[0] != tv->shape[0] || av->shape[0] != tv->shape[0] || av->shape[1] != lv->shape[1]
        || L->row_view.len / 4 != tv->shape[0]) {
        PyErr_SetString(PyExc_ValueError, "lazy_rows needs trans [cap, k], rep [k], live_bits and accept_bits "
                                          "[cap, words], accept_row [cap]");
        goto fail;
    }
    L->trans = tv->buf;
    L->rep = L->rep_view.buf;
    L->live_bits = lv->buf;
    L->accept_bits = av->buf;
    L->accept_row = L->row_view.buf;
    L->k = tv->shape[1];
    L->cap = tv->shape[0];
    L->words = lv->shape[1];
    for (int64_t c = 0; c < L->k; c++)
        if (L->rep[c] < 0 || L->rep[c] > 255) {
            PyErr_Format(PyExc_ValueError, "rep holds %d, not a byte", (int)L->rep[c]);
            goto fail;
        }
    long long dead = PyLong_AsLongLong(args[5]), lo = PyLong_AsLongLong(args[6]), hi = PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred())
        goto fail;
    if (dead < 0 || dead >= L->cap || lo < 0 || lo > hi || hi > L->cap || hi > INT32_MAX || (dead >= lo && dead < hi)) {
        PyErr_SetString(PyExc_ValueError, "dead and the lazy rows [lo, hi) must be rows of trans, dead not among them");
        goto fail;
    }
    L->dead_row = (int32_t)dead;
    L->lo = lo;
    L->hi = hi;
    if ((terms = PySequence_Fast(args[8], "terms must be a sequence")) == NULL)
        goto fail;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(terms);
    if ((L->terms = calloc((size_t)n + 1, sizeof(LazyTerm))) == NULL
        || (L->owner = malloc((size_t)(hi - lo) * sizeof(int32_t) + 1)) == NULL
        || (L->state = malloc((size_t)(hi - lo) * sizeof(int32_t) + 1)) == NULL
        || (L->lock = PyThread_allocate_lock()) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(terms, i), *lazy;
        LazyTerm *t = &L->terms[i];
        int term, accept_id;
        long long max_states;
        if (!PyArg_ParseTuple(item, "OiiL", &lazy, &term, &accept_id, &max_states))
            goto fail;
        if ((t->core = derive_api->core(lazy)) == NULL)
            goto fail;
        Py_INCREF(lazy);
        t->lazy = lazy;
        L->n_terms = i + 1;
        if (term < 0 || term >= 64 * L->words || accept_id < 0 || max_states < 1 || max_states > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "lazy terminal %zd's terminal id, accept row or max_states is out of range",
                         i);
            goto fail;
        }
        t->term = term;
        t->accept_id = accept_id;
        t->dead = derive_api->dead(t->core);
        t->n_chunks = (max_states + MAP_CHUNK - 1) / MAP_CHUNK;
        if ((t->map = calloc((size_t)t->n_chunks, sizeof(int32_t *))) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    Py_DECREF(terms);
    return capsule;
fail:
    Py_XDECREF(terms);
    Py_DECREF(capsule);
    return NULL;
}

static PyObject *lazy_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "lazy_start(rows, i)");
        return NULL;
    }
    LazyRows *L = PyCapsule_GetPointer(args[0], LAZY_ROWS_CAPSULE);
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (L == NULL || (i == -1 && PyErr_Occurred()))
        return NULL;
    if (i < 0 || i >= L->n_terms) {
        PyErr_Format(PyExc_ValueError, "no lazy terminal %zd", i);
        return NULL;
    }
    LazyTerm *t = &L->terms[i];
    if (t->dead == 0) /* the start is the dead state: an empty language */
        return PyLong_FromLong(L->dead_row);
    int32_t row;
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = make_row(L, t, 0, &row);
    Py_END_ALLOW_THREADS
    if (code) {
        lazy_raise(code);
        return NULL;
    }
    return PyLong_FromLong(row);
}

static PyObject *lazy_owner(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "lazy_owner(rows, row)");
        return NULL;
    }
    LazyRows *L = PyCapsule_GetPointer(args[0], LAZY_ROWS_CAPSULE);
    long long row = PyLong_AsLongLong(args[1]);
    if (L == NULL || (row == -1 && PyErr_Occurred()))
        return NULL;
    if (row < L->lo || row >= L->lo + __atomic_load_n(&L->used, __ATOMIC_ACQUIRE)) {
        PyErr_Format(PyExc_ValueError, "row %lld is not a made lazy single", row);
        return NULL;
    }
    return Py_BuildValue("(ii)", (int)L->terms[L->owner[row - L->lo]].term, (int)L->state[row - L->lo]);
}

static PyObject *lazy_fill_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "lazy_fill_entry(rows, row, cls)");
        return NULL;
    }
    LazyRows *L = PyCapsule_GetPointer(args[0], LAZY_ROWS_CAPSULE);
    long long row = PyLong_AsLongLong(args[1]), cls = PyLong_AsLongLong(args[2]);
    if (L == NULL || PyErr_Occurred())
        return NULL;
    if (row < L->lo || row >= L->lo + __atomic_load_n(&L->used, __ATOMIC_ACQUIRE) || cls < 0 || cls >= L->k) {
        PyErr_Format(PyExc_ValueError, "(%lld, %lld) is not an entry of a made lazy single's row", row, cls);
        return NULL;
    }
    int code;
    int32_t out = __atomic_load_n(&L->trans[row * L->k + cls], __ATOMIC_ACQUIRE);
    if (out != UNFILLED)
        return PyLong_FromLong(out);
    Py_BEGIN_ALLOW_THREADS
    code = lazy_fill(L, (int32_t)row, (int32_t)cls, &out);
    Py_END_ALLOW_THREADS
    if (code) {
        lazy_raise(code);
        return NULL;
    }
    return PyLong_FromLong(out);
}

/* A growing product shared by candidate sets (grower/grow): the mixed states interned so far,
 * kept between calls in a capsule. */
#define GROWER_CAPSULE "pda.kernels._product.grower"

static void grower_free(PyObject *capsule)
{
    Explorer *e = PyCapsule_GetPointer(capsule, GROWER_CAPSULE);
    if (e == NULL)
        return;
    free(e->ptr);
    free(e->hash_of);
    free(e->ids);
    free(e->slots);
    free(e);
}

static PyObject *grower(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Explorer *e;
    int32_t empty = 0;
    int added;
    PyObject *capsule;
    if (nargs != 0) {
        PyErr_SetString(PyExc_TypeError, "grower() takes no arguments");
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return PyErr_NoMemory();
    e->cap_states = 64;
    e->cap_ids = 256;
    e->n_slots = 128;
    e->ptr = calloc((size_t)e->cap_states + 1, sizeof(int64_t));
    e->hash_of = malloc((size_t)e->cap_states * sizeof(uint64_t));
    e->ids = malloc((size_t)e->cap_ids * sizeof(int32_t));
    e->slots = malloc((size_t)e->n_slots * sizeof(int64_t));
    if (e->ptr && e->slots)
        memset(e->slots, 0xff, (size_t)e->n_slots * sizeof(int64_t));
    /* internal state 0 is the empty list (nothing live) */
    if (!e->ptr || !e->hash_of || !e->ids || !e->slots || intern(e, &empty, 0, &added) != 0) {
        free(e->ptr);
        free(e->hash_of);
        free(e->ids);
        free(e->slots);
        free(e);
        return PyErr_NoMemory();
    }
    capsule = PyCapsule_New(e, GROWER_CAPSULE, grower_free);
    if (capsule == NULL) {
        free(e->ptr);
        free(e->hash_of);
        free(e->ids);
        free(e->slots);
        free(e);
    }
    return capsule;
}

/* The table's row of internal state q (q >= 1). */
static inline int64_t grown_row(int64_t mixed_base, int64_t q)
{
    return mixed_base + q - 1;
}

/* The row of a mixed state of two singles whose rows are `a` and `b` (entries checked and filled): each
 * class's successor is the pair of theirs, the dead ones left out, in that order (as the counting sort of
 * `grow_run` lists them), a class leading where the one before it does taking its row. 0, or -1 with *status
 * set (1: a new state's row would be at or past cap; -1: out of memory). */
static int grow_pair(Explorer *e, int32_t *row, const int32_t *a, const int32_t *b, int64_t k, int32_t dead,
                     int64_t mixed_base, int64_t cap, int *status)
{
    int added;
    for (int64_t c = 0; c < k; c++) {
        int32_t pair[2] = {a[c], b[c]};
        if (c > 0 && pair[0] == a[c - 1] && pair[1] == b[c - 1]) {
            row[c] = row[c - 1];
            continue;
        }
        if (pair[0] == dead || pair[1] == dead) {
            row[c] = pair[0] == dead ? pair[1] : pair[0];
            continue;
        }
        int64_t j = intern(e, pair, 2, &added);
        if (j < 0) {
            *status = -1;
            return -1;
        }
        if (added && grown_row(mixed_base, j) >= cap) {
            *status = 1;
            return -1;
        }
        row[c] = (int32_t)grown_row(mixed_base, j);
    }
    return 0;
}

/* Expand the grower's states from internal id `first` on, writing each one's row of `trans`
 * (int32 [cap, k]); singles are [lo, hi), `dead` the dead state; a lazy single's UNFILLED entry is filled
 * by `lazy` first. 0 when done, 1 when a new state's row would be at or past cap, 2 on a bad entry (error
 * set), 3 when the filler failed (its code in *lazy_code), -1 out of memory. */
static int grow_run(Explorer *e, int32_t *trans, int64_t cap, int64_t k, int64_t lo, int64_t hi, int32_t dead,
                    int64_t mixed_base, int64_t first, LazyRows *lazy, int *lazy_code)
{
    int64_t q, c, i, cap_bucket = 256;
    int added, status = -1;
    int64_t *count = calloc((size_t)k + 1, sizeof(int64_t)), *offset = malloc(((size_t)k + 1) * sizeof(int64_t));
    int32_t *bucket = malloc((size_t)cap_bucket * sizeof(int32_t));
    if (count == NULL || offset == NULL || bucket == NULL)
        goto done;
    for (q = first; q < e->n_states; q++) {
        const int32_t *live = e->ids + e->ptr[q]; /* read before interning, which may move the pool */
        int64_t n_live = e->ptr[q + 1] - e->ptr[q];
        int32_t *row = trans + grown_row(mixed_base, q) * k;
        memset(count, 0, (size_t)k * sizeof(int64_t));
        for (i = 0; i < n_live; i++) {
            const int32_t *from = trans + (int64_t)live[i] * k;
            for (c = 0; c < k; c++) {
                int32_t t = from[c];
                if (t == UNFILLED && lazy != NULL && (*lazy_code = lazy_fill(lazy, live[i], (int32_t)c, &t)) != 0) {
                    status = 3;
                    goto done;
                }
                if (t != dead && (t < lo || t >= hi)) {
                    PyErr_Format(PyExc_ValueError, "a single state's row holds %d, neither dead nor single", (int)t);
                    status = 2;
                    goto done;
                }
                count[c] += t != dead;
            }
        }
        if (n_live == 2) { /* two terminals side by side (most mixed states): no counting sort */
            if (grow_pair(e, row, trans + (int64_t)live[0] * k, trans + (int64_t)live[1] * k, k, dead, mixed_base,
                          cap, &status) < 0)
                goto done;
            continue;
        }
        if (bucket_offsets(count, offset, k, &bucket, &cap_bucket) < 0)
            goto done;
        for (i = 0; i < n_live; i++) {
            const int32_t *from = trans + (int64_t)live[i] * k;
            for (c = 0; c < k; c++)
                if (from[c] != dead)
                    bucket[offset[c]++] = from[c];
        }
        for (c = 0; c < k; c++) {
            int64_t n = count[c], j;
            const int32_t *successors = bucket + offset[c] - n; /* offset[c] now ends class c's list */
            if (n <= 1) {
                row[c] = n ? successors[0] : dead;
                continue;
            }
            if (same_as_previous(count, offset, bucket, c)) {
                row[c] = row[c - 1];
                continue;
            }
            j = intern(e, successors, n, &added);
            if (j < 0)
                goto done;
            if (added && grown_row(mixed_base, j) >= cap) {
                status = 1;
                goto done;
            }
            row[c] = (int32_t)grown_row(mixed_base, j);
        }
    }
    status = 0;
done:
    free(count);
    free(offset);
    free(bucket);
    return status;
}

static PyObject *grow(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, sv;
    int64_t lo, hi, dead, mixed_base, cap, k, i, n_start, first, q;
    int added, status;
    PyObject *result = NULL;
    LazyRows *lazy = NULL;
    int lazy_code = 0;
    if (nargs != 7 && nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "grow(grower, trans, lo, hi, dead, mixed_base, start, lazy=None) takes 7 "
                                         "or 8 arguments");
        return NULL;
    }
    Explorer *e = PyCapsule_GetPointer(args[0], GROWER_CAPSULE);
    if (e == NULL)
        return NULL;
    if (nargs == 8 && args[7] != Py_None && (lazy = PyCapsule_GetPointer(args[7], LAZY_ROWS_CAPSULE)) == NULL)
        return NULL;
    lo = PyLong_AsLongLong(args[2]);
    hi = PyLong_AsLongLong(args[3]);
    dead = PyLong_AsLongLong(args[4]);
    mixed_base = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (get_buffer(args[1], &tv, PyBUF_ND | PyBUF_WRITABLE, "iil", 4, "trans") < 0)
        return NULL;
    if (get_buffer(args[6], &sv, PyBUF_ND, "iil", 4, "start") < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    cap = tv.ndim == 2 ? tv.shape[0] : 0;
    k = tv.ndim == 2 ? tv.shape[1] : 0;
    n_start = sv.len / 4;
    const int32_t *start = sv.buf;
    int bad = tv.ndim != 2 || k < 1 || !(0 <= lo && lo <= hi && hi <= mixed_base && mixed_base <= cap)
              || dead < 0 || dead >= lo || n_start < 2;
    if (bad)
        PyErr_SetString(PyExc_ValueError, "grow needs a 2-D table holding the singles [lo, hi) below mixed_base "
                                          "and a dead state below lo, and a start of two or more singles");
    for (i = 0; !bad && i < n_start; i++)
        if (start[i] < lo || start[i] >= hi || (i && start[i] <= start[i - 1])) {
            PyErr_Format(PyExc_ValueError, "start holds %d, not an ascending single state", (int)start[i]);
            bad = 1;
        }
    if (bad) {
        PyBuffer_Release(&tv);
        PyBuffer_Release(&sv);
        return NULL;
    }
    first = e->n_states;
    q = e->spent ? 0 : intern(e, start, n_start, &added);
    status = e->spent ? 1 : q < 0 ? -1 : added && grown_row(mixed_base, q) >= cap ? 1
           : grow_run(e, tv.buf, cap, k, lo, hi, (int32_t)dead, mixed_base, first, lazy, &lazy_code);
    if (lazy != NULL && (lazy->trans != tv.buf || lazy->k != k)) {
        PyErr_SetString(PyExc_ValueError, "lazy fills another table");
        status = 2;
    }
    e->spent = status != 0;
    if (status == 0)
        result = Py_BuildValue("(LLy#y#)", (long long)grown_row(mixed_base, q),
                               (long long)grown_row(mixed_base, first),
                               (const char *)(e->ptr + first), (Py_ssize_t)((e->n_states - first + 1) * 8),
                               (const char *)(e->ids + e->ptr[first]), (Py_ssize_t)((e->n_ids - e->ptr[first]) * 4));
    else if (status == 1) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (status == -1) {
        PyErr_NoMemory();
    } else if (status == 3) {
        lazy_raise(lazy_code);
    }
    PyBuffer_Release(&tv);
    PyBuffer_Release(&sv);
    return result;
}

/* describe(live_bits, accept_bits, accept_row, first, ptr, ids, lo, term, state, lazy, row_ids, accept_rows)
 *     -> (term bytes, state bytes): what a grow added, written where the shared product keeps it.
 * New state i (row first + i) has the singles ids[ptr[i]:ptr[i+1]] (rows of the table): its live and accept bit
 * rows are the ORs of theirs (a single's rows hold its one terminal's bit), its components each single's
 * terminal and own state (`term`/`state` int32 over the eager singles' rows [lo, lo + len(term)); a made lazy
 * single's from `lazy`), and its accept row the id of its accept bits in `row_ids` (dict: the row's bytes ->
 * id), a new mask appended to `accept_rows` as an int and given the next id; -1 where it accepts nothing. New
 * rows are numbered in row order, so ids are given as states are first met. The rows' bits must be zero. */
static PyObject *describe(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer lb, ab, rv, pv, iv, tv, sv;
    Py_buffer *views[7] = {&lb, &ab, &rv, &pv, &iv, &tv, &sv};
    int held = 0;
    PyObject *result = NULL, *terms = NULL, *states = NULL;
    LazyRows *lazy = NULL;
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "describe(live_bits, accept_bits, accept_row, first, ptr, ids, lo, term, "
                                         "state, lazy, row_ids, accept_rows) takes 12 arguments");
        return NULL;
    }
    int64_t first = PyLong_AsLongLong(args[3]), lo = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred())
        return NULL;
    if (args[9] != Py_None && (lazy = PyCapsule_GetPointer(args[9], LAZY_ROWS_CAPSULE)) == NULL)
        return NULL;
    if (!PyDict_CheckExact(args[10]) || !PyList_CheckExact(args[11])) {
        PyErr_SetString(PyExc_TypeError, "describe needs row_ids a dict and accept_rows a list");
        return NULL;
    }
    /* the buffers, in `views` order: (argument, writable, formats, item size, name) */
    static const struct {
        int arg, writable;
        const char *formats;
        Py_ssize_t itemsize;
        const char *name;
    } spec[7] = {
        {0, 1, "QL", 8, "live_bits"}, {1, 1, "QL", 8, "accept_bits"}, {2, 1, "iil", 4, "accept_row"},
        {4, 0, "qlL", 8, "ptr"}, {5, 0, "iil", 4, "ids"}, {7, 0, "iil", 4, "term"}, {8, 0, "iil", 4, "state"},
    };
    for (; held < 7; held++)
        if (get_buffer(args[spec[held].arg], views[held], PyBUF_ND | (spec[held].writable ? PyBUF_WRITABLE : 0),
                       spec[held].formats, spec[held].itemsize, spec[held].name) < 0)
            goto release;
    int64_t cap = lb.ndim == 2 ? lb.shape[0] : -1, words = lb.ndim == 2 ? lb.shape[1] : -1;
    int64_t m = pv.len / 8 - 1, n_ids = iv.len / 4, n_eager = tv.len / 4;
    const int64_t *ptr = pv.buf;
    const int32_t *ids = iv.buf, *own_term = tv.buf, *own_state = sv.buf;
    uint64_t *live_bits = lb.buf, *accept_bits = ab.buf;
    int32_t *accept_row = rv.buf;
    if (cap < 0 || words < 1 || ab.ndim != 2 || ab.shape[0] != cap || ab.shape[1] != words || rv.len / 4 != cap
        || m < 0 || first < 0 || first + m > cap || lo < 0 || sv.len != tv.len || ptr[0] != 0 || ptr[m] != n_ids) {
        PyErr_SetString(PyExc_ValueError, "describe needs bit rows [cap, words] and cap accept rows holding the new "
                                          "rows, ptr a CSR index of ids, and one state per eager single");
        goto release;
    }
    for (int64_t i = 0; i < m; i++)
        if (ptr[i + 1] < ptr[i]) {
            PyErr_SetString(PyExc_ValueError, "ptr is not ascending");
            goto release;
        }
    terms = PyBytes_FromStringAndSize(NULL, n_ids * 4);
    states = PyBytes_FromStringAndSize(NULL, n_ids * 4);
    if (terms == NULL || states == NULL)
        goto release;
    int32_t *term_out = (int32_t *)PyBytes_AS_STRING(terms), *state_out = (int32_t *)PyBytes_AS_STRING(states);
    for (int64_t x = 0; x < n_ids; x++) {
        int64_t s = ids[x];
        if (s >= lo && s < lo + n_eager) {
            term_out[x] = own_term[s - lo];
            state_out[x] = own_state[s - lo];
        } else if (lazy != NULL && s >= lazy->lo && s < lazy->lo + __atomic_load_n(&lazy->used, __ATOMIC_ACQUIRE)) {
            term_out[x] = lazy->terms[lazy->owner[s - lazy->lo]].term;
            state_out[x] = lazy->state[s - lazy->lo];
        } else {
            PyErr_Format(PyExc_ValueError, "ids hold %lld, not a single's row", (long long)s);
            goto release;
        }
        if (s >= cap || term_out[x] < 0 || term_out[x] >= 64 * words) {
            PyErr_Format(PyExc_ValueError, "single %lld is past the rows or its terminal past the words", (long long)s);
            goto release;
        }
    }
    for (int64_t i = 0; i < m; i++) {
        uint64_t *live = live_bits + (first + i) * words, *accept = accept_bits + (first + i) * words;
        int any = 0;
        for (int64_t x = ptr[i]; x < ptr[i + 1]; x++) {
            const uint64_t *from_live = live_bits + (int64_t)ids[x] * words;
            const uint64_t *from_accept = accept_bits + (int64_t)ids[x] * words;
            for (int64_t w = 0; w < words; w++) {
                live[w] |= from_live[w];
                accept[w] |= from_accept[w];
                any |= from_accept[w] != 0;
            }
        }
        if (!any) {
            accept_row[first + i] = -1;
            continue;
        }
        PyObject *key = PyBytes_FromStringAndSize((const char *)accept, (Py_ssize_t)(words * 8));
        if (key == NULL)
            goto release;
        PyObject *id = PyDict_GetItemWithError(args[10], key); /* borrowed */
        if (id == NULL && !PyErr_Occurred()) {
            PyObject *mask = _PyLong_FromByteArray((const unsigned char *)accept, (size_t)(words * 8), 1, 0);
            id = PyLong_FromSsize_t(PyList_GET_SIZE(args[11]));
            int failed = mask == NULL || id == NULL || PyList_Append(args[11], mask) < 0
                         || PyDict_SetItem(args[10], key, id) < 0;
            Py_XDECREF(mask);
            Py_XDECREF(id); /* the dict holds it */
            if (failed) {
                Py_DECREF(key);
                goto release;
            }
        }
        Py_DECREF(key);
        if (id == NULL)
            goto release;
        long value = PyLong_AsLong(id);
        if (value < 0 || value > INT32_MAX) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "row_ids holds an id that is not an int32 row id");
            goto release;
        }
        accept_row[first + i] = (int32_t)value;
    }
    result = PyTuple_Pack(2, terms, states);
release:
    Py_XDECREF(terms);
    Py_XDECREF(states);
    for (int i = 0; i < held; i++)
        PyBuffer_Release(views[i]);
    return result;
}

/* fill_rows(out, trans, classes, live, offset, dead): one terminal's DFA as rows of a shared table,
 * out[s, c] = offset + trans[s, classes[c]] where that state is live, else dead; one pass, no temporary
 * (numpy's gather then take cost ~52 ms for a 76,004-state DFA over 158 classes). */
static PyObject *fill_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer ov, tv, cv, lv;
    int64_t offset, dead, n, k, lk, s, c;
    PyObject *result = NULL;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "fill_rows(out, trans, classes, live, offset, dead) takes 6 arguments");
        return NULL;
    }
    offset = PyLong_AsLongLong(args[4]);
    dead = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (get_buffer(args[0], &ov, PyBUF_ND | PyBUF_WRITABLE, "iil", 4, "out") < 0)
        return NULL;
    if (get_buffer(args[1], &tv, PyBUF_ND, "iil", 4, "trans") < 0)
        goto release_out;
    if (get_buffer(args[2], &cv, PyBUF_ND, "iil", 4, "classes") < 0)
        goto release_trans;
    if (get_buffer(args[3], &lv, PyBUF_ND, "BB?", 1, "live") < 0)
        goto release_classes;
    n = ov.ndim == 2 ? ov.shape[0] : -1;
    k = ov.ndim == 2 ? ov.shape[1] : -1;
    lk = tv.ndim == 2 ? tv.shape[1] : -1;
    if (n < 0 || tv.ndim != 2 || tv.shape[0] != n || cv.len / 4 != k || lv.len != n || offset < 0
        || offset + n > INT32_MAX || dead < 0 || dead > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "fill_rows needs out [n, k], trans [n, lk], k classes, n live flags, "
                                          "and int32 row ids");
        goto release;
    }
    const int32_t *trans = tv.buf, *classes = cv.buf;
    const uint8_t *live = lv.buf;
    int32_t *out = ov.buf;
    for (c = 0; c < k; c++)
        if (classes[c] < 0 || classes[c] >= lk) {
            PyErr_Format(PyExc_ValueError, "classes hold %d, not a class of trans", (int)classes[c]);
            goto release;
        }
    for (s = 0; s < n; s++) { /* a bad entry stops the pass: rows written so far are the caller's to drop */
        const int32_t *from = trans + s * lk;
        int32_t *row = out + s * k;
        for (c = 0; c < k; c++) {
            int32_t t = from[classes[c]];
            if ((uint32_t)t >= (uint64_t)n) {
                PyErr_Format(PyExc_ValueError, "trans holds %d, not a state", (int)t);
                goto release;
            }
            row[c] = live[t] ? (int32_t)(offset + t) : (int32_t)dead;
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
release:
    PyBuffer_Release(&lv);
release_classes:
    PyBuffer_Release(&cv);
release_trans:
    PyBuffer_Release(&tv);
release_out:
    PyBuffer_Release(&ov);
    return result;
}

/* A list of m int32 arrays of any strides (a sequence of buffer objects: a DFA's table may be Fortran-ordered),
 * views[0:m], all held on success (release with release_views). 0, or -1 with an error set and none held. */
static int open_views(PyObject *list, const char *name, Py_buffer **views, Py_ssize_t *m)
{
    PyObject *seq = PySequence_Fast(list, "expected a sequence of arrays");
    if (seq == NULL)
        return -1;
    *m = PySequence_Fast_GET_SIZE(seq);
    *views = calloc((size_t)(*m ? *m : 1), sizeof(Py_buffer));
    if (*views == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < *m; j++) {
        Py_buffer *v = *views + j;
        int bad = PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, j), v, PyBUF_STRIDES | PyBUF_FORMAT) < 0;
        if (!bad && (v->itemsize != 4 || v->format == NULL || !is_int32_format(v->format, v->itemsize))) {
            PyErr_Format(PyExc_ValueError, "%s has the wrong dtype", name);
            PyBuffer_Release(v);
            bad = 1;
        }
        if (bad) {
            while (j-- > 0)
                PyBuffer_Release(*views + j);
            free(*views);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static void release_views(Py_buffer *views, Py_ssize_t m)
{
    for (Py_ssize_t j = 0; j < m; j++)
        PyBuffer_Release(views + j);
    free(views);
}

/* The byte_class arguments of classes and combine (m int32 [256] arrays) copied into one int32 [m, 256]
 * matrix (free it), each entry a class of its DFA (with `trans`, one per trans view, each entry below its
 * DFA's column count); *m set. NULL with an error set. */
static int32_t *read_byte_classes(PyObject *list, const Py_buffer *trans, Py_ssize_t n_trans, Py_ssize_t *m)
{
    Py_buffer *views;
    int32_t *out = NULL;
    if (open_views(list, "byte_class", &views, m) < 0)
        return NULL;
    if (trans != NULL && *m != n_trans)
        PyErr_SetString(PyExc_ValueError, "combine needs one byte_class per trans");
    else if ((out = malloc((size_t)(*m ? *m : 1) * 256 * sizeof(int32_t))) == NULL)
        PyErr_NoMemory();
    for (Py_ssize_t j = 0; out != NULL && j < *m; j++) {
        const Py_buffer *v = views + j;
        int64_t limit = trans == NULL ? INT32_MAX : (trans[j].ndim == 2 ? trans[j].shape[1] : 0);
        if (v->ndim != 1 || v->shape[0] != 256) {
            PyErr_SetString(PyExc_ValueError, "a byte_class must have 256 entries");
            free(out);
            out = NULL;
            break;
        }
        for (int b = 0; b < 256; b++) {
            int32_t c = load_int32((const char *)v->buf + b * v->strides[0]);
            if (c < 0 || c >= limit) {
                PyErr_Format(PyExc_ValueError, "byte_class holds %d, not a class of its DFA", (int)c);
                free(out);
                out = NULL;
                break;
            }
            out[j * 256 + b] = c;
        }
    }
    release_views(views, *m);
    return out;
}

/* The classes of bytes that every one of m DFAs (bc: int32 [m, 256]) maps alike, numbered by their lowest
 * byte: byte_class[b] and rep[c] (class c's lowest byte); returns the number of classes. One pass hashes
 * every byte's column of classes, a second finds each byte's class among the earlier ones (equal columns
 * compared in full). */
static int classes_of(const int32_t *bc, Py_ssize_t m, int32_t byte_class[256], int32_t rep[256])
{
    uint64_t hash[256];
    int32_t slot[512];
    Py_ssize_t j;
    int b, k = 0;
    for (b = 0; b < 256; b++)
        hash[b] = 0x9E3779B97F4A7C15ULL;
    for (j = 0; j < m; j++)
        for (b = 0; b < 256; b++) {
            uint64_t h = (hash[b] ^ (uint64_t)(uint32_t)bc[j * 256 + b]) * 0xFF51AFD7ED558CCDULL;
            hash[b] = h ^ (h >> 32);
        }
    memset(slot, 0xff, sizeof slot);
    for (b = 0; b < 256; b++) {
        int i = (int)(hash[b] & 511), c;
        while ((c = slot[i]) >= 0) {
            int a = rep[c];
            if (hash[a] == hash[b]) {
                for (j = 0; j < m && bc[j * 256 + a] == bc[j * 256 + b]; j++)
                    ;
                if (j == m)
                    break;
            }
            i = (i + 1) & 511;
        }
        if (c < 0) {
            c = slot[i] = k;
            rep[k++] = b;
        }
        byte_class[b] = c;
    }
    return k;
}

/* classes(byte_classes) -> (byte_class, rep): classes_of over the DFAs' byte_class arrays. */
static PyObject *classes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t m;
    int32_t byte_class[256], rep[256];
    int k;
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "classes(byte_classes) takes 1 argument");
        return NULL;
    }
    int32_t *bc = read_byte_classes(args[0], NULL, 0, &m);
    if (bc == NULL)
        return NULL;
    k = classes_of(bc, m, byte_class, rep);
    free(bc);
    return Py_BuildValue("(y#y#)", (const char *)byte_class, (Py_ssize_t)sizeof byte_class, (const char *)rep,
                         (Py_ssize_t)(k * 4));
}

/* The byte offsets of the class columns within each of m DFAs' rows (views tv[j], any strides; bc: their
 * byte classes, int32 [m, 256]) over the classes whose lowest bytes are rep[0:k]: column[j * k + c] is where
 * DFA j's row holds its successor on class c (`Rows`). NULL when out of memory. */
static int64_t *class_columns(const Py_buffer *tv, Py_ssize_t m, const int32_t *bc, const int32_t *rep, int64_t k)
{
    int64_t *column = malloc((size_t)(m ? m : 1) * (size_t)(k ? k : 1) * sizeof(int64_t));
    if (column == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < m; j++)
        for (int64_t c = 0; c < k; c++)
            column[j * k + c] = (int64_t)bc[j * 256 + rep[c]] * tv[j].strides[1];
    return column;
}

/* combine's single states: the global states reachable in their own DFAs (`rows`) from the singles that the
 * explored states' rows name (entries -(s + 1) of e->trans), dead states left out and not followed; marked in
 * `reached`. 0, -1 out of memory, or 2 on an entry that is not a state of its DFA (in *bad). */
static int reach_singles(const Explorer *e, const Rows *rows, const uint8_t *dead, int64_t g, uint8_t *reached,
                         int32_t *bad)
{
    int64_t *stack = malloc((size_t)(g ? g : 1) * sizeof(int64_t)), top = 0, k = e->k;
    const int32_t *entry = e->trans + k, *end = e->trans + e->n_states * k; /* the explored states but state 0 */
    if (stack == NULL)
        return -1;
    for (; entry < end; entry++) {
        int64_t s = -(int64_t)*entry - 1;
        if (*entry < 0 && !dead[s] && !reached[s]) {
            reached[s] = 1;
            stack[top++] = s;
        }
    }
    return reach_marked(NULL, rows, dead, g, k, stack, top, reached, bad);
}

/* The trans argument of combine (m int32 2-D arrays, any strides) opened; their total rows in *g
 * (at most INT32_MAX). 0, or -1 with an error set and nothing held. */
static int open_tables(PyObject *list, Py_buffer **tv, Py_ssize_t *m, int64_t *g)
{
    if (open_views(list, "trans", tv, m) < 0)
        return -1;
    *g = 0;
    for (Py_ssize_t j = 0; j < *m; j++) {
        if ((*tv)[j].ndim != 2) {
            PyErr_SetString(PyExc_ValueError, "trans must be 2-dimensional");
            release_views(*tv, *m);
            return -1;
        }
        *g += (*tv)[j].shape[0];
    }
    if (*g > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more states than int32 ids");
        release_views(*tv, *m);
        return -1;
    }
    return 0;
}

/* The one-bit-per-state flag column 0 of m bool arrays [n_j, >= 1] (any strides), in one uint8 [g] array of
 * global ids (DFA j's from offset_j); NULL with an error set. */
static uint8_t *read_flags(PyObject *list, const char *name, const Py_buffer *tv, Py_ssize_t m, int64_t g)
{
    PyObject *seq = PySequence_Fast(list, "expected a sequence of arrays");
    uint8_t *out = NULL;
    int64_t offset = 0;
    if (seq == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != m) {
        PyErr_Format(PyExc_ValueError, "combine needs one %s array per DFA", name);
        Py_DECREF(seq);
        return NULL;
    }
    if ((out = malloc((size_t)(g ? g : 1))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_buffer v;
        int64_t n = tv[j].shape[0];
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, j), &v, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
            goto fail;
        const char *code = v.format == NULL ? "" : native_code(v.format);
        if (v.itemsize != 1 || strchr("?B", code[0]) == NULL || code[0] == '\0' || v.ndim != 2 || v.shape[0] != n
            || v.shape[1] < 1) {
            PyErr_Format(PyExc_ValueError, "%s must be a bool array with a row per state of its DFA", name);
            PyBuffer_Release(&v);
            goto fail;
        }
        for (int64_t s = 0; s < n; s++)
            out[offset + s] = ((const uint8_t *)v.buf)[s * v.strides[0]] != 0;
        PyBuffer_Release(&v);
        offset += n;
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(seq);
    free(out);
    return NULL;
}

/* m ints, each in [0, n_j) (a state of DFA j), as global ids offset_j + value; NULL with an error set. */
static int64_t *read_states(PyObject *list, const char *name, const Py_buffer *tv, Py_ssize_t m)
{
    PyObject *seq = PySequence_Fast(list, "expected a sequence of ints");
    int64_t *out = NULL, offset = 0;
    if (seq == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != m)
        PyErr_Format(PyExc_ValueError, "combine needs one %s per DFA", name);
    else if ((out = malloc((size_t)(m ? m : 1) * sizeof(int64_t))) == NULL)
        PyErr_NoMemory();
    for (Py_ssize_t j = 0; out != NULL && j < m; j++) {
        long long s = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, j));
        if ((s == -1 && PyErr_Occurred()) || s < 0 || s >= tv[j].shape[0]) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s %lld is not a state of its DFA", name, s);
            free(out);
            out = NULL;
            break;
        }
        out[j] = offset + s;
        offset += tv[j].shape[0];
    }
    Py_DECREF(seq);
    return out;
}

/* combine's result arrays (see its comment), made with the GIL held once the search is done. */
typedef struct {
    int64_t n; /* product states: the explored ones but the empty state, the single ones, dead */
    PyObject *trans, *ptr, *term, *state, *accept_bits, *live_bits;
} Combined;

/* Number and lay out the product (the explored states `e`, the single states `single` ascending, dead last)
 * as the Python side's `combine` documents it. 0, or -1 with an error set. */
static int lay_out(Combined *out, const Explorer *e, const Rows *rows, int64_t k, const int64_t *single,
                   int64_t n_single, const int64_t *offsets, const int32_t *owner, const uint8_t *accept,
                   const uint8_t *live, const int32_t *ids, int64_t words, int32_t *number)
{
    int64_t n_mixed = e->n_states - 1, n = n_mixed + n_single + 1, q, c, i, r;
    int32_t last = (int32_t)(n - 1);
    memset(out, 0, sizeof *out);
    out->n = n;
    for (i = 0; i < n_single; i++)
        number[single[i]] = (int32_t)(n_mixed + i);
    out->trans = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * k * 4));
    out->ptr = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 8));
    if (out->trans == NULL || out->ptr == NULL)
        return -1;
    int32_t *trans = (int32_t *)PyBytes_AS_STRING(out->trans);
    int64_t *ptr = (int64_t *)PyBytes_AS_STRING(out->ptr), kept = 0;
    for (q = 0; q < n_mixed; q++) { /* explored state q + 1 (the start is 1) is row q */
        const int32_t *from = e->trans + (q + 1) * k;
        for (c = 0; c < k; c++) {
            int32_t t = from[c];
            trans[q * k + c] = t > 0 ? t - 1 : t == 0 ? last : number[-(int64_t)t - 1];
        }
    }
    for (i = 0; i < n_single; i++) { /* its row was checked when reached (`reach_singles`) */
        int32_t j;
        const char *row = row_of(rows, single[i], &j);
        const int32_t *to = number + offsets[j];
        for (c = 0; c < k; c++)
            trans[(n_mixed + i) * k + c] = to[row_entry(rows, row, j, c)];
    }
    for (c = 0; c < k; c++)
        trans[(n - 1) * k + c] = last;
    /* Components: each row's live ones (an empty language's start is in the explored lists but not live). */
    ptr[0] = 0;
    for (q = 0; q < n_mixed; q++) {
        for (i = e->ptr[q + 1]; i < e->ptr[q + 2]; i++)
            kept += live[e->ids[i]];
        ptr[q + 1] = kept;
    }
    for (i = 0; i < n_single; i++) {
        kept += live[single[i]];
        ptr[n_mixed + i + 1] = kept;
    }
    ptr[n] = kept;
    out->term = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(kept * 4));
    out->state = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(kept * 4));
    out->accept_bits = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * words * 8));
    out->live_bits = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * words * 8));
    if (out->term == NULL || out->state == NULL || out->accept_bits == NULL || out->live_bits == NULL)
        return -1;
    int32_t *term = (int32_t *)PyBytes_AS_STRING(out->term), *state = (int32_t *)PyBytes_AS_STRING(out->state);
    uint64_t *acc = (uint64_t *)PyBytes_AS_STRING(out->accept_bits), *liv = (uint64_t *)PyBytes_AS_STRING(out->live_bits);
    memset(acc, 0, (size_t)(n * words * 8));
    memset(liv, 0, (size_t)(n * words * 8));
    for (r = 0, i = 0; r < n - 1; r++) {
        int64_t lo = r < n_mixed ? e->ptr[r + 1] : 0, hi = r < n_mixed ? e->ptr[r + 2] : 1;
        for (int64_t x = lo; x < hi; x++) {
            int64_t s = r < n_mixed ? e->ids[x] : single[r - n_mixed];
            if (!live[s])
                continue;
            int32_t t = ids[owner[s]];
            term[i] = t;
            state[i++] = (int32_t)(s - offsets[owner[s]]);
            liv[r * words + (t >> 6)] |= (uint64_t)1 << (t & 63);
            if (accept[s])
                acc[r * words + (t >> 6)] |= (uint64_t)1 << (t & 63);
        }
    }
    return 0;
}

static void combined_clear(Combined *out)
{
    Py_CLEAR(out->trans);
    Py_CLEAR(out->ptr);
    Py_CLEAR(out->term);
    Py_CLEAR(out->state);
    Py_CLEAR(out->accept_bits);
    Py_CLEAR(out->live_bits);
}

/* combine(trans, byte_classes, accepts, lives, starts, deads, ids, words, max_states)
 *     -> (n, byte_class, trans, ptr, term, state, accept_bits, live_bits) or None
 * The whole product of m one-terminal DFAs in one call (pda.regex.product.combine documents the result):
 * classes, stack, explore and reach as above, then the numbering (explored states, singles ascending, dead
 * last), the components of live states and their bit rows. None when a state id passes max_states. */
static PyObject *combine(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer *tv = NULL, iv;
    Py_ssize_t m, mb;
    int64_t g, k = 0, words, max_states, j, i;
    int32_t *bc = NULL, byte_class[256], rep[256], *owner = NULL, *number = NULL, *start = NULL;
    int64_t *offsets = NULL, *starts = NULL, *deads = NULL, *single = NULL, *column = NULL;
    uint8_t *accept = NULL, *live = NULL, *dead = NULL, *reached = NULL;
    int32_t bad = 0;
    int status = 0, have_ids = 0;
    Rows rows;
    Explorer e;
    Successors sp;
    Combined out;
    PyObject *result = NULL;
    memset(&e, 0, sizeof e);
    memset(&sp, 0, sizeof sp);
    memset(&out, 0, sizeof out);
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "combine(trans, byte_classes, accepts, lives, starts, deads, ids, words, max_states) takes 9 "
                        "arguments");
        return NULL;
    }
    words = PyLong_AsLongLong(args[7]);
    max_states = PyLong_AsLongLong(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (open_tables(args[0], &tv, &m, &g) < 0)
        return NULL;
    if ((bc = read_byte_classes(args[1], tv, m, &mb)) == NULL || (accept = read_flags(args[2], "accept", tv, m, g)) == NULL
        || (live = read_flags(args[3], "live", tv, m, g)) == NULL || (starts = read_states(args[4], "start", tv, m)) == NULL
        || (deads = read_states(args[5], "dead", tv, m)) == NULL
        || get_buffer(args[6], &iv, PyBUF_ND, "iil", 4, "ids") < 0)
        goto release;
    have_ids = 1;
    const int32_t *term_ids = iv.buf;
    if (iv.len / 4 != m || words < 0) {
        PyErr_SetString(PyExc_ValueError, "combine needs one terminal id per DFA and a non-negative word count");
        goto release;
    }
    for (j = 0; j < m; j++)
        if (term_ids[j] < 0 || term_ids[j] >= 64 * words) {
            PyErr_Format(PyExc_ValueError, "terminal id %d does not fit %lld words", (int)term_ids[j], (long long)words);
            goto release;
        }
    k = classes_of(bc, m, byte_class, rep);
    offsets = malloc((size_t)(m + 1) * sizeof(int64_t));
    owner = malloc((size_t)(g ? g : 1) * sizeof(int32_t));
    dead = calloc((size_t)(g ? g : 1), 1);
    column = class_columns(tv, m, bc, rep, k);
    start = malloc((size_t)(m ? m : 1) * sizeof(int32_t));
    if (offsets == NULL || owner == NULL || dead == NULL || column == NULL || start == NULL) {
        PyErr_NoMemory();
        goto release;
    }
    offsets[0] = 0;
    for (j = 0; j < m; j++) {
        offsets[j + 1] = offsets[j] + tv[j].shape[0];
        for (i = offsets[j]; i < offsets[j + 1]; i++)
            owner[i] = (int32_t)j;
        dead[deads[j]] = 1;
    }
    int64_t n_start = 0, n_single = 0;
    for (j = 0; j < m; j++)
        if (!dead[starts[j]])
            start[n_start++] = (int32_t)starts[j];
    /* Room for as many explored states as the terminals have states (a JSON Schema's products explore fewer;
     * the arrays grow past it, up to max_states): growing them by copies was a tenth of the kernel's time. */
    if (explorer_init(&e, &sp, NULL, dead, g, k, (g < max_states ? g : max_states) + 2) < 0) {
        PyErr_NoMemory();
        goto release;
    }
    rows = (Rows){tv, column, offsets, owner, k};
    e.rows = &rows;
    Py_BEGIN_ALLOW_THREADS
    if ((status = run(&e, &sp, g, start, n_start, max_states)) == 2)
        bad = sp.bad;
    if (status == 0) { /* the single states: reachable in their own DFAs from the explored states' singles */
        reached = calloc((size_t)(g ? g : 1), 1);
        status = reached == NULL ? -1 : reach_singles(&e, &rows, dead, g, reached, &bad);
        if (status == 0) {
            for (i = 0; i < g; i++)
                n_single += reached[i];
            single = malloc((size_t)(n_single ? n_single : 1) * sizeof(int64_t));
            number = malloc((size_t)(g ? g : 1) * sizeof(int32_t));
            status = single == NULL || number == NULL ? -1 : 0;
        }
        if (status == 0) {
            int64_t n = e.n_states - 1 + n_single + 1;
            for (i = 0, n_single = 0; i < g; i++) {
                number[i] = (int32_t)(n - 1); /* dead components lead to the dead state */
                if (reached[i])
                    single[n_single++] = i;
            }
            if (n > max_states + 1)
                status = 1;
        }
    }
    Py_END_ALLOW_THREADS
    if (status == 1) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto release;
    }
    if (status == 2) {
        PyErr_Format(PyExc_ValueError, "trans holds %d, not a state", (int)bad);
        goto release;
    }
    if (status < 0) {
        PyErr_NoMemory();
        goto release;
    }
    if (lay_out(&out, &e, &rows, k, single, n_single, offsets, owner, accept, live, term_ids, words, number) < 0)
        goto release;
    if (((int64_t *)PyBytes_AS_STRING(out.ptr))[1] == 0) { /* nothing is live at the start: one dead state */
        combined_clear(&out);
        out.n = 1;
        out.trans = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * 4));
        out.ptr = PyBytes_FromStringAndSize(NULL, 16);
        out.term = PyBytes_FromStringAndSize(NULL, 0);
        out.state = PyBytes_FromStringAndSize(NULL, 0);
        out.accept_bits = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(words * 8));
        out.live_bits = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(words * 8));
        if (!out.trans || !out.ptr || !out.term || !out.state || !out.accept_bits || !out.live_bits)
            goto release;
        memset(PyBytes_AS_STRING(out.trans), 0, (size_t)(k * 4));
        memset(PyBytes_AS_STRING(out.ptr), 0, 16);
        memset(PyBytes_AS_STRING(out.accept_bits), 0, (size_t)(words * 8));
        memset(PyBytes_AS_STRING(out.live_bits), 0, (size_t)(words * 8));
    }
    result = Py_BuildValue("(Ly#OOOOOO)", (long long)out.n, (const char *)byte_class, (Py_ssize_t)sizeof byte_class,
                           out.trans, out.ptr, out.term, out.state, out.accept_bits, out.live_bits);
release:
    combined_clear(&out);
    explorer_free(&e, &sp);
    if (have_ids)
        PyBuffer_Release(&iv);
    release_views(tv, m);
    free(bc);
    free(accept);
    free(live);
    free(starts);
    free(deads);
    free(offsets);
    free(owner);
    free(dead);
    free(column);
    free(start);
    free(reached);
    free(single);
    free(number);
    return result;
}

static PyMethodDef product_methods[] = {
    {"fill_rows", (PyCFunction)(void (*)(void))fill_rows, METH_FASTCALL,
     "fill_rows(out, trans, classes, live, offset, dead): one terminal's DFA as rows of a shared table."},
    {"classes", (PyCFunction)(void (*)(void))classes, METH_FASTCALL,
     "classes(byte_classes) -> (byte_class, rep): the classes of bytes every DFA treats alike (see the module source)."},
    {"combine", (PyCFunction)(void (*)(void))combine, METH_FASTCALL,
     "combine(trans, byte_classes, accepts, lives, starts, deads, ids, words, max_states) -> (n, byte_class, trans, "
     "ptr, term, state, accept_bits, live_bits) or None: a whole product of one-terminal DFAs."},
    {"explore", (PyCFunction)(void (*)(void))explore, METH_FASTCALL,
     "explore(table, dead, start, max_states) -> (trans, ptr, ids) or None (see the module source)."},
    {"reach", (PyCFunction)(void (*)(void))reach, METH_FASTCALL,
     "reach(table, dead, seeds) -> int64 bytes: the live global states reachable from seeds, ascending."},
    {"grower", (PyCFunction)(void (*)(void))grower, METH_FASTCALL,
     "grower() -> capsule: the interned mixed states of one growing product (see the module source)."},
    {"grow", (PyCFunction)(void (*)(void))grow, METH_FASTCALL,
     "grow(grower, trans, lo, hi, dead, mixed_base, start, lazy=None) -> (start row, first new row, ptr, ids) or None."},
    {"describe", (PyCFunction)(void (*)(void))describe, METH_FASTCALL,
     "describe(live_bits, accept_bits, accept_row, first, ptr, ids, lo, term, state, lazy, row_ids, accept_rows) -> "
     "(term, state): a grow's new states' bits, accept rows and components."},
    {"lazy_rows", (PyCFunction)(void (*)(void))lazy_rows, METH_FASTCALL,
     "lazy_rows(trans, rep, live_bits, accept_bits, accept_row, dead, lo, hi, terms) -> capsule: a filler of lazy "
     "singles."},
    {"lazy_start", (PyCFunction)(void (*)(void))lazy_start, METH_FASTCALL,
     "lazy_start(rows, i) -> int: lazy terminal i's start row, made."},
    {"lazy_owner", (PyCFunction)(void (*)(void))lazy_owner, METH_FASTCALL,
     "lazy_owner(rows, row) -> (terminal id, lazy state) of a made lazy single's row."},
    {"lazy_fill_entry", (PyCFunction)(void (*)(void))lazy_fill_entry, METH_FASTCALL,
     "lazy_fill_entry(rows, row, cls) -> int: one entry of a made lazy single's row, filled if UNFILLED."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef product_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._product",
    "Breadth-first exploration of a product of terminal DFAs (pda/kernels/product.py).", -1, product_methods,
};

PyMODINIT_FUNC PyInit__product(void)
{
    PyObject *m = PyModule_Create(&product_module);
    if (m == NULL)
        return NULL;
    PyObject *capsule = PyCapsule_New(&lazy_api, "pda.kernels._product._LAZY_API", NULL);
    if (capsule == NULL || PyModule_AddObjectRef(m, "_LAZY_API", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(capsule);
    return m;
}

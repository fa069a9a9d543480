/* pda.kernels._walk: the token index's walk over the vocabulary trie, one call per walk.
 *
 * Written against the plain Python C API and the buffer protocol (no numpy C API),
 * so building it needs only a C compiler and Python's headers. pda/kernels/walk.py
 * is the Python side and documents the interface; docs/design.md ("Native kernels")
 * says why it is C.
 *
 * walk(trie, tables, n_sets, roots, root_state, mask, slices)
 *     A depth-first walk in preorder (children ascending, so nodes come out sorted)
 *     from `roots` at DFA state `root_state`. Per node: next = trans[state][class of
 *     its byte]. Not live[next]: the node is a boundary of set ends_as[state] when
 *     stops[next] and ends_as[state] >= 0, else its tokens are dead. Live: the tokens
 *     ending at the node are inside (their bits are set in `mask`, the caller's writable
 *     int32 words; none is cleared) and its children are walked from next.
 *     `tables` holds those flags per state, or (packed, a contextual candidate set seen
 *     through a DFA of more terminals) per state the live terminals as bit words, the
 *     candidates' words, the state's accept row and each row's terminals as bit words:
 *     live[s] = any(live_bits[s] & candidates), stops[s] = !live[s], ends_as[s] =
 *     accept_row[s] where that row meets the candidates, else -1 (the caller maps rows
 *     to terminal sets); each worked out on a state's first visit (see Kinds).
 *     `trie` is (nodes, token_ids, token_chars): one record of four int32 per node and a last one,
 *     (end, first token, byte | below << 8 | rest << 16, depth | level << 24): the node's
 *     subtree is the id range [v, end), its tokens the sorted positions [first token of v,
 *     of v + 1) into `token_ids`, its parent the last node before it one level up (see run).
 *     One record holds what a visit reads, so a walk over cold memory meets one cache line
 *     a node where seven arrays cost seven.
 *     With `slices`, the cut (pda/index/slices.py): `plain_body` is its automaton, the plain
 *     body's 8 states (u) and then one per letter slice. The walk carries u down each path
 *     (a refused byte restarts it at 0), and takes a node's whole subtree as inside when
 *     below (of its record) has bit u and the pair (u, next) is proven live rest characters
 *     deep (rest: the most characters a path below it touches; see search), or when its letter level L is not 0 and the pair (7 + L, next) is (a slice of
 *     letters holds every byte below it). Proofs are memoised in `proof` (int16 [n_states,
 *     states of the automaton]: a DFA state's pairs side by side; zeroed when new, kept by the
 *     caller across walks; see proof_load(); an exact proof takes a subtree's tokens by their characters,
 *     `token_chars` (uint8 per token position, or None), see exact_tokens()); a pair not yet proven deep enough
 *     is searched for only under a
 *     subtree of at least `search_min_nodes` nodes (a search can cost more than walking
 *     a small subtree). Searches take their scratch from a pool (see Scratch) and their
 *     moves from the opened tables (see Moves).
 *     Returns ([(set index, bytes of int64 nodes ascending, unique)] by set index,
 *     whether any token is inside, (nodes visited, subtrees cut, pairs searched)).
 *     With `mask` a tuple (mask_words, sparse_max), the inside tokens are kept as ranges of
 *     token positions instead and the second item is None, (0, their int32 ids ascending)
 *     when at most sparse_max, or (1, the packed int32 mask), as bytes (see sparse_inside).
 * walk_states(trie, tables, roots, root_state)
 *     The same walk without the cut, keeping states: returns four bytes objects of int32,
 *     the live nodes where tokens end with the state after their byte, and the
 *     boundary nodes with the state before theirs (sorted by node, then state).
 * pack(trie, nodes, mask_words)
 *     The tokens ending at int32 `nodes` as a packed mask (bytes), or None; with `mask_words` a
 *     tuple (mask_words, sparse_max), as `walk`'s sparse result (see sparse_inside).
 * chain_walk(trie, tables, child_ptr, child_ids, root_state, sparse_max)
 *     `walk`'s sparse result from the trie's first level where opened flag tables go on one byte at a time
 *     to a state that ends the lexeme and goes on no further (a literal's rest): the path followed down the
 *     trie by bisecting each node's children (the trie's CSR), not every child's record read; None elsewhere
 *     (see Chain walks).
 * opened(trie or tables)
 *     The tuple's arrays acquired and checked once (an `Opened`), which the calls above take
 *     where the tuple goes (see Opened).
 * IndexWalks(trie, mask_words, sparse_max, suffixes, tables_of, best, classify, types)
 *     The token index's walks made as its own objects (see IndexWalks below): called as
 *     after_boundary(group, live_set), a boundary group's suffix classification, walked (or asked of
 *     `classify`) and recorded on a miss; classify(tables, roots, slices), one walk as a classification.
 *     numpy is imported (not its C API) for the arrays it makes: numpy.frombuffer, numpy.zeros.
 * content_tag(content, order, numbers)
 *     The disk tag of a root walk's content (the token index's, `TokenIndex._content_tag`): 16 hex
 *     digits of a 64-bit mix of each live terminal's number (its digest and priority, memoised in
 *     the dict `numbers`) and its state (see content_tag below).
 *
 * Every index read from an array is checked before use (shapes up front, values as
 * the walk reads them): a corrupt table raises ValueError, never reads out of bounds.
 * Every record's end is above its node and within its root's subtree, and its depth at most one
 * below the deepest level written on its path, which the walk checks, so node ids only grow, no
 * level is read that the walk did not write, and it ends whatever the arrays hold. The walk itself
 * runs without the GIL: buffers are acquired before, result objects built after.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_format.h"
#include "sort_ids.h"

/* A node's record: int32 (end, first token, byte | below << 8 | rest << 16, depth | letter level << 24). */
#define RECORD 4
#define DEPTH_BITS 0xFFFFFF
/* The plain body's states, the first rows of the cut's automaton (slices.CUT_AUTOMATON, int8, -1 refused). */
#define U_STATES 8
/* The cut's automaton has the plain body's states, then one per letter slice (pda/index/slices.py), at most this
 * many in all: a proof buffer has a row per state. */
#define CUT_ROWS_MAX 16
/* Proofs are capped at this many characters, so that a lower bound fits the int16 encoding beside EXACT. */
#define MAX_DEPTH 16000
/* One proof search meets at most this many (u, state) pairs ... */
#define MAX_PAIRS 8192
/* ... and one walk's searches together at most this many; then unknown pairs stay unproven. */
#define WALK_SEARCH_BUDGET 65536

#if defined(__GNUC__) || defined(__clang__)
/* A search, rare and long, is kept out of the walk's loop, so that the lookup of what is proven is inlined
 * there without the search's register saves on every call. */
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif


/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

/* Element kinds a buffer may hold: signed and unsigned integers, booleans. */
enum { KIND_INT, KIND_UINT, KIND_BOOL };

/* The kind of a buffer format ("q", "<i", "=B", "?"), or -1 for anything else (big-endian, structs). */
static int format_kind(const char *format)
{
    if (format == NULL)
        return KIND_UINT; /* plain bytes */
    format = native_code(format);
    if (format[0] == '\0' || format[1] != '\0')
        return -1;
    if (strchr("bhilqn", format[0]))
        return KIND_INT;
    if (strchr("BHILQN", format[0]))
        return KIND_UINT;
    if (format[0] == '?')
        return KIND_BOOL;
    return -1;
}

/* The buffers one call holds, released together. */
typedef struct {
    Py_buffer views[20];
    int held;
} Buffers;

static void release_all(Buffers *b)
{
    while (b->held > 0)
        PyBuffer_Release(&b->views[--b->held]);
}

/* Acquire `obj` as a C-contiguous array of `ndim` dimensions whose items are `itemsize` bytes of `kind`
 * (itemsize 0: 4 or 8, signed ints only); its shape in `shape`. NULL with ValueError set on any mismatch. */
static Py_buffer *get_array(Buffers *b, PyObject *obj, const char *name, int kind, Py_ssize_t itemsize,
                            int ndim, int writable, Py_ssize_t *shape)
{
    Py_buffer *view = &b->views[b->held];
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a%s C-contiguous array", name, writable ? " writable" : "");
        return NULL;
    }
    b->held++;
    int size_ok = itemsize ? view->itemsize == itemsize : view->itemsize == 4 || view->itemsize == 8;
    if (view->ndim != ndim || !size_ok || format_kind(view->format) != kind) {
        PyErr_Format(PyExc_ValueError, "%s must be a %d-D array of %s-byte %s, got %d-D format '%s'", name, ndim,
                     itemsize == 8 ? "8" : itemsize == 4 ? "4" : itemsize == 2 ? "2" : itemsize == 1 ? "1" : "4- or 8",
                     kind == KIND_INT ? "signed ints" : kind == KIND_UINT ? "unsigned ints" : "bools",
                     view->ndim, view->format ? view->format : "B");
        return NULL;
    }
    for (int d = 0; d < ndim; d++)
        shape[d] = view->shape[d];
    return view;
}

/* A tuple argument of exactly `n` items. */
static int check_tuple(PyObject *obj, Py_ssize_t n, const char *name)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != n) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of %zd arrays", name, n);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Growable output arrays                                                                     */

/* `data` may start as a buffer of the caller's (`fixed`, never freed here), replaced by the heap once outgrown:
 * most walks' outputs take a few hundred bytes, and a walk after a boundary spent ~1 us of its ~6 in malloc
 * and free. */
typedef struct {
    char *data;
    Py_ssize_t len, cap, itemsize;
    char *fixed;
} Vec;

static int vec_reserve(Vec *v, Py_ssize_t more)
{
    if (v->len + more <= v->cap)
        return 0;
    Py_ssize_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + more)
        cap *= 2;
    char *data;
    if (v->data != NULL && v->data == v->fixed) {
        if ((data = malloc((size_t)(cap * v->itemsize))) != NULL)
            memcpy(data, v->data, (size_t)(v->len * v->itemsize));
    } else {
        data = realloc(v->data, (size_t)(cap * v->itemsize));
    }
    if (data == NULL)
        return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

static void vec_free(Vec *v)
{
    if (v->data != v->fixed)
        free(v->data);
}

/* An empty Vec of `itemsize` items starting in `fixed` (`bytes` long; NULL: on the heap from the first item). */
static Vec vec_in(Py_ssize_t itemsize, void *fixed, size_t bytes)
{
    return (Vec){fixed, 0, fixed == NULL ? 0 : (Py_ssize_t)(bytes / (size_t)itemsize), itemsize, fixed};
}

/* ------------------------------------------------------------------------------------------ */
/* The walk                                                                                   */

/* A level of the walk: what a live node leaves its children (the DFA state and its kinds, the automaton state,
 * the proof), one per depth of the current path (see run). */
typedef struct {
    const int32_t *row; /* trans's row of `state`: every child reads its byte's column */
    int32_t state;
    int16_t proven; /* characters deep the pair is proven live, -1 for none */
    int8_t u;
    uint8_t kind;   /* kinds[state] */
    int16_t chars;  /* the characters on the node's path from the trie's root (its non-continuation bytes) */
} Level;

/* Levels a walk keeps on the C stack; a deeper path (the trie deeper than this) moves them to the heap. */
#define LEVELS_INLINE 160

/* One open-addressing set of pair codes (s * rows + u: the pair's cell in `proof`) for a search, tagged per search. */
typedef struct {
    int32_t code, tag;
} Slot;
#define SLOTS (2 * MAX_PAIRS)
/* A search's set starts with this many of its slots (8 KB, in L1) and doubles while it is half full: most
 * searches meet a few dozen pairs, and probing all SLOTS (128 KB) missed the cache on every new pair. */
#define SLOTS_FIRST 1024

/* A search's scratch: the pair set (tagged per search, so a reused one needs no clearing), the
 * queue and the levels, 176 KB. Walks take one from a pool and give it back, so that a walk does
 * not allocate and fault in fresh pages for it (docs/limits.md, POOL_MAX). */
typedef struct Scratch {
    Slot *slots;
    int32_t *queue;
    int16_t *level;
    int32_t tag;
    struct Scratch *next;
} Scratch;

/* A search's moves per automaton state u: its distinct moves (next u, DFA byte class), for the tables'
 * byte classes and the automaton in `plain`. Made on the first search on some tables and kept with the
 * opened tables for every later walk (working them out, 2,048 bytes read and a set of classes, took a
 * search's walk ~5 us: 40% of all search time in a JSON Schema replay). */
typedef struct {
    int rows;
    int32_t first[CUT_ROWS_MAX + 1]; /* state u's moves: [first[u], first[u + 1]) of move_c and move_u */
    int32_t *move_c;
    int8_t *move_u;
    int8_t plain[];                  /* rows * 256 bytes, then the moves (one allocation, ~3-6 KB) */
} Moves;

/* At most this many scratches wait in the pool (one per thread walking at once suffices). */
#define POOL_MAX 8
static Scratch *pool;
static int pooled;
static PyThread_type_lock pool_lock; /* taken with or without the GIL */

static void scratch_free(Scratch *s)
{
    if (s == NULL)
        return;
    free(s->slots);
    free(s->queue);
    free(s->level);
    free(s);
}

/* A scratch from the pool, or a new one (NULL when out of memory). */
static Scratch *scratch_take(void)
{
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    Scratch *s = pool;
    if (s != NULL) {
        pool = s->next;
        pooled--;
    }
    PyThread_release_lock(pool_lock);
    if (s != NULL)
        return s;
    s = calloc(1, sizeof(Scratch));
    if (s == NULL)
        return NULL;
    s->slots = calloc(SLOTS, sizeof(Slot));
    s->queue = malloc(MAX_PAIRS * sizeof(int32_t));
    s->level = malloc(MAX_PAIRS * sizeof(int16_t));
    if (s->slots == NULL || s->queue == NULL || s->level == NULL) {
        scratch_free(s);
        return NULL;
    }
    return s;
}

/* Back to the pool, or freed when the pool is full. */
static void scratch_give(Scratch *s)
{
    if (s == NULL)
        return;
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    int kept = pooled < POOL_MAX;
    if (kept) {
        s->next = pool;
        pool = s;
        pooled++;
    }
    PyThread_release_lock(pool_lock);
    if (!kept)
        scratch_free(s);
}

typedef struct {
    /* trie: records (end, first token, byte | below << 8 | rest << 16) per node, and one past the last */
    const int32_t *rec;
    const int64_t *token_ids;
    const uint8_t *token_chars; /* per token position its characters (see exact proofs), or NULL */
    Py_ssize_t n_nodes, n_tokens;
    /* walk tables: per-state flags (live, stops, ends_as), or packed (live_bits, candidates,
     * accept_row, row_bits), read through `kinds` (see Kinds) and `sets_of` (ends_as or accept_row) */
    const int32_t *trans, *byte_class, *ends_as;
    const uint8_t *live, *stops;
    Py_ssize_t n_states, n_classes, n_sets;
    int packed;
    const uint64_t *live_bits, *candidates, *row_bits;
    const int32_t *accept_row;
    Py_ssize_t words, n_rows;
    uint8_t **kind_pages; /* see Kinds */
    Py_ssize_t n_kind_pages;
    const int32_t *sets_of;
    int own_kinds; /* the kinds were made for this call (tables passed as a tuple): freed with the walk */
    /* the cut: NULL `plain` when off; its automaton's states (rows of `plain` and `proof`) */
    const int8_t *plain;
    int rows;
    int16_t *proof;
    int depth;
    long search_min_nodes; /* a pair is searched for only under a subtree of this many nodes */
    /* the search's moves (see Moves): the opened tables' (`moves_slot`, made on their first search), or
     * this call's own (tables passed as a tuple: `own_moves`); and its scratch, taken on the first search */
    const Moves *moves;
    Moves **moves_slot;
    int own_moves;
    Scratch *scratch;
    long budget;
    /* an opened trie's every token as a packed mask (NULL: not made, see fill_mask) */
    const uint32_t *all_tokens;
    Py_ssize_t all_words;
    /* an opened trie's first level (node 0's children): their ids, and per child its record and the next
     * one's (six int32, as `rec` has them from the child on; NULL: not made, see open_first_level) */
    const int64_t *first_nodes;
    const int32_t *first_records;
    Py_ssize_t n_first;
    const int32_t *root_records; /* first_records when this walk's roots are that level, else NULL */
    /* an opened trie's byte of every node (NULL: not made): a root decided by its byte alone (see run) */
    const uint8_t *node_bytes;
    /* outputs */
    uint32_t *mask;    /* the caller's words, where a dense walk ORs its inside tokens after the walk */
    Py_ssize_t mask_words;
    int sparse;        /* the inside tokens are built from `ranges` as a result object (sparse_inside) */
    Vec ranges;        /* the inside tokens: int64 (lo, hi) pairs of positions into token_ids */
    int64_t n_inside;  /* the tokens those ranges hold */
    Vec out_nodes, out_states, in_nodes, in_states;
    int keep_states;
    int unsorted; /* a root lay in the subtree of a root before it: the outputs are sorted after (see run) */
    Py_ssize_t visited, cut, searched;
    /* the first failure: a message and the index it is about (no GIL to raise with) */
    const char *error;
    int64_t error_at;
    int no_memory;
    /* a shared product's filler of lazy singles' UNFILLED entries (NULL: none), and its failure code */
    void *lazy;
    int lazy_code;
} Walk;

/* Record the first failure; -1, for `return fail(...)`. */
static int fail(Walk *w, const char *message, int64_t at)
{
    w->error = message;
    w->error_at = at;
    return -1;
}

/* A node's record: its subtree end, its first token position, and from the record (`at`, rec + RECORD * node) its
 * byte, cut bits and depth below. */
static inline int32_t node_end(const Walk *w, int64_t v) { return w->rec[RECORD * v]; }
static inline int32_t node_tokens(const Walk *w, int64_t v) { return w->rec[RECORD * v + 1]; }
static inline uint8_t record_byte(const int32_t *at) { return (uint8_t)(at[2] & 0xFF); }
static inline uint8_t record_below(const int32_t *at) { return (uint8_t)((at[2] >> 8) & 0xFF); }
static inline int16_t record_rest(const int32_t *at) { return (int16_t)(at[2] >> 16); }

/* Whether a row of packed terminal bits meets the candidates. */
static inline int meets_candidates(const Walk *w, const uint64_t *row)
{
    uint64_t any = 0;
    for (Py_ssize_t k = 0; k < w->words; k++)
        any |= row[k] & w->candidates[k];
    return any != 0;
}

/* A pointer some thread makes once and every thread then reads: `published` loads it (NULL: not made yet),
 * `publish` keeps `fresh` there unless another thread's came first, and returns the one kept (the loser frees its
 * own). Without the GNU atomics the pool's lock orders them. */
static inline void *published(void *const *slot)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
#else
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    void *found = *slot;
    PyThread_release_lock(pool_lock);
    return found;
#endif
}

static void *publish(void **slot, void *fresh)
{
    void *first = NULL;
#if defined(__GNUC__) || defined(__clang__)
    if (__atomic_compare_exchange_n(slot, &first, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
#else
    PyThread_acquire_lock(pool_lock, WAIT_LOCK);
    first = *slot;
    if (first == NULL)
        *slot = fresh;
    PyThread_release_lock(pool_lock);
    if (first == NULL)
        return fresh;
#endif
    return first;
}

/* Kinds: a state's flags as one byte, all the walk reads of a state but its set index: KNOWN once worked out;
 * LIVE; STOPS (where a lexeme cannot grow into s, may it end before it?); ENDS (a lexeme ending in s is handed as
 * set sets_of[s], checked against n_sets where read); BAD (its set index can be no set's, an error where read).
 * Flag tables' kinds are made when they are opened (every state KNOWN). Packed tables' are worked out on a state's
 * first visit (learn) and kept with the opened tables for every later walk (a walk used to calloc and fill its
 * own, n_states bytes, on every call): live = any(live_bits[s] & candidates), stops = not live, ends where s's
 * accept row meets the candidates, bad where that row is outside row_bits. They are kept in pages of KIND_PAGE
 * states, each made when a state in it is first worked out: an opened table costs what its walks met (a JSON
 * Schema's shared product has ~80k rows and opens a view of them per candidate set, hundreds a schema). A state's
 * flags never change once it can be reached (a lazy single's row is written before its id), so threads that work
 * one out at once store the same byte. */
enum { KNOWN = 1, LIVE = 2, STOPS = 4, ENDS = 8, BAD = 16 };
#define KIND_PAGE_BITS 10
#define KIND_PAGE (1 << KIND_PAGE_BITS)

/* State s's kinds as known so far (0: not worked out). */
static inline uint8_t kind_load(uint8_t *const *pages, int32_t s)
{
    const uint8_t *page = published((void *const *)&pages[s >> KIND_PAGE_BITS]);
    if (page == NULL)
        return 0;
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(&page[s & (KIND_PAGE - 1)], __ATOMIC_RELAXED);
#else
    return *(volatile const uint8_t *)&page[s & (KIND_PAGE - 1)];
#endif
}

/* A packed state's flags, worked out and stored (its page made first if need be); 0 when out of memory (the
 * failure recorded). */
static NOINLINE uint8_t learn(Walk *w, int32_t s)
{
    uint8_t k = KNOWN | (meets_candidates(w, w->live_bits + (Py_ssize_t)s * w->words) ? LIVE : STOPS);
    int32_t row = w->accept_row[s];
    if (row >= w->n_rows)
        k |= BAD;
    else if (row >= 0 && meets_candidates(w, w->row_bits + (Py_ssize_t)row * w->words))
        k |= ENDS;
    uint8_t **slot = &w->kind_pages[s >> KIND_PAGE_BITS];
    uint8_t *page = published((void *const *)slot);
    if (page == NULL) {
        uint8_t *fresh = calloc(KIND_PAGE, 1);
        if (fresh == NULL) {
            w->no_memory = 1;
            return 0;
        }
        if ((page = publish((void **)slot, fresh)) != fresh)
            free(fresh);
    }
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&page[s & (KIND_PAGE - 1)], k, __ATOMIC_RELAXED);
#else
    *(volatile uint8_t *)&page[s & (KIND_PAGE - 1)] = k;
#endif
    return k;
}

static inline uint8_t kind_of(Walk *w, int32_t s)
{
    uint8_t k = kind_load(w->kind_pages, s);
    return k & KNOWN ? k : learn(w, s);
}

/* Free kinds made by make_kinds (and the pages walks made since). */
static void free_kinds(uint8_t **pages, Py_ssize_t n_pages)
{
    for (Py_ssize_t p = 0; pages != NULL && p < n_pages; p++)
        free(pages[p]);
    free(pages);
}

/* Proof values, memoised per (u, state) in `proof` with relaxed atomics: another thread may
 * write the same cell, and every value written is sound, so any interleaving is.
 *   v >= 0   final: every path of the cut's automaton from the pair keeps the DFA live v characters
 *            deep (see search), and searching again would not prove more (or is not worth it);
 *   v == -1  unknown;
 *   v <= -2  provisional: proven -2 - v characters deep, as a pair met by another pair's search;
 *            a search from the pair itself may prove more.
 * A final v may also be exact (EXACT set in the cell): every path of measure v + 1 kills the DFA, and no
 * state where one does ends a lexeme, so a path's fate is its measure alone (see search and run).
 * A cell holds v + 1 (| EXACT), so that a zeroed buffer is all unknown: a new one costs no pass, and
 * the pages of states no walk meets are never touched. */
#define EXACT 0x4000

static inline int16_t proof_raw(const int16_t *cell)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(cell, __ATOMIC_RELAXED);
#else
    return *(volatile const int16_t *)cell;
#endif
}

static inline int16_t proof_load(const int16_t *cell)
{
    int16_t raw = proof_raw(cell);
    return (int16_t)((raw > 0 ? raw & (EXACT - 1) : raw) - 1);
}

/* Whether the cell holds an exact final value. */
static inline int proof_exact(const int16_t *cell)
{
    int16_t raw = proof_raw(cell);
    return raw > 0 && (raw & EXACT);
}

static inline void proof_store_raw(int16_t *cell, int16_t raw)
{
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(cell, raw, __ATOMIC_RELAXED);
#else
    *(volatile int16_t *)cell = raw;
#endif
}

static inline void proof_store(int16_t *cell, int16_t value) { proof_store_raw(cell, (int16_t)(value + 1)); }

/* pda.kernels._product's filler of lazy singles (its capsule _LAZY_API), imported with the first tables that
 * have one (pda/kernels/product.py documents it). */
typedef struct {
    void *(*rows)(PyObject *capsule);
    int (*fill)(void *rows, int32_t row, int32_t cls, int32_t *out);
    void (*raise)(int code);
} LazyAPI;
static const LazyAPI *lazy_api;
#define UNFILLED (-1)

/* Fill a lazy single's UNFILLED entry (no GIL needed): 0, or -1 with the failure recorded. */
static NOINLINE int fill_lazy(Walk *w, int32_t state, int32_t cls, int32_t *out)
{
    int code = lazy_api->fill(w->lazy, state, cls, out);
    if (code) {
        w->lazy_code = code;
        return fail(w, "a lazy terminal's state could not be made", state);
    }
    return 0;
}

/* A transition, checked (a lazy single's UNFILLED entry filled first). */
static inline int next_state(Walk *w, int32_t state, int32_t cls, int32_t *out)
{
    int32_t next = w->trans[(Py_ssize_t)state * w->n_classes + cls];
    if (next == UNFILLED && w->lazy != NULL && fill_lazy(w, state, cls, &next) < 0)
        return -1;
    if (next < 0 || next >= w->n_states)
        return fail(w, "a transition leads outside the DFA's states", state);
    *out = next;
    return 0;
}

/* The search's moves (see Moves) for `w`'s tables and automaton: the opened tables' if made (a walk with another
 * automaton is refused: their proofs are not its), else made here and kept there (another thread's, when it kept
 * its first), or this call's own. 0, or -1 with the failure recorded. */
static int prepare_moves(Walk *w)
{
    Moves *found = w->moves_slot == NULL ? NULL : published((void *const *)w->moves_slot);
    if (found == NULL) {
        const Py_ssize_t cells = (Py_ssize_t)w->rows * 256;
        uint8_t *seen = calloc((size_t)w->n_classes * CUT_ROWS_MAX, 1); /* seen[c * 16 + v] == u + 1: met for u */
        int32_t *move_c = malloc((size_t)cells * sizeof(int32_t));
        int8_t *move_u = malloc((size_t)cells);
        int32_t first[CUT_ROWS_MAX + 1], n = 0;
        if (seen != NULL && move_c != NULL && move_u != NULL) {
            for (int u = 0; u < w->rows; u++) {
                first[u] = n;
                for (int b = 0; b < 256; b++) {
                    int v = w->plain[u * 256 + b];
                    if (v < 0)
                        continue;
                    int32_t c = w->byte_class[b];
                    uint8_t *mark = &seen[(Py_ssize_t)c * CUT_ROWS_MAX + v];
                    if (*mark == u + 1)
                        continue;
                    *mark = (uint8_t)(u + 1);
                    move_u[n] = (int8_t)v;
                    move_c[n] = c;
                    n++;
                }
            }
            first[w->rows] = n;
            /* the block: the header, the automaton, the classes (aligned), the next states */
            size_t at_c = (sizeof(Moves) + (size_t)cells + 3) & ~(size_t)3;
            if ((found = malloc(at_c + (size_t)n * (sizeof(int32_t) + 1))) != NULL) {
                found->rows = w->rows;
                memcpy(found->first, first, sizeof first);
                found->move_c = (int32_t *)((char *)found + at_c);
                found->move_u = (int8_t *)(found->move_c + n);
                memcpy(found->plain, w->plain, (size_t)cells);
                memcpy(found->move_c, move_c, (size_t)n * sizeof(int32_t));
                memcpy(found->move_u, move_u, (size_t)n);
            }
        }
        free(seen);
        free(move_c);
        free(move_u);
        if (found == NULL) {
            w->no_memory = 1;
            return -1;
        }
        if (w->moves_slot == NULL) {
            w->own_moves = 1;
        } else {
            Moves *kept = publish((void **)w->moves_slot, found);
            if (kept != found)
                free(found);
            found = kept;
        }
    }
    w->moves = found;
    if (found->rows != w->rows || memcmp(found->plain, w->plain, (size_t)w->rows * 256) != 0)
        return fail(w, "these opened tables were searched under another plain-body automaton", 0);
    if ((w->scratch = scratch_take()) == NULL) {
        w->no_memory = 1;
        return -1;
    }
    return 0;
}

/* A new tag for the pair set (every slot with another tag is empty); the set cleared once every tag is used. */
static void next_tag(Scratch *sc)
{
    if (sc->tag == INT32_MAX) {
        memset(sc->slots, 0, SLOTS * sizeof(Slot));
        sc->tag = 0;
    }
    sc->tag++;
}

/* Add a pair code to this search's set, its first `mask + 1` slots: 1 if new, 0 if met before. */
static inline int meet(Scratch *sc, int32_t code, uint32_t mask)
{
    uint32_t h = ((uint32_t)code * 2654435761u) & mask;
    for (;;) {
        Slot *slot = &sc->slots[h];
        if (slot->tag != sc->tag) {
            slot->tag = sc->tag;
            slot->code = code;
            return 1;
        }
        if (slot->code == code)
            return 0;
        h = (h + 1) & mask;
    }
}

/* Whether the cut automaton's state u is inside a character: the plain body's states 1..7 wait for continuation
 * bytes (its state 0 is between characters; a letter slice's state reads a letter, a character, a byte). */
static inline int inside_character(int u) { return u > 0 && u < U_STATES; }

/* Breadth-first over (u, state) pairs from (u0, s0) along the cut automaton's bytes: how many characters deep every
 * path of the automaton from the pair keeps the DFA live (at most `depth`). Stores the result as final, and lower
 * bounds for the pairs it met. -1 (unproven, nothing stored) once the walk's search budget is spent; -2 on a
 * corrupt table.
 *
 * Characters, not bytes: a counted string (maxLength) counts characters, and a path has up to four bytes a
 * character, so a proof in bytes took no subtree of multi-byte characters deeper than the count left (a `maxLength:
 * 20` string's walks visited 100-160k of Qwen2's 333k trie nodes). A path's measure is the characters it touches:
 * its bytes that end a character (moves to a state not inside one), and one more where it ends inside one. "Proven
 * d deep" is: every path of measure at most d keeps the DFA live; a node's `rest` is the most a path below it
 * measures (pda/index/slices.py, `chars_below`). A pair's level is the characters ended on the way to it: a move
 * into a state inside a character keeps its pair's level, and such a pair, met at the queue's end, is expanded in
 * the same pass as the level's others, so every pair is met on its least level before the next level starts.
 *
 * Soundness: a pair met at level k has every path of measure m among the root's paths of measure k + m (a path to a
 * pair inside a character leaves that character open, and whatever follows touches it), and a move from a level-k
 * pair that kills the DFA makes a path of measure k + 1; so when the first kill is on level K (or every path of
 * measure up to `checked` was seen live), the pair is proven K (`checked`) deep, a pair met at level k K - k.
 * When no new pair appears, nothing reachable kills: every pair met is proven to any depth. Cost: at most
 * MAX_PAIRS pairs, each with at most 256 moves; each pair is searched from once per table (its result is
 * final), and one walk spends at most WALK_SEARCH_BUDGET pairs. */
static NOINLINE int search(Walk *w, int u0, int32_t s0)
{
    if (w->budget <= 0)
        return -1;
    if (w->moves == NULL && prepare_moves(w) < 0)
        return -2;
    const Moves *moves = w->moves;
    const int rows = w->rows;
    const int depth = w->depth;
    Scratch *sc = w->scratch;
    int32_t *queue = sc->queue;
    int16_t *level_of = sc->level;
    uint32_t mask = SLOTS_FIRST - 1;
    next_tag(sc);
    Py_ssize_t len = 1, start = 0, stop = 1;
    queue[0] = (int32_t)(s0 * rows + u0);
    level_of[0] = 0;
    meet(sc, queue[0], mask);
    int proven = -1, closed = 0, killed = 0;
    for (int level = 0; proven < 0; level++) {
        if (level >= depth) {
            proven = depth;
            break;
        }
        /* this level's pairs: those met on the level before, then (past `stop`) those inside a character met on
         * this one; the next level's, met meanwhile, are skipped */
        for (Py_ssize_t i = start; i < len && proven < 0; i++) {
            if (level_of[i] != level)
                continue;
            int v = (int)(queue[i] % rows);
            int32_t t = (int32_t)(queue[i] / rows);
            for (int32_t m = moves->first[v]; m < moves->first[v + 1]; m++) {
                int32_t t2;
                if (next_state(w, t, moves->move_c[m], &t2) < 0)
                    return -2;
                const uint8_t k = kind_of(w, t2);
                if (k == 0) /* out of memory */
                    return -2;
                if (!(k & LIVE)) {
                    proven = level; /* a path of measure level + 1 kills it */
                    killed = 1;
                    break;
                }
                const int v2 = moves->move_u[m];
                int32_t code = (int32_t)(t2 * rows + v2);
                if (meet(sc, code, mask)) {
                    if (len == MAX_PAIRS) {
                        proven = level; /* every path of measure `level` was seen live */
                        break;
                    }
                    queue[len] = code;
                    level_of[len] = (int16_t)(inside_character(v2) ? level : level + 1);
                    len++;
                    if (2 * (uint32_t)len > mask && mask < SLOTS - 1) { /* half full: twice the slots, all again */
                        mask = 2 * mask + 1;
                        next_tag(sc);
                        for (Py_ssize_t j = 0; j < len; j++)
                            meet(sc, queue[j], mask);
                    }
                }
            }
        }
        if (proven < 0 && len == stop) {
            closed = 1;
            proven = depth;
        }
        if (proven < 0) {
            start = stop;
            stop = len;
        }
    }
    w->budget -= (long)len;
    w->searched += len;
    if (killed) { /* the level that kills: exact when every move from every pair on it kills, none ending a lexeme */
        int exact = 1;
        for (Py_ssize_t i = start; exact && i < len; i++) {
            if (level_of[i] != proven)
                continue;
            int v = (int)(queue[i] % rows);
            int32_t t = (int32_t)(queue[i] / rows);
            const uint8_t k = kind_of(w, t);
            if (k == 0)
                return -2;
            if (inside_character(v) || (k & (ENDS | BAD))) { /* a live path of measure level + 1, or an end */
                exact = 0;
                break;
            }
            for (int32_t m = moves->first[v]; m < moves->first[v + 1]; m++) {
                int32_t t2;
                if (next_state(w, t, moves->move_c[m], &t2) < 0)
                    return -2;
                const uint8_t k2 = kind_of(w, t2);
                if (k2 == 0)
                    return -2;
                if (k2 & LIVE) {
                    exact = 0;
                    break;
                }
            }
        }
        if (exact) { /* every pair met is exact too, at what is left of the root's measure (see Soundness) */
            for (Py_ssize_t i = 0; i < len; i++)
                proof_store_raw(&w->proof[queue[i]], (int16_t)((proven - level_of[i] + 1) | EXACT));
            return proven;
        }
    }
    proof_store(&w->proof[queue[0]], (int16_t)proven);
    for (Py_ssize_t i = 1; i < len; i++) {
        int16_t *cell = &w->proof[queue[i]];
        int16_t old = proof_load(cell);
        if (closed) {
            proof_store(cell, (int16_t)depth);
            continue;
        }
        int bound = proven - level_of[i];
        if (old >= 0 || bound <= 0 || bound <= -2 - old)
            continue;
        proof_store(cell, (int16_t)(-2 - bound));
    }
    return proven;
}

/* How many characters deep the pair (u, s) is proven live; when what is known is below `need`,
 * searching if `may_search`. */
static inline int proven_depth(Walk *w, int u, int32_t s, int need, int may_search)
{
    int16_t known = proof_load(&w->proof[(Py_ssize_t)s * w->rows + u]);
    if (known >= 0)
        return known;
    int bound = known <= -2 ? -2 - known : -1;
    if (bound >= need || !may_search)
        return bound;
    int found = search(w, u, s);
    if (found == -2)
        return -2;
    if (found >= 0 && found < bound) /* a search cut short proves less than the pair had */
        proof_store(&w->proof[(Py_ssize_t)s * w->rows + u], (int16_t)bound);
    return found > bound ? found : bound;
}

/* Mark the tokens at sorted positions [lo, hi) inside: kept as a range of positions (joined to the last one
 * when they meet, as preorder makes them), whose ids are read, and checked, when the result is built. */
static inline int mark_tokens(Walk *w, int64_t lo, int64_t hi, int64_t node)
{
    if (lo < 0 || lo > hi || hi > w->n_tokens)
        return fail(w, "a node's token range is outside the tokens", node);
    if (hi == lo)
        return 0;
    int64_t *last = w->ranges.len ? (int64_t *)w->ranges.data + w->ranges.len - 2 : NULL;
    if (last != NULL && last[1] == lo) {
        last[1] = hi;
    } else {
        if (vec_reserve(&w->ranges, 2) < 0) {
            w->no_memory = 1;
            return -1;
        }
        ((int64_t *)w->ranges.data)[w->ranges.len++] = lo;
        ((int64_t *)w->ranges.data)[w->ranges.len++] = hi;
    }
    w->n_inside += hi - lo;
    return 0;
}

/* Set the bits of the tokens at positions [lo, hi) in `mask` (`clear`: clear them), each id checked. */
static int scatter(Walk *w, uint32_t *mask, int64_t lo, int64_t hi, int clear)
{
    const int64_t limit = (int64_t)w->mask_words * 32;
    for (int64_t p = lo; p < hi; p++) {
        int64_t id = w->token_ids[p];
        if (id < 0 || id >= limit)
            return fail(w, "a token id is outside the mask", p);
        if (clear)
            mask[id >> 5] &= ~(1u << (id & 31));
        else
            mask[id >> 5] |= 1u << (id & 31);
    }
    return 0;
}

/* OR the inside tokens (the ranges) into `mask`, `mask_words` words (`zeroed`: all of them 0 so far). When they
 * are most of the trie's tokens, ascending and disjoint, and the trie was opened with every token's bit
 * (`all_tokens`), as the trie's tokens but those between the ranges: a walk in a string's body holds ~140k of
 * Qwen2's 151k tokens (the 44-schema replay's dense walks set 22.6M bits one by one, 1.6M this way); into a
 * zeroed mask directly, else through a copy ORed in. */
static int fill_mask(Walk *w, uint32_t *mask, int zeroed)
{
    const int64_t *ranges = (const int64_t *)w->ranges.data;
    Py_ssize_t n = w->ranges.len;
    int complement = w->all_tokens != NULL && w->all_words <= w->mask_words && 2 * w->n_inside > w->n_tokens;
    for (Py_ssize_t r = 2; complement && r < n; r += 2)
        complement = ranges[r] >= ranges[r - 1];
    if (!complement) {
        for (Py_ssize_t r = 0; r < n; r += 2)
            if (scatter(w, mask, ranges[r], ranges[r + 1], 0) < 0)
                return -1;
        return 0;
    }
    uint32_t *inside = zeroed ? mask : malloc((size_t)(w->all_words + 1) * sizeof(uint32_t));
    if (inside == NULL) {
        w->no_memory = 1;
        return -1;
    }
    memcpy(inside, w->all_tokens, (size_t)w->all_words * sizeof(uint32_t));
    int64_t from = 0;
    int status = 0;
    for (Py_ssize_t r = 0; r <= n && status == 0; r += 2) {
        int64_t to = r < n ? ranges[r] : w->n_tokens;
        status = scatter(w, inside, from, to, 1);
        if (r < n)
            from = ranges[r + 1];
    }
    if (inside != mask) {
        for (Py_ssize_t i = 0; status == 0 && i < w->all_words; i++)
            mask[i] |= inside[i];
        free(inside);
    }
    return status;
}

/* A node whose pair is exactly proven (see proof_exact): its own tokens inside (it is live), and below it those
 * of at most `within` characters from the trie's root (`token_chars`), the others dead: a path of the pair's
 * automaton from the node measures a token's characters less the node's, one more where the node is inside a
 * character, and keeps the lexeme live exactly while that is at most the pair's depth. 0, or -1 with the failure
 * recorded. */
static int exact_tokens(Walk *w, const int32_t *at, int64_t end, int64_t node, int within)
{
    const int64_t lo = at[1], own = at[RECORD + 1], hi = w->rec[RECORD * end + 1];
    if (lo < 0 || lo > own || own > hi || hi > w->n_tokens)
        return fail(w, "a node's token range is outside the tokens", node);
    if (mark_tokens(w, lo, own, node) < 0)
        return -1;
    const uint8_t *chars = w->token_chars;
    for (int64_t p = own; p < hi;) {
        while (p < hi && chars[p] > within)
            p++;
        const int64_t from = p;
        while (p < hi && chars[p] <= within)
            p++;
        if (p > from && mark_tokens(w, from, p, node) < 0)
            return -1;
    }
    return 0;
}

/* A node found not live after `parent`'s state (the kinds of its own state `k`): a boundary of the parent's set when
 * the lexeme may stop there and the parent's state ends one (kept with the parent's state instead under
 * keep_states), else dead. 0, or -1 with the failure recorded. */
static inline int reached_dead(Walk *w, const Level *parent, uint8_t k, int64_t node)
{
    if (!(parent->kind & (ENDS | BAD)))
        return 0;
    int32_t set = w->sets_of[parent->state];
    if ((parent->kind & BAD) || set >= w->n_sets)
        return fail(w, "a state's terminal set is outside the sets", parent->state);
    if (!(k & STOPS))
        return 0;
    if (vec_reserve(&w->out_nodes, 1) < 0 || vec_reserve(&w->out_states, 1) < 0) {
        w->no_memory = 1;
        return -1;
    }
    if (w->keep_states)
        ((int32_t *)w->out_nodes.data)[w->out_nodes.len++] = (int32_t)node;
    else
        ((int64_t *)w->out_nodes.data)[w->out_nodes.len++] = node;
    ((int32_t *)w->out_states.data)[w->out_states.len++] = w->keep_states ? parent->state : set;
    return 0;
}

/* The walk from `roots` (already checked to be nodes) at `root_state`; 0, or -1 with w->error or no_memory.
 *
 * Each root's subtree is scanned in preorder, [root, its end): a node's parent is the last node met one level up,
 * so the state a node steps from is its depth's level (levels[d - 1], d its depth below the root's parent),
 * written when that parent was found live; a node found live writes its own and goes on to the next node, one
 * found dead or cut jumps to its end. No stack of open levels is kept: a walk used to push one per node with
 * children and pop them in a loop, two branches a node that no predictor could learn (a full walk of Qwen2's
 * trie took 9 ns a node). A node may be at most one level below the deepest level written since its last
 * ancestor (`top`): corrupt depths fail before a level is read that this walk did not write.
 * What every node reads is held in locals (the compiler cannot keep the Walk's fields in registers across the
 * stores to the outputs). */
static int run(Walk *w, const int64_t *roots, Py_ssize_t n_roots, int32_t root_state)
{
    Level fixed_levels[LEVELS_INLINE];
    Level *levels = fixed_levels;
    Py_ssize_t cap = LEVELS_INLINE;
    int status = -1;
    int16_t root_proven = -1;
    const int32_t *rec = w->rec, *trans = w->trans, *byte_class = w->byte_class;
    uint8_t *const *kind_pages = w->kind_pages;
    const int8_t *plain = w->plain;
    const int rows = w->rows;
    const int64_t n_nodes = w->n_nodes, n_tokens = w->n_tokens;
    const Py_ssize_t n_classes = w->n_classes;
    const uint32_t n_states = (uint32_t)w->n_states;
    const int keep = w->keep_states;
    const long search_min_nodes = w->search_min_nodes;
    Py_ssize_t visited = 0, cut = 0;
    if (plain != NULL) {
        /* The roots' pair is searched for as any pair is: when what lies below them is big enough. */
        int64_t below = 0;
        for (Py_ssize_t i = 0; i < n_roots && below < search_min_nodes; i++)
            below += (w->root_records ? w->root_records[2 * RECORD * i] : node_end(w, roots[i])) - roots[i];
        int found = proven_depth(w, 0, root_state, w->depth, below >= search_min_nodes);
        if (found == -2)
            goto done;
        root_proven = (int16_t)found;
    }
    const uint8_t root_kind = kind_of(w, root_state);
    if (root_kind == 0)
        goto done;
    levels[0] = (Level){trans + (Py_ssize_t)root_state * n_classes, root_state, root_proven, 0, root_kind, 0};
    int64_t past = 0; /* past the subtrees of the roots walked so far */
    for (Py_ssize_t r = 0; r < n_roots; r++) {
        int64_t node = roots[r];
        if (node < past) /* in a subtree walked already: what it gives may come twice and out of order */
            w->unsorted = 1;
        /* A root whose byte kills the lexeme is decided by that byte alone (the opened trie's node_bytes, one
         * byte a node): its record is not read. Most roots of the walks after a boundary are (80% of the nodes
         * those walks visit in a JSON Schema replay), and where the trie is not in cache each record is a miss. */
        if (w->root_records == NULL && w->node_bytes != NULL) {
            const uint8_t b = w->node_bytes[node];
            int32_t next = levels[0].row[byte_class[b]];
            if (next == UNFILLED && w->lazy != NULL && fill_lazy(w, levels[0].state, byte_class[b], &next) < 0)
                goto done;
            if ((uint32_t)next >= n_states) {
                fail(w, "a transition leads outside the DFA's states", levels[0].state);
                goto done;
            }
            const uint8_t k = kind_of(w, next);
            if (k == 0)
                goto done;
            if (!(k & LIVE)) {
                visited++;
                if (reached_dead(w, levels, k, node) < 0)
                    goto done;
                continue;
            }
        }
        /* The root's record from the opened trie's copy of the first level when the roots are that level: a
         * walk from the trie's root otherwise met 256 records spread over the trie, most of them dead ends. */
        const int32_t *root_at = w->root_records ? w->root_records + 2 * RECORD * r : rec + RECORD * node;
        const int64_t stop = root_at[0];
        if (stop <= node || stop > n_nodes) {
            fail(w, "a node's subtree end is outside the trie", node);
            goto done;
        }
        const int64_t root = node, base = (int64_t)(root_at[3] & DEPTH_BITS) - 1; /* the root: depth 1 */
        if (stop > past)
            past = stop;
        Py_ssize_t top = 0; /* the deepest level written on the current path */
        while (node < stop) {
            const int32_t *at = root_at != NULL ? root_at : rec + RECORD * node;
            root_at = NULL;
            const int64_t end = at[0], d = (int64_t)(at[3] & DEPTH_BITS) - base;
            if (end <= node || end > stop || d < (node == root ? 1 : 2) || d > top + 1) {
                fail(w, end <= node || end > stop ? "a node's subtree end is outside its parent's"
                                                  : "a node's depth is not one below its parent's", node);
                goto done;
            }
            const Level *parent = levels + d - 1;
            const uint32_t meta = (uint32_t)at[2];
            const uint8_t b = (uint8_t)meta;
            int32_t next = parent->row[byte_class[b]];
            visited++;
            if ((uint32_t)next >= n_states) {
                if (next == UNFILLED && w->lazy != NULL && fill_lazy(w, parent->state, byte_class[b], &next) < 0)
                    goto done;
                if ((uint32_t)next >= n_states) {
                    fail(w, "a transition leads outside the DFA's states", parent->state);
                    goto done;
                }
            }
            uint8_t k = kind_load(kind_pages, next);
            if (!(k & KNOWN) && (k = learn(w, next)) == 0)
                goto done;
            top = d - 1;
            if (!(k & LIVE)) {
                if (reached_dead(w, parent, k, node) < 0)
                    goto done;
                node = end;
                continue;
            }
            int8_t u = 0;
            int16_t proven = -1;
            const int16_t chars = (int16_t)(parent->chars + (b < 0x80 || b >= 0xC0));
            if (plain != NULL) {
                /* The cut: see the header and pda/index/slices.py. The plain body's state is carried down the
                 * path with what its pair is proven; a letter slice's pair is looked up. */
                int8_t v = plain[parent->u * 256 + b];
                u = v >= 0 ? v : 0;
                /* a byte that ends a character takes one off what is proven; one inside a character, none (the
                 * parent's paths through it touch that character already: see search) */
                proven = (v >= 0 && parent->proven >= 0) ? (int16_t)(parent->proven - !inside_character(v)) : -1;
                const int need = (int16_t)(meta >> 16);
                const int letters = (int)((uint32_t)at[3] >> 24);
                if (need < 0 || letters > rows - U_STATES) {
                    fail(w, need < 0 ? "a node's depth below is negative" : "a node's letter level is past the slices",
                         node);
                    goto done;
                }
                int taken = 0;
                if ((meta >> (8 + u)) & 1) {
                    if (need == 0) { /* nothing below: its tokens are what the walk would take (no proof read) */
                        taken = 1;
                    } else {
                        if (proven < need) {
                            int found = proven_depth(w, u, next, need, end - node >= search_min_nodes);
                            if (found == -2)
                                goto done;
                            if (found > proven)
                                proven = (int16_t)found;
                        }
                        taken = proven >= need;
                    }
                }
                if (!taken && letters != 0 && need > 0) {
                    int found = proven_depth(w, U_STATES - 1 + letters, next, need, end - node >= search_min_nodes);
                    if (found == -2)
                        goto done;
                    taken = found >= need;
                }
                if (taken) {
                    if (mark_tokens(w, at[1], rec[RECORD * end + 1], node) < 0)
                        goto done;
                    cut++;
                    node = end;
                    continue;
                }
                /* Exact: the subtree's paths are the automaton's from u, and the pair's fate of a path is its measure,
                 * so its tokens are decided by their characters (see exact_tokens). From the trie's root only, where
                 * `chars` counts from there, and while no count below is clipped. */
                if (need > 0 && ((meta >> (8 + u)) & 1) && w->token_chars != NULL && w->root_records != NULL &&
                    chars + need <= 255 && proof_exact(&w->proof[(Py_ssize_t)next * rows + u])) {
                    const int within = proof_load(&w->proof[(Py_ssize_t)next * rows + u]) + chars - (u != 0);
                    if (exact_tokens(w, at, end, node, within) < 0)
                        goto done;
                    cut++;
                    node = end;
                    continue;
                }
            }
            const int64_t lo = at[1], hi = at[RECORD + 1]; /* its tokens: from its first position to the next node's */
            if (keep) {
                if (lo < 0 || lo > hi || hi > n_tokens) {
                    fail(w, "a node's token range is outside the tokens", node);
                    goto done;
                }
                if (hi > lo) {
                    if (vec_reserve(&w->in_nodes, 1) < 0 || vec_reserve(&w->in_states, 1) < 0)
                        goto out_of_memory;
                    ((int32_t *)w->in_nodes.data)[w->in_nodes.len++] = (int32_t)node;
                    ((int32_t *)w->in_states.data)[w->in_states.len++] = next;
                }
            } else if (mark_tokens(w, lo, hi, node) < 0) {
                goto done;
            }
            if (d == cap) {
                Level *grown = levels == fixed_levels ? malloc((size_t)(2 * cap) * sizeof(Level))
                                                      : realloc(levels, (size_t)(2 * cap) * sizeof(Level));
                if (grown == NULL)
                    goto out_of_memory;
                if (levels == fixed_levels)
                    memcpy(grown, fixed_levels, sizeof fixed_levels);
                levels = grown;
                cap *= 2;
            }
            levels[d] = (Level){trans + (Py_ssize_t)next * n_classes, next, proven, u, k, chars};
            top = d;
            node++;
        }
    }
    status = 0;
    goto done;
out_of_memory:
    w->no_memory = 1;
done:
    w->visited += visited;
    w->cut += cut;
    if (levels != fixed_levels)
        free(levels);
    return status;
}

/* ------------------------------------------------------------------------------------------ */
/* Arguments and results                                                                      */

/* The trie's node records, token ids and tokens' characters (None, or uint8 per position; see the header). */
static int open_records(Walk *w, Buffers *b, PyObject *nodes, PyObject *token_ids, PyObject *token_chars)
{
    Py_ssize_t s[2];
    Py_buffer *v;
    if (!(v = get_array(b, nodes, "nodes", KIND_INT, 4, 2, 0, s)))
        return -1;
    w->rec = v->buf;
    if (s[1] != RECORD || s[0] < 2 || s[0] > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "nodes must be int32 [n + 1, 4] records, between 1 and 2**31 - 2 nodes");
        return -1;
    }
    w->n_nodes = s[0] - 1;
    if (!(v = get_array(b, token_ids, "token_ids", KIND_INT, 8, 1, 0, s)))
        return -1;
    w->token_ids = v->buf;
    w->n_tokens = s[0];
    w->token_chars = NULL;
    if (token_chars != Py_None) {
        if (!(v = get_array(b, token_chars, "token_chars", KIND_UINT, 1, 1, 0, s)))
            return -1;
        if (s[0] != w->n_tokens) {
            PyErr_SetString(PyExc_ValueError, "token_chars must be uint8 [tokens]");
            return -1;
        }
        w->token_chars = v->buf;
    }
    return 0;
}

/* The trie tuple (nodes, token_ids, token_chars). */
static int open_trie(Walk *w, Buffers *b, PyObject *trie)
{
    if (check_tuple(trie, 3, "trie") < 0)
        return -1;
    return open_records(w, b, PyTuple_GET_ITEM(trie, 0), PyTuple_GET_ITEM(trie, 1), PyTuple_GET_ITEM(trie, 2));
}

/* The tables tuple: (trans, byte_class, live, stops, ends_as), or packed
 * (trans, byte_class, live_bits, candidates, accept_row, row_bits[, lazy]), `lazy` the filler of trans's
 * lazy singles (a pda.kernels._product lazy_rows capsule, or None). */
static int open_tables(Walk *w, Buffers *b, PyObject *tables)
{
    Py_ssize_t s[2];
    Py_buffer *v;
    if (!PyTuple_Check(tables) || PyTuple_GET_SIZE(tables) < 5 || PyTuple_GET_SIZE(tables) > 7) {
        PyErr_SetString(PyExc_ValueError, "tables must be a tuple of 5 arrays (flags) or 6 (packed) and a filler");
        return -1;
    }
    w->packed = PyTuple_GET_SIZE(tables) >= 6;
    w->lazy = NULL;
    if (PyTuple_GET_SIZE(tables) == 7 && PyTuple_GET_ITEM(tables, 6) != Py_None) {
        if (lazy_api == NULL && (lazy_api = PyCapsule_Import("pda.kernels._product._LAZY_API", 0)) == NULL)
            return -1;
        if ((w->lazy = lazy_api->rows(PyTuple_GET_ITEM(tables, 6))) == NULL)
            return -1;
    }
    if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 0), "trans", KIND_INT, 4, 2, 0, s)))
        return -1;
    w->trans = v->buf;
    w->n_states = s[0];
    w->n_classes = s[1];
    if (w->n_states < 1 || w->n_classes < 1 || w->n_states >= (1 << 27)) {
        PyErr_SetString(PyExc_ValueError, "trans must have between 1 and 2**27 - 1 states and a class");
        return -1;
    }
    if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 1), "byte_class", KIND_INT, 4, 1, 0, s)))
        return -1;
    w->byte_class = v->buf;
    if (s[0] != 256) {
        PyErr_SetString(PyExc_ValueError, "byte_class must have 256 entries");
        return -1;
    }
    for (int c = 0; c < 256; c++) {
        if (w->byte_class[c] < 0 || w->byte_class[c] >= w->n_classes) {
            PyErr_Format(PyExc_ValueError, "byte %d's class is outside trans's %zd columns", c, w->n_classes);
            return -1;
        }
    }
    if (w->packed) {
        if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 2), "live_bits", KIND_UINT, 8, 2, 0, s)))
            return -1;
        w->live_bits = v->buf;
        w->words = s[1];
        if (s[0] != w->n_states)
            goto shape;
        if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 3), "candidates", KIND_UINT, 8, 1, 0, s)))
            return -1;
        w->candidates = v->buf;
        if (s[0] != w->words) {
            PyErr_SetString(PyExc_ValueError, "candidates must have one word per column of live_bits");
            return -1;
        }
        if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 4), "accept_row", KIND_INT, 4, 1, 0, s)))
            return -1;
        w->accept_row = v->buf;
        if (s[0] != w->n_states)
            goto shape;
        if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 5), "row_bits", KIND_UINT, 8, 2, 0, s)))
            return -1;
        w->row_bits = v->buf;
        w->n_rows = s[0];
        if (s[1] != w->words) {
            PyErr_SetString(PyExc_ValueError, "row_bits must have as many words per row as live_bits");
            return -1;
        }
        return 0;
    }
    if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 2), "live", KIND_BOOL, 1, 1, 0, s)))
        return -1;
    w->live = v->buf;
    if (s[0] != w->n_states)
        goto shape;
    if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 3), "stops", KIND_BOOL, 1, 1, 0, s)))
        return -1;
    w->stops = v->buf;
    if (s[0] != w->n_states)
        goto shape;
    if (!(v = get_array(b, PyTuple_GET_ITEM(tables, 4), "ends_as", KIND_INT, 4, 1, 0, s)))
        return -1;
    w->ends_as = v->buf;
    if (s[0] != w->n_states)
        goto shape;
    return 0;
shape:
    PyErr_SetString(PyExc_ValueError, "live, stops, ends_as (live_bits, accept_row) must have one entry per row of trans");
    return -1;
}

/* An opened trie or walk tables (`opened`): the arrays acquired and checked once, for the walks that pass it
 * where the tuple would go. Acquiring a numpy array's buffer costs ~70 ns and the tables' checks a pass
 * over the byte classes: paid once per table here, rather than on every walk (a walk after a boundary
 * visits p50 41 nodes in ~2 us). The buffers are held until the object goes, and the arrays are only read. What
 * walks work out about opened tables is kept with them for the walks after: each state's kinds (see Kinds) and a
 * search's moves (see Moves); an opened trie keeps every node's byte, every token's bit and its first level. */
typedef struct {
    PyObject_HEAD
    int tables; /* 1: walk tables (open_tables's fields of `w`), 0: a trie (open_trie's) */
    Walk w;
    Buffers b;
    PyObject *lazy; /* the filler `w.lazy` points into, held */
    Moves *moves;   /* tables: their search's moves, made on their first search (NULL until then) */
} Opened;

static void Opened_dealloc(Opened *self)
{
    Py_XDECREF(self->lazy);
    free((void *)self->w.all_tokens);
    free((void *)self->w.first_nodes);
    free((void *)self->w.first_records);
    free((void *)self->w.node_bytes);
    free_kinds(self->w.kind_pages, self->w.n_kind_pages);
    free(self->moves);
    release_all(&self->b);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject OpenedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pda.kernels._walk.Opened",
    .tp_basicsize = sizeof(Opened),
    .tp_dealloc = (destructor)Opened_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A trie's or walk tables' arrays acquired and checked once (see opened()).",
};

/* The trie argument: an opened trie's fields, or the tuple opened into `b` for this call. */
static int trie_arg(Walk *w, Buffers *b, PyObject *arg)
{
    if (Py_IS_TYPE(arg, &OpenedType) && !((Opened *)arg)->tables) {
        const Walk *o = &((Opened *)arg)->w;
        w->rec = o->rec;
        w->token_ids = o->token_ids;
        w->token_chars = o->token_chars;
        w->n_nodes = o->n_nodes;
        w->n_tokens = o->n_tokens;
        w->all_tokens = o->all_tokens;
        w->all_words = o->all_words;
        w->first_nodes = o->first_nodes;
        w->first_records = o->first_records;
        w->n_first = o->n_first;
        w->node_bytes = o->node_bytes;
        return 0;
    }
    return open_trie(w, b, arg);
}

/* The tables' kinds (see Kinds): flag tables' every state, in pages made now; packed tables' none yet (every page
 * made when first met); and where set indices are read. -1 with MemoryError set. */
static int make_kinds(Walk *w)
{
    w->n_kind_pages = (w->n_states + KIND_PAGE - 1) >> KIND_PAGE_BITS;
    if ((w->kind_pages = calloc((size_t)w->n_kind_pages, sizeof(uint8_t *))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t p = 0; !w->packed && p < w->n_kind_pages; p++) {
        uint8_t *page = w->kind_pages[p] = calloc(KIND_PAGE, 1);
        if (page == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t s = p << KIND_PAGE_BITS, i = 0; i < KIND_PAGE && s < w->n_states; s++, i++)
            page[i] = KNOWN | (w->live[s] ? LIVE : 0) | (w->stops[s] ? STOPS : 0) | (w->ends_as[s] >= 0 ? ENDS : 0)
                      | (w->ends_as[s] < -1 ? BAD : 0);
    }
    w->sets_of = w->packed ? w->accept_row : w->ends_as;
    return 0;
}

/* The tables argument: opened tables' fields (their kinds shared with every walk on them), or the tuple opened
 * into `b` for this call (kinds made for it). */
static int tables_arg(Walk *w, Buffers *b, PyObject *arg)
{
    if (Py_IS_TYPE(arg, &OpenedType) && ((Opened *)arg)->tables) {
        const Walk *o = &((Opened *)arg)->w;
        w->trans = o->trans;
        w->byte_class = o->byte_class;
        w->ends_as = o->ends_as;
        w->live = o->live;
        w->stops = o->stops;
        w->n_states = o->n_states;
        w->n_classes = o->n_classes;
        w->packed = o->packed;
        w->live_bits = o->live_bits;
        w->candidates = o->candidates;
        w->row_bits = o->row_bits;
        w->accept_row = o->accept_row;
        w->words = o->words;
        w->n_rows = o->n_rows;
        w->lazy = o->lazy;
        w->kind_pages = o->kind_pages;
        w->n_kind_pages = o->n_kind_pages;
        w->sets_of = o->sets_of;
        w->moves_slot = &((Opened *)arg)->moves;
        return 0;
    }
    if (open_tables(w, b, arg) < 0)
        return -1;
    w->own_kinds = 1;
    return make_kinds(w);
}

/* An opened trie's every token as a packed mask (`all_tokens`, for fill_mask), unless an id is negative or
 * repeated: then none, and every walk sets its tokens' bits one by one. -1 when out of memory. Made once
 * per trie (Qwen2: 19 KB). */
static int open_all_tokens(Walk *w)
{
    int64_t most = -1;
    for (Py_ssize_t p = 0; p < w->n_tokens; p++) {
        if (w->token_ids[p] < 0)
            return 0;
        if (w->token_ids[p] > most)
            most = w->token_ids[p];
    }
    if (most >= 4 * (int64_t)w->n_tokens + 65536) /* ids far apart (not a vocabulary's): not worth the words */
        return 0;
    Py_ssize_t words = (Py_ssize_t)(most / 32 + 1);
    uint32_t *all = calloc((size_t)words, sizeof(uint32_t));
    if (all == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t p = 0; p < w->n_tokens; p++) {
        int64_t id = w->token_ids[p];
        if (all[id >> 5] >> (id & 31) & 1u) {
            free(all);
            return 0;
        }
        all[id >> 5] |= 1u << (id & 31);
    }
    w->all_tokens = all;
    w->all_words = words;
    return 0;
}

/* An opened trie's byte of every node (`node_bytes`, for run: 333 KB for Qwen2). -1 when out of memory. */
static int open_node_bytes(Walk *w)
{
    uint8_t *bytes = malloc((size_t)w->n_nodes + 1);
    if (bytes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t v = 0; v < w->n_nodes; v++)
        bytes[v] = (uint8_t)w->rec[RECORD * v + 2];
    w->node_bytes = bytes;
    return 0;
}

/* An opened trie's first level (node 0's children) with their records, for walks from the trie's root
 * (`root_records`); none when a record of it is corrupt (walks then find it as they would). -1 when out of
 * memory. */
static int open_first_level(Walk *w)
{
    const int32_t *rec = w->rec;
    const int64_t stop = rec[0];
    Py_ssize_t n = 0;
    if (stop < 1 || stop > w->n_nodes)
        return 0;
    for (int64_t c = 1; c < stop; c = rec[RECORD * c], n++)
        if (rec[RECORD * c] <= c || rec[RECORD * c] > stop)
            return 0;
    int64_t *nodes = malloc((size_t)(n + 1) * sizeof(int64_t));
    int32_t *records = malloc((size_t)(2 * RECORD * n + 1) * sizeof(int32_t));
    if (nodes == NULL || records == NULL) {
        free(nodes);
        free(records);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t i = 0;
    for (int64_t c = 1; c < stop; c = rec[RECORD * c], i++) {
        nodes[i] = c;
        memcpy(records + 2 * RECORD * i, rec + RECORD * c, 2 * RECORD * sizeof(int32_t));
    }
    w->first_nodes = nodes;
    w->first_records = records;
    w->n_first = n;
    return 0;
}

PyDoc_STRVAR(opened_doc,
"opened(arrays)\n--\n\n"
"The trie tuple (nodes, token_ids), or walk tables (5 arrays, or 6 packed and a filler), acquired and checked once:\n"
"pass it to walk, walk_states or pack where the tuple goes (see pda/kernels/walk.py).");

static PyObject *opened(PyObject *self, PyObject *arg)
{
    int tables = PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) != 3; /* a trie is (nodes, token_ids, token_chars) */
    Opened *found = PyObject_New(Opened, &OpenedType);
    if (found == NULL)
        return NULL;
    memset(&found->w, 0, sizeof found->w);
    found->b.held = 0;
    found->tables = tables;
    found->lazy = NULL;
    found->moves = NULL;
    if (tables && PyTuple_GET_SIZE(arg) == 7) {
        found->lazy = PyTuple_GET_ITEM(arg, 6);
        Py_INCREF(found->lazy);
    }
    if ((tables ? open_tables(&found->w, &found->b, arg) < 0 || make_kinds(&found->w) < 0
                : open_trie(&found->w, &found->b, arg) < 0)
        || (!tables && (open_all_tokens(&found->w) < 0 || open_first_level(&found->w) < 0
                        || open_node_bytes(&found->w) < 0))) {
        Py_DECREF(found);
        return NULL;
    }
    return (PyObject *)found;
}

/* The slices tuple (plain_body, proof, depth, search_min_nodes); below and rest are in the node records. */
static int open_slices(Walk *w, Buffers *b, PyObject *slices)
{
    Py_ssize_t s[2];
    Py_buffer *v;
    if (check_tuple(slices, 4, "slices") < 0)
        return -1;
    if (!(v = get_array(b, PyTuple_GET_ITEM(slices, 0), "plain_body", KIND_INT, 1, 2, 0, s)))
        return -1;
    w->plain = v->buf;
    if (s[0] < U_STATES || s[0] > CUT_ROWS_MAX || s[1] != 256) {
        PyErr_Format(PyExc_ValueError, "plain_body must be int8 [8 to %d, 256]", CUT_ROWS_MAX);
        return -1;
    }
    w->rows = (int)s[0];
    int bad = 0; /* branch-free, so that it is vectorised: it runs on every walk with the cut */
    for (int i = 0; i < U_STATES * 256; i++) /* the plain body's states move among themselves */
        bad |= (uint8_t)(w->plain[i] + 1) > U_STATES;
    for (int i = U_STATES * 256; i < w->rows * 256; i++)
        bad |= (uint8_t)(w->plain[i] + 1) > w->rows;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "plain_body's moves must be -1 or an automaton state "
                                          "(one of the plain body's 8 from theirs)");
        return -1;
    }
    if (!(v = get_array(b, PyTuple_GET_ITEM(slices, 1), "proof", KIND_INT, 2, 2, 1, s)))
        return -1;
    w->proof = v->buf;
    if (s[0] != w->n_states || s[1] != w->rows) {
        PyErr_SetString(PyExc_ValueError, "proof must be int16 [rows of trans, rows of plain_body]");
        return -1;
    }
    long depth = PyLong_AsLong(PyTuple_GET_ITEM(slices, 2));
    if (depth == -1 && PyErr_Occurred())
        return -1;
    if (depth < 0 || depth > MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError, "depth must be between 0 and %d", MAX_DEPTH);
        return -1;
    }
    w->depth = (int)depth;
    w->search_min_nodes = PyLong_AsLong(PyTuple_GET_ITEM(slices, 3));
    if (w->search_min_nodes == -1 && PyErr_Occurred())
        return -1;
    if (w->search_min_nodes < 0) {
        PyErr_SetString(PyExc_ValueError, "search_min_nodes must not be negative");
        return -1;
    }
    w->budget = WALK_SEARCH_BUDGET;
    return 0;
}

/* The roots: int64 nodes of the trie other than its root (int32 too, widened into `wide`, when it is given). Sets
 * *sorted when they are ascending: then the walk's output is sorted and unique as it comes, unless a root lies in
 * an earlier root's subtree (the walk finds that: `unsorted`). No record is read here (see run). */
static const int64_t *open_roots(Walk *w, Buffers *b, PyObject *obj, Py_ssize_t *n_roots, int *sorted, Vec *wide)
{
    Py_ssize_t s[1];
    Py_buffer *v = get_array(b, obj, "roots", KIND_INT, wide != NULL ? 0 : 8, 1, 0, s);
    if (v == NULL)
        return NULL;
    const int64_t *roots = v->buf;
    if (v->itemsize == 4) { /* int32 nodes (IndexWalks' groups may be), widened */
        if (vec_reserve(wide, s[0]) < 0) {
            PyErr_NoMemory();
            return NULL;
        }
        for (Py_ssize_t i = 0; i < s[0]; i++)
            ((int64_t *)wide->data)[i] = ((const int32_t *)v->buf)[i];
        roots = (const int64_t *)wide->data;
    }
    *n_roots = s[0];
    *sorted = 1;
    if (w->first_nodes != NULL && s[0] == w->n_first && memcmp(roots, w->first_nodes, (size_t)s[0] * sizeof(int64_t)) == 0) {
        w->root_records = w->first_records; /* nodes of the trie, ascending and disjoint: checked when opened */
        return roots;
    }
    for (Py_ssize_t i = 0; i < s[0]; i++) {
        if (roots[i] < 1 || roots[i] >= w->n_nodes) {
            PyErr_Format(PyExc_ValueError, "root %lld is not a node of the trie below its root", (long long)roots[i]);
            return NULL;
        }
        if (i > 0 && roots[i] <= roots[i - 1])
            *sorted = 0;
    }
    return roots;
}

static int parse_state(PyObject *obj, Py_ssize_t n_states, int32_t *out)
{
    long state = PyLong_AsLong(obj);
    if (state == -1 && PyErr_Occurred())
        return -1;
    if (state < 0 || state >= n_states) {
        PyErr_Format(PyExc_ValueError, "root state %ld is outside the DFA's %zd states", state, n_states);
        return -1;
    }
    *out = (int32_t)state;
    return 0;
}

static int parse_mask_words(PyObject *obj, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(obj);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (*out < 0 || *out > (PY_SSIZE_T_MAX >> 6)) {
        PyErr_SetString(PyExc_ValueError, "mask_words must be a non-negative word count");
        return -1;
    }
    return 0;
}

/* A tuple (mask_words, sparse_max): the inside tokens are kept as ranges and built after (sparse_inside);
 * `message` is the ValueError for a malformed tuple. */
static int parse_sparse(PyObject *arg, Walk *w, Py_ssize_t *sparse_max, const char *message)
{
    if (PyTuple_GET_SIZE(arg) != 2 || parse_mask_words(PyTuple_GET_ITEM(arg, 0), &w->mask_words) < 0
        || (*sparse_max = PyLong_AsSsize_t(PyTuple_GET_ITEM(arg, 1))) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, message);
        return -1;
    }
    w->sparse = 1;
    return 0;
}

/* The error a failed walk left, raised. */
static PyObject *walk_error(Walk *w)
{
    if (w->no_memory)
        return PyErr_NoMemory();
    if (w->lazy_code) {
        lazy_api->raise(w->lazy_code);
        return NULL;
    }
    PyErr_Format(PyExc_ValueError, "corrupt walk input: %s (at %lld)", w->error, (long long)w->error_at);
    return NULL;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Sort ascending and drop repeats, in place; the new length. */
static Py_ssize_t sort_unique(int64_t *values, Py_ssize_t n)
{
    Py_ssize_t kept = 0;
    qsort(values, (size_t)n, sizeof(int64_t), cmp_int64);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kept == 0 || values[i] != values[kept - 1])
            values[kept++] = values[i];
    }
    return kept;
}

/* A walk's boundary nodes grouped by set: the distinct sets ascending, sets[0 .. n_found), set sets[i]'s nodes at
 * nodes[bounds[i] .. bounds[i + 1]) in the walk's order. Made in time linear in the boundaries, whatever the number
 * of sets: each set met is numbered through a small open-addressing table, the few distinct ones sorted, the nodes
 * placed. (A counting sort over every set cost each walk a pass over all of them, and allocations: a JSON Schema's
 * shared product has ~250 accept rows, and most walks after a boundary meet none or one.) Arrays of walks with at
 * most GROUPED_FIXED boundaries are in `fixed`, others in one heap block (`heap`). */
#define GROUPED_FIXED 64
typedef struct {
    int64_t *nodes;
    int32_t *sets;
    Py_ssize_t *bounds;
    Py_ssize_t n_found;
    void *heap;
    struct {
        int64_t nodes[GROUPED_FIXED];
        int32_t sets[GROUPED_FIXED], number[GROUPED_FIXED], rank[GROUPED_FIXED], table[4 * GROUPED_FIXED];
        Py_ssize_t bounds[GROUPED_FIXED + 1];
    } fixed;
} Grouped;

static inline uint32_t set_hash(int32_t set) { return (uint32_t)set * 2654435761u; }

/* Group `w`'s boundaries (see Grouped); -1 with MemoryError set. Free with grouped_free. */
static int group_by_set(const Walk *w, Grouped *g)
{
    const int64_t *nodes = (const int64_t *)w->out_nodes.data;
    const int32_t *sets = (const int32_t *)w->out_states.data;
    const Py_ssize_t n = w->out_nodes.len;
    Py_ssize_t slots = 4 * GROUPED_FIXED;
    while (slots < 2 * n)
        slots *= 2;
    int32_t *number, *rank, *table;
    g->heap = NULL;
    g->n_found = 0;
    if (n <= GROUPED_FIXED) {
        g->nodes = g->fixed.nodes;
        g->sets = g->fixed.sets;
        g->bounds = g->fixed.bounds;
        number = g->fixed.number;
        rank = g->fixed.rank;
        table = g->fixed.table;
    } else {
        char *block = malloc((size_t)n * (sizeof(int64_t) + 3 * sizeof(int32_t) + sizeof(Py_ssize_t))
                             + sizeof(Py_ssize_t) + (size_t)slots * sizeof(int32_t));
        if (block == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        g->heap = block;
        g->nodes = (int64_t *)block;
        g->bounds = (Py_ssize_t *)(g->nodes + n);
        g->sets = (int32_t *)(g->bounds + n + 1);
        number = g->sets + n;
        rank = number + n;
        table = rank + n;
    }
    memset(table, 0xFF, (size_t)slots * sizeof(int32_t)); /* -1: empty */
    Py_ssize_t found = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* number[i]: the order in which set sets[i] was first met */
        uint32_t h = set_hash(sets[i]) & (uint32_t)(slots - 1);
        while (table[h] >= 0 && g->sets[table[h]] != sets[i])
            h = (h + 1) & (uint32_t)(slots - 1);
        if (table[h] < 0) {
            table[h] = (int32_t)found;
            g->sets[found++] = sets[i];
        }
        number[i] = table[h];
    }
    /* rank[j]: where the j-th set met comes in ascending order (an insertion sort: most walks meet one to three) */
    for (Py_ssize_t j = 0; j < found; j++)
        rank[j] = (int32_t)j;
    for (Py_ssize_t j = 1; j < found; j++) {
        int32_t r = rank[j];
        Py_ssize_t i = j;
        for (; i > 0 && g->sets[rank[i - 1]] > g->sets[r]; i--)
            rank[i] = rank[i - 1];
        rank[i] = r;
    }
    int32_t *ordered = table; /* the table is done with: the sets ascending, then each met set's rank */
    for (Py_ssize_t i = 0; i < found; i++)
        ordered[i] = g->sets[rank[i]];
    for (Py_ssize_t i = 0; i < found; i++)
        ordered[found + rank[i]] = (int32_t)i;
    memcpy(g->sets, ordered, (size_t)found * sizeof(int32_t));
    for (Py_ssize_t i = 0; i <= found; i++)
        g->bounds[i] = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        g->bounds[ordered[found + number[i]] + 1]++;
    for (Py_ssize_t i = 0; i < found; i++)
        g->bounds[i + 1] += g->bounds[i];
    for (Py_ssize_t i = 0; i < n; i++) /* rank reused: each set's next place */
        number[i] = ordered[found + number[i]];
    for (Py_ssize_t i = 0; i < found; i++)
        rank[i] = (int32_t)g->bounds[i];
    for (Py_ssize_t i = 0; i < n; i++)
        g->nodes[rank[number[i]]++] = nodes[i];
    g->n_found = found;
    return 0;
}

static void grouped_free(Grouped *g)
{
    free(g->heap);
}

/* [(set index, bytes of int64 nodes)] from the boundaries in visit order, grouped by set, ascending
 * (each group keeps the walk's ascending order; sorted here when not). */
static PyObject *boundary_groups(Walk *w, int sorted)
{
    Grouped g;
    if (group_by_set(w, &g) < 0)
        return NULL;
    PyObject *groups = PyList_New(g.n_found);
    for (Py_ssize_t i = 0; groups != NULL && i < g.n_found; i++) {
        Py_ssize_t lo = g.bounds[i], size = g.bounds[i + 1] - lo;
        if (!sorted)
            size = sort_unique(g.nodes + lo, size);
        PyObject *item = Py_BuildValue("(iN)", g.sets[i], PyBytes_FromStringAndSize((char *)(g.nodes + lo),
                                                                                   size * (Py_ssize_t)sizeof(int64_t)));
        if (item == NULL)
            Py_CLEAR(groups);
        else
            PyList_SET_ITEM(groups, i, item);
    }
    grouped_free(&g);
    return groups;
}

static void free_walk(Walk *w)
{
    vec_free(&w->out_nodes);
    vec_free(&w->out_states);
    vec_free(&w->in_nodes);
    vec_free(&w->in_states);
    vec_free(&w->ranges);
    scratch_give(w->scratch);
    if (w->own_kinds)
        free_kinds(w->kind_pages, w->n_kind_pages);
    if (w->own_moves)
        free((void *)w->moves);
}

/* A walk's first output buffers, on its caller's stack (see Vec). */
typedef struct {
    int64_t ranges[128];
    int64_t nodes[128];
    int32_t states[128];
} Fixed;

/* A walk with nothing set, its outputs starting in `fixed`: boundary nodes int64, or int32 with their states
 * (`keep_states`, walk_states). */
static void start_walk(Walk *w, Fixed *fixed, int keep_states)
{
    memset(w, 0, sizeof *w);
    w->keep_states = keep_states;
    w->ranges = vec_in(sizeof(int64_t), fixed->ranges, sizeof fixed->ranges);
    w->out_nodes = vec_in(keep_states ? sizeof(int32_t) : sizeof(int64_t), fixed->nodes, sizeof fixed->nodes);
    w->out_states = vec_in(sizeof(int32_t), fixed->states, sizeof fixed->states);
    w->in_nodes = vec_in(sizeof(int32_t), NULL, 0);
    w->in_states = vec_in(sizeof(int32_t), NULL, 0);
}

/* A dense walk's inside tokens as bytes of a packed int32 mask, or None when there are none. */
static PyObject *mask_or_none(Walk *w)
{
    if (w->n_inside == 0)
        Py_RETURN_NONE;
    PyObject *data = PyBytes_FromStringAndSize(NULL, w->mask_words * 4);
    if (data == NULL)
        return NULL;
    memset(PyBytes_AS_STRING(data), 0, (size_t)w->mask_words * 4);
    if (fill_mask(w, (uint32_t *)PyBytes_AS_STRING(data), 1) < 0) {
        Py_DECREF(data);
        return walk_error(w);
    }
    return data;
}

/* A sparse walk's inside tokens as bytes (NULL with an exception on a token id outside the mask): their int32
 * ids ascending when at most `sparse_max` (*dense = 0), else the packed int32 mask (*dense = 1); NULL without an
 * exception when there are none. Roots that overlap may give a token twice: ids are made unique, and a count over
 * the bound is checked again on the mask. The ids are written into the bytes object itself. */
static PyObject *sparse_data(Walk *w, Py_ssize_t sparse_max, int *dense)
{
    *dense = w->n_inside > sparse_max;
    if (w->n_inside == 0)
        return NULL;
    const int64_t *ranges = (const int64_t *)w->ranges.data, limit = (int64_t)w->mask_words * 32;
    if (*dense) {
        PyObject *data = PyBytes_FromStringAndSize(NULL, w->mask_words * 4);
        if (data == NULL)
            return NULL;
        uint32_t *mask = (uint32_t *)PyBytes_AS_STRING(data);
        memset(mask, 0, (size_t)w->mask_words * 4);
        if (fill_mask(w, mask, 1) < 0) {
            Py_DECREF(data);
            return walk_error(w);
        }
        if (!w->unsorted) /* roots apart: no token came twice, so n_inside is the count (a walk from the trie's root) */
            return data;
        Py_ssize_t bits = 0;
        for (Py_ssize_t i = 0; i < w->mask_words; i++)
            bits += __builtin_popcount(mask[i]);
        if (bits > sparse_max)
            return data;
        PyObject *ids = PyBytes_FromStringAndSize(NULL, bits * 4); /* as ids after all: the repeats made them few */
        if (ids != NULL) {
            uint32_t *out = (uint32_t *)PyBytes_AS_STRING(ids);
            Py_ssize_t n = 0;
            for (Py_ssize_t i = 0; i < w->mask_words; i++)
                for (uint32_t m = mask[i]; m; m &= m - 1)
                    out[n++] = (uint32_t)(i * 32 + __builtin_ctz(m));
        }
        Py_DECREF(data);
        *dense = 0;
        return ids;
    }
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)w->n_inside * 4);
    if (data == NULL)
        return NULL;
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(data), fixed_tmp[256];
    Py_ssize_t n = 0;
    for (Py_ssize_t r = 0; r < w->ranges.len; r += 2) {
        for (int64_t p = ranges[r]; p < ranges[r + 1]; p++) {
            int64_t id = w->token_ids[p];
            if (id < 0 || id >= limit) {
                Py_DECREF(data);
                PyErr_Format(PyExc_ValueError, "corrupt walk input: a token id is outside the mask (at %lld)",
                             (long long)p);
                return NULL;
            }
            out[n++] = (uint32_t)id;
        }
    }
    uint32_t *tmp = n <= 256 ? fixed_tmp : malloc((size_t)n * sizeof(uint32_t));
    if (tmp == NULL) {
        Py_DECREF(data);
        return PyErr_NoMemory();
    }
    sort_ids(out, n, tmp, limit);
    if (tmp != fixed_tmp)
        free(tmp);
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (kept == 0 || out[i] != out[kept - 1])
            out[kept++] = out[i];
    if (kept < n && _PyBytes_Resize(&data, kept * 4) < 0)
        return NULL;
    return data;
}

/* `sparse_data` as walk and pack return it: None, or (dense, bytes). */
static PyObject *sparse_inside(Walk *w, Py_ssize_t sparse_max)
{
    int dense;
    PyObject *data = sparse_data(w, sparse_max, &dense);
    if (data == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    return Py_BuildValue("(iN)", dense, data);
}

PyDoc_STRVAR(walk_doc,
"walk(trie, tables, n_sets, roots, root_state, mask, slices)\n--\n\n"
"Classify the tokens below `roots` from DFA state `root_state` (see pda/kernels/walk.py), setting\n"
"the inside tokens' bits in `mask` (a writable int32 array). Returns ([(set index, int64 nodes\n"
"bytes)], whether any token is inside, (visited, cut, searched)). With `mask` a tuple (mask_words,\n"
"sparse_max), the second item is None, (0, int32 token ids ascending) for at most sparse_max\n"
"tokens, or (1, the packed int32 mask), each as bytes.");

static PyObject *walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Walk w;
    Buffers b;
    Py_ssize_t n_roots;
    int32_t root_state;
    int sorted, status;
    PyObject *result = NULL, *groups = NULL;
    Fixed fixed;
    start_walk(&w, &fixed, 0);
    b.held = 0;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "walk(trie, tables, n_sets, roots, root_state, mask, slices) takes 7 arguments");
        return NULL;
    }
    if (trie_arg(&w, &b, args[0]) < 0 || tables_arg(&w, &b, args[1]) < 0)
        goto done;
    w.n_sets = PyLong_AsSsize_t(args[2]);
    if (w.n_sets == -1 && PyErr_Occurred())
        goto done;
    if (w.n_sets < 0 || w.n_sets > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "n_sets must be a non-negative count");
        goto done;
    }
    const int64_t *roots = open_roots(&w, &b, args[3], &n_roots, &sorted, NULL);
    if (roots == NULL || parse_state(args[4], w.n_states, &root_state) < 0)
        goto done;
    Py_ssize_t s[1], sparse_max = 0;
    if (PyTuple_Check(args[5])) { /* (mask_words, sparse_max): the inside tokens as ranges, built after */
        if (parse_sparse(args[5], &w, &sparse_max, "mask must be an int32 array or (mask_words, sparse_max >= 0)") < 0)
            goto done;
    } else {
        Py_buffer *out = get_array(&b, args[5], "mask", KIND_INT, 4, 1, 1, s);
        if (out == NULL)
            goto done;
        w.mask_words = s[0];
        w.mask = out->buf; /* the caller's words (not freed here), written without the GIL: see walk.py */
    }
    if (args[6] != Py_None && open_slices(&w, &b, args[6]) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    status = run(&w, roots, n_roots, root_state);
    if (status == 0 && !w.sparse)
        status = fill_mask(&w, w.mask, 0);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        walk_error(&w);
        goto done;
    }
    if (!(groups = boundary_groups(&w, sorted && !w.unsorted)))
        goto done;
    PyObject *inside = w.sparse ? sparse_inside(&w, sparse_max) : PyBool_FromLong(w.n_inside > 0);
    if (inside == NULL)
        goto done;
    result = Py_BuildValue("(ON(nnn))", groups, inside, w.visited, w.cut, w.searched);
done:
    Py_XDECREF(groups);
    free_walk(&w);
    release_all(&b);
    return result;
}

/* Pairs (node, state) sorted by node then state, repeats dropped; the new length. */
static Py_ssize_t sort_pairs(Vec *nodes, Vec *states, int64_t *scratch)
{
    int32_t *node = (int32_t *)nodes->data, *state = (int32_t *)states->data;
    Py_ssize_t n = nodes->len, kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        scratch[2 * i] = node[i];
        scratch[2 * i + 1] = state[i];
    }
    qsort(scratch, (size_t)n, 2 * sizeof(int64_t), cmp_pair);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kept && scratch[2 * i] == node[kept - 1] && scratch[2 * i + 1] == state[kept - 1])
            continue;
        node[kept] = (int32_t)scratch[2 * i];
        state[kept] = (int32_t)scratch[2 * i + 1];
        kept++;
    }
    nodes->len = states->len = kept;
    return kept;
}

static PyObject *vec_bytes(const Vec *v)
{
    return PyBytes_FromStringAndSize(v->data ? v->data : "", v->len * v->itemsize);
}

PyDoc_STRVAR(walk_states_doc,
"walk_states(trie, tables, roots, root_state)\n--\n\n"
"The walk without the cut, keeping states: (inside nodes, their states, boundary nodes, the states\n"
"before them), four bytes objects of int32 (see pda/kernels/walk.py).");

static PyObject *walk_states(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Walk w;
    Buffers b;
    Py_ssize_t n_roots;
    int32_t root_state;
    int sorted, status;
    PyObject *result = NULL;
    Fixed fixed;
    start_walk(&w, &fixed, 1);
    b.held = 0;
    w.n_sets = INT32_MAX;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "walk_states(trie, tables, roots, root_state) takes 4 arguments");
        return NULL;
    }
    if (trie_arg(&w, &b, args[0]) < 0 || tables_arg(&w, &b, args[1]) < 0)
        goto done;
    const int64_t *roots = open_roots(&w, &b, args[2], &n_roots, &sorted, NULL);
    if (roots == NULL || parse_state(args[3], w.n_states, &root_state) < 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS
    status = run(&w, roots, n_roots, root_state);
    if (status == 0 && !(sorted && !w.unsorted)) {
        Py_ssize_t most = w.in_nodes.len > w.out_nodes.len ? w.in_nodes.len : w.out_nodes.len;
        int64_t *scratch = malloc((size_t)(2 * most + 2) * sizeof(int64_t));
        if (scratch == NULL) {
            w.no_memory = 1;
            status = -1;
        } else {
            sort_pairs(&w.in_nodes, &w.in_states, scratch);
            sort_pairs(&w.out_nodes, &w.out_states, scratch);
            free(scratch);
        }
    }
    Py_END_ALLOW_THREADS
    if (status < 0) {
        walk_error(&w);
        goto done;
    }
    result = Py_BuildValue("(NNNN)", vec_bytes(&w.in_nodes), vec_bytes(&w.in_states), vec_bytes(&w.out_nodes),
                           vec_bytes(&w.out_states));
done:
    free_walk(&w);
    release_all(&b);
    return result;
}

PyDoc_STRVAR(pack_doc,
"pack(trie, nodes, mask_words)\n--\n\n"
"The tokens ending at int32 `nodes` as a packed int32 mask (bytes), or None when there are none.\n"
"With `mask_words` a tuple (mask_words, sparse_max): None, (0, int32 token ids ascending) for at most\n"
"sparse_max tokens, or (1, the packed int32 mask), each as bytes (as `walk`'s sparse mode).");

static PyObject *pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Walk w;
    Buffers b;
    Py_ssize_t s[1], sparse_max = 0;
    Py_buffer *v;
    PyObject *result = NULL;
    Fixed fixed;
    start_walk(&w, &fixed, 0);
    b.held = 0;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "pack(trie, nodes, mask_words) takes 3 arguments");
        return NULL;
    }
    if (trie_arg(&w, &b, args[0]) < 0 || !(v = get_array(&b, args[1], "nodes", KIND_INT, 4, 1, 0, s)))
        goto done;
    if (PyTuple_Check(args[2])) { /* (mask_words, sparse_max): the tokens as ranges, built after */
        if (parse_sparse(args[2], &w, &sparse_max, "mask_words must be a count or (mask_words, sparse_max >= 0)") < 0)
            goto done;
    } else if (parse_mask_words(args[2], &w.mask_words) < 0) {
        goto done;
    }
    const int32_t *nodes = v->buf;
    for (Py_ssize_t i = 0; i < s[0]; i++) {
        if (nodes[i] < 0 || nodes[i] >= w.n_nodes) {
            PyErr_Format(PyExc_ValueError, "node %d is outside the trie", nodes[i]);
            goto done;
        }
        if (mark_tokens(&w, node_tokens(&w, nodes[i]), node_tokens(&w, nodes[i] + 1), nodes[i]) < 0) {
            walk_error(&w);
            goto done;
        }
    }
    result = w.sparse ? sparse_inside(&w, sparse_max) : mask_or_none(&w);
done:
    free_walk(&w);
    release_all(&b);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Chain walks: a walk from a state whose lexeme can only go on one way                       */

/* From such a state (every state of a key literal's or a keyword's DFA) the walk keeps the tokens ending on the
 * lexeme's path down the trie, and where the path reaches the lexeme's end every child of that node is a boundary
 * (each byte there leads to a state not live that stops, from a state that ends the lexeme); every other node is
 * dead, its state not ending one. `walk` finds that by reading the record of every child of every node on the path
 * (a node near the trie's root has hundreds, each a cache miss out of cache: Github_hard o56025's first document
 * made 243 of its 277 root walks there); here each path node's children are bisected by byte, a few
 * loads a level. */

static int compare_int32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Where flag tables go on from state s when exactly one byte keeps them live: 1 with that byte in `byte` and the
 * state in `next`; 0 when s ends a lexeme and no byte keeps it live (every byte a boundary: each goes to a state
 * not live that stops); -1 when neither (more ways on or none, a byte class of several bytes, a state not live
 * that does not stop, a state or set out of range: then the full walk decides, and raises where it must). */
static int chain_step(const Walk *w, int32_t s, uint8_t *byte, int32_t *next)
{
    const int32_t *row = w->trans + (Py_ssize_t)s * w->n_classes, ends = w->ends_as[s];
    if (ends < -1 || ends >= w->n_sets)
        return -1;
    Py_ssize_t live_class = -1;
    for (Py_ssize_t c = 0; c < w->n_classes; c++) {
        const int32_t t = row[c];
        if (t < 0 || t >= w->n_states)
            return -1;
        if (w->live[t]) {
            if (live_class >= 0 || ends >= 0)
                return -1;
            live_class = c;
        } else if (!w->stops[t]) {
            return -1;
        }
    }
    if (live_class < 0)
        return ends >= 0 ? 0 : -1;
    int found = -1;
    for (int b = 0; b < 256; b++) {
        if (w->byte_class[b] == live_class) {
            if (found >= 0)
                return -1;
            found = b;
        }
    }
    if (found < 0)
        return -1;
    *byte = (uint8_t)found;
    *next = row[live_class];
    return 1;
}

PyDoc_STRVAR(chain_walk_doc,
"chain_walk(trie, tables, child_ptr, child_ids, root_state, sparse_max)\n--\n\n"
"The walk from the trie's root at `root_state` of opened flag tables where the lexeme can go on one way only:\n"
"one byte at a time to a state that ends it and goes on no further. None when it is not such a state or\n"
"when more than `sparse_max` tokens are inside; else (ids, lo, hi): the inside tokens as int32 ids ascending\n"
"(bytes), and the boundary nodes as child_ids[lo:hi] (the children of the node where the lexeme ends;\n"
"lo == hi: none). `child_ptr`, `child_ids` (int64) are the trie's children in CSR form, each node's\n"
"ascending (`TokenTrie`). What `walk` from the trie's first level gives, with every set index 0.");

/* The trie's child of `node` with byte `b` (children ascending by byte, found by bisection), -1 when none; -2
 * with ValueError set when the CSR is corrupt. */
static int64_t child_with(const Walk *w, const int64_t *ptr, const int64_t *ids, Py_ssize_t n_ids, int64_t node,
                          uint8_t b)
{
    int64_t lo = ptr[node], hi = ptr[node + 1];
    if (lo < 0 || lo > hi || hi > n_ids) {
        PyErr_Format(PyExc_ValueError, "node %lld's children are outside child_ids", (long long)node);
        return -2;
    }
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2, c = ids[mid];
        if (c <= node || c >= w->n_nodes) {
            PyErr_Format(PyExc_ValueError, "child %lld of node %lld is outside its subtree", (long long)c,
                         (long long)node);
            return -2;
        }
        const uint8_t at = w->node_bytes != NULL ? w->node_bytes[c] : record_byte(w->rec + RECORD * c);
        if (at == b)
            return c;
        if (at < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static PyObject *chain_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Walk w;
    Buffers b;
    Py_ssize_t s_ptr[1], s_ids[1], sparse_max;
    Py_buffer *ptr_view, *ids_view;
    int32_t state, fixed_ids[64], *ids = fixed_ids;
    Py_ssize_t n_ids = 0, cap = 64;
    PyObject *result = NULL;
    memset(&w, 0, sizeof w);
    b.held = 0;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "chain_walk(trie, tables, child_ptr, child_ids, root_state, sparse_max) takes 6 arguments");
        return NULL;
    }
    if (!Py_IS_TYPE(args[0], &OpenedType) || ((Opened *)args[0])->tables || !Py_IS_TYPE(args[1], &OpenedType)
        || !((Opened *)args[1])->tables || ((Opened *)args[1])->w.packed) {
        PyErr_SetString(PyExc_TypeError, "chain_walk takes an opened trie and opened flag tables");
        return NULL;
    }
    if (trie_arg(&w, &b, args[0]) < 0 || tables_arg(&w, &b, args[1]) < 0)
        goto done;
    w.n_sets = 1;
    if (!(ptr_view = get_array(&b, args[2], "child_ptr", KIND_INT, 8, 1, 0, s_ptr))
        || !(ids_view = get_array(&b, args[3], "child_ids", KIND_INT, 8, 1, 0, s_ids))
        || parse_state(args[4], w.n_states, &state) < 0)
        goto done;
    if (s_ptr[0] != w.n_nodes + 1) {
        PyErr_SetString(PyExc_ValueError, "child_ptr must have one entry per trie node and a last one");
        goto done;
    }
    if ((sparse_max = PyLong_AsSsize_t(args[5])) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "sparse_max must be a count");
        goto done;
    }
    const int64_t *ptr = ptr_view->buf, *children = ids_view->buf;
    int64_t node = 0;
    for (Py_ssize_t steps = 0;; steps++) {
        uint8_t byte;
        int32_t next;
        const int step = steps > w.n_states ? -1 : chain_step(&w, state, &byte, &next);
        if (step < 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (step == 0)
            break;
        const int64_t child = child_with(&w, ptr, children, s_ids[0], node, byte);
        if (child == -2)
            goto done;
        if (child < 0) { /* no token goes on along the lexeme: none crosses its end */
            node = -1;
            break;
        }
        const int64_t lo = node_tokens(&w, child), hi = node_tokens(&w, child + 1);
        if (lo < 0 || lo > hi || hi > w.n_tokens) {
            PyErr_Format(PyExc_ValueError, "node %lld's token range is outside the tokens", (long long)child);
            goto done;
        }
        if (n_ids + (hi - lo) > sparse_max) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (n_ids + (hi - lo) > cap) {
            cap = 2 * (n_ids + (hi - lo));
            int32_t *grown = ids == fixed_ids ? malloc((size_t)cap * sizeof(int32_t))
                                              : realloc(ids, (size_t)cap * sizeof(int32_t));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            if (ids == fixed_ids)
                memcpy(grown, fixed_ids, (size_t)n_ids * sizeof(int32_t));
            ids = grown;
        }
        for (int64_t p = lo; p < hi; p++) {
            const int64_t id = w.token_ids[p];
            if (id < 0 || id > INT32_MAX) {
                PyErr_Format(PyExc_ValueError, "token id %lld is outside int32", (long long)id);
                goto done;
            }
            ids[n_ids++] = (int32_t)id;
        }
        node = child;
        state = next;
    }
    qsort(ids, (size_t)n_ids, sizeof(int32_t), compare_int32);
    const int64_t lo = node < 0 ? 0 : ptr[node], hi = node < 0 ? 0 : ptr[node + 1];
    if (lo < 0 || lo > hi || hi > s_ids[0]) {
        PyErr_Format(PyExc_ValueError, "node %lld's children are outside child_ids", (long long)node);
        goto done;
    }
    result = Py_BuildValue("(y#LL)", (const char *)ids, n_ids * (Py_ssize_t)sizeof(int32_t), (long long)lo,
                           (long long)hi);
done:
    if (ids != fixed_ids)
        free(ids);
    release_all(&b);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Index walks: the token index's classifications made here, as its objects                   */

/* IndexWalks(trie, mask_words, sparse_max, suffixes, tables_of, best, classify, types), called as
 * after_boundary(group, live_set) (see pda/kernels/walk.py): the token index's classification of a
 * boundary group's suffixes, with no Python frame once the live set's tables and the accept rows its
 * walks meet are known; classify(tables, roots, slices) is one walk as a classification (the index's
 * walks from a lexer state). What it reads of a group and the objects it makes are the token index's
 * BoundaryGroup and Classification (`types`), made as their constructors make them: every slot set. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *trie;                   /* an opened trie */
    Py_ssize_t mask_words, sparse_max;
    PyObject *suffixes;               /* dict (group key, live set) -> classification: the index's record */
    PyObject *tables_of, *best;       /* asked once per live set, once per (live set, accept row) */
    PyObject *classify;               /* None, or what computes a miss in place of the walk (basic lexer mode) */
    PyObject *classification, *group; /* the two types */
    Py_ssize_t classification_slots[3]; /* where their instances hold inside, tokens, groups */
    Py_ssize_t group_slots[4];          /* and terminals, nodes, key, after */
    PyObject *tables;                 /* dict live set -> tables_of's answer */
    PyObject *frombuffer, *zeros, *int64, *int32, *empty; /* numpy.frombuffer, numpy.zeros, two dtypes, () */
    Py_ssize_t nbytes;                /* of the classifications recorded here */
    Py_ssize_t walks, visited, cut, searched; /* what its walks did, summed */
} IndexWalks;

static PyObject *s_after, *s_key, *s_nodes, *s_terminals, *s_inside, *s_tokens, *s_groups;

/* A new instance of a class with __slots__, as object.__new__(type) makes it, its slots at `offsets` set to
 * `values` (what setattr would do, without looking each name up: a walk after a boundary set seven). */
static PyObject *new_slotted(PyObject *type, const Py_ssize_t *offsets, PyObject *const *values, int n)
{
    PyObject *obj = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 0);
    for (int i = 0; obj != NULL && i < n; i++)
        *(PyObject **)((char *)obj + offsets[i]) = Py_NewRef(values[i]);
    return obj;
}

static PyObject *new_classification(IndexWalks *self, PyObject *inside, PyObject *groups, PyObject *tokens)
{
    PyObject *values[3] = {inside, tokens, groups};
    return new_slotted(self->classification, self->classification_slots, values, 3);
}

/* A boundary group of int64 `nodes`, whose bytes are `key`, with an empty memo. */
static PyObject *new_group(IndexWalks *self, PyObject *terminals, PyObject *nodes, PyObject *key)
{
    PyObject *after = PyDict_New();
    if (after == NULL)
        return NULL;
    PyObject *values[4] = {terminals, nodes, key, after};
    PyObject *group = new_slotted(self->group, self->group_slots, values, 4);
    Py_DECREF(after);
    return group;
}

/* Where instances of `type` hold their entry `name` (a writable object member: a __slots__ entry of a Python
 * class, or a field of the compose kernel's compiled Classification and BoundaryGroup); -1 with TypeError set
 * when it has none. */
static Py_ssize_t slot_offset(PyObject *type, PyObject *name)
{
    PyObject *descr = PyObject_GetAttr(type, name);
    Py_ssize_t offset = -1;
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if ((member->type == T_OBJECT_EX || member->type == T_OBJECT) && !(member->flags & READONLY))
            offset = member->offset;
    }
    Py_XDECREF(descr);
    if (offset < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "types must be (Classification, BoundaryGroup): %R has no slot %R", type, name);
    }
    return offset;
}

/* numpy.frombuffer(data, dtype): a read-only array over a bytes object. */
static PyObject *array_of(IndexWalks *self, PyObject *data, PyObject *dtype)
{
    PyObject *args[2] = {data, dtype};
    return PyObject_Vectorcall(self->frombuffer, args, 2, NULL);
}

/* Whether `tables` is walk tables as the index hands them: (opened tables, n_sets, root state, rows, hand,
 * handed) with rows None and hand an int (every set is handed as it) or a list (set k as hand[k]), or rows a
 * list, hand an int and handed a dict (accept row k is handed as best(rows[k] & hand), memoised in handed). */
static int good_tables(PyObject *tables)
{
    if (!PyTuple_Check(tables) || PyTuple_GET_SIZE(tables) != 6)
        return 0;
    PyObject *opened = PyTuple_GET_ITEM(tables, 0), *rows = PyTuple_GET_ITEM(tables, 3);
    PyObject *hand = PyTuple_GET_ITEM(tables, 4), *handed = PyTuple_GET_ITEM(tables, 5);
    if (!Py_IS_TYPE(opened, &OpenedType) || !((Opened *)opened)->tables || !PyLong_Check(PyTuple_GET_ITEM(tables, 1))
        || !PyLong_Check(PyTuple_GET_ITEM(tables, 2)))
        return 0;
    if (rows == Py_None)
        return handed == Py_None && (PyLong_Check(hand) || PyList_Check(hand));
    return PyList_Check(rows) && PyLong_Check(hand) && PyDict_Check(handed);
}

static const char TABLES_SHAPE[] = "(opened tables, n_sets, root_state, rows: list | None, hand: int | list, "
                                   "handed: dict | None)";

/* A live set's tables (a new reference): tables_of's answer, asked on the set's first walk: None, or tables as
 * good_tables() takes them. */
static PyObject *live_tables(IndexWalks *self, PyObject *live)
{
    PyObject *found = PyDict_GetItemWithError(self->tables, live);
    if (found != NULL) {
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred() || (found = PyObject_CallOneArg(self->tables_of, live)) == NULL)
        return NULL;
    if (found != Py_None && !good_tables(found)) {
        Py_DECREF(found);
        PyErr_Format(PyExc_TypeError, "tables_of must return None or %s", TABLES_SHAPE);
        return NULL;
    }
    PyObject *kept = PyDict_SetDefault(self->tables, live, found); /* another thread's, if it came first */
    Py_XINCREF(kept);
    Py_DECREF(found);
    return kept;
}

/* The terminal set accept row k is handed as under a live set's tables (a new reference). */
static PyObject *handed_as(IndexWalks *self, PyObject *tables, Py_ssize_t k)
{
    PyObject *rows = PyTuple_GET_ITEM(tables, 3), *hand = PyTuple_GET_ITEM(tables, 4);
    if (rows == Py_None && PyList_Check(hand)) {
        if (k >= PyList_GET_SIZE(hand)) {
            PyErr_Format(PyExc_ValueError, "set %zd is outside the tables' %zd sets", k, PyList_GET_SIZE(hand));
            return NULL;
        }
        return Py_NewRef(PyList_GET_ITEM(hand, k));
    }
    if (rows == Py_None)
        return Py_NewRef(hand);
    PyObject *handed = PyTuple_GET_ITEM(tables, 5), *row = PyLong_FromSsize_t(k), *found = NULL, *matched = NULL;
    if (row == NULL)
        return NULL;
    found = PyDict_GetItemWithError(handed, row);
    if (found != NULL) {
        Py_INCREF(found);
    } else if (!PyErr_Occurred()) {
        if (k >= PyList_GET_SIZE(rows))
            PyErr_Format(PyExc_ValueError, "accept row %zd is outside the tables' %zd rows", k, PyList_GET_SIZE(rows));
        else if ((matched = PyNumber_And(PyList_GET_ITEM(rows, k), hand)) != NULL
                 && (found = PyObject_CallOneArg(self->best, matched)) != NULL && PyDict_SetItem(handed, row, found) < 0)
            Py_CLEAR(found);
    }
    Py_XDECREF(matched);
    Py_DECREF(row);
    return found;
}

/* A walk's boundaries as a tuple of boundary groups, one per terminal set (sets handed as the same terminals
 * have their nodes merged, ascending and unique), in order of their first set; `bytes` gets their nodes' bytes. */
static PyObject *handed_groups(IndexWalks *self, Walk *w, PyObject *tables, int sorted, Py_ssize_t *bytes)
{
    if (w->out_nodes.len == 0)
        return Py_NewRef(self->empty);
    Grouped g;
    if (group_by_set(w, &g) < 0)
        return NULL;
    const Py_ssize_t d = g.n_found;
    PyObject *groups = NULL, *numbers = NULL; /* numbers: terminal set -> its group's number (with two sets or more) */
    /* per set found: its terminal set and the next set of its group (-1: none); per group: its first and last set */
    PyObject *fixed_terminals[GROUPED_FIXED];
    Py_ssize_t fixed_links[3 * GROUPED_FIXED];
    PyObject **terminals = d <= GROUPED_FIXED ? fixed_terminals : malloc((size_t)d * sizeof(PyObject *));
    Py_ssize_t *next = d <= GROUPED_FIXED ? fixed_links : malloc((size_t)(3 * d) * sizeof(Py_ssize_t));
    Py_ssize_t *first = next + d, *last = first + d, n_groups = 0, got = 0;
    if (terminals == NULL || next == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (d > 1 && (numbers = PyDict_New()) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < d; i++) {
        next[i] = -1;
        PyObject *t = handed_as(self, tables, g.sets[i]);
        if (t == NULL)
            goto done;
        terminals[got++] = t;
        PyObject *known = numbers == NULL ? NULL : PyDict_GetItemWithError(numbers, t); /* borrowed */
        if (known != NULL) {
            Py_ssize_t j = PyLong_AsSsize_t(known);
            next[last[j]] = i;
            last[j] = i;
            continue;
        }
        if (PyErr_Occurred())
            goto done;
        if (numbers != NULL) {
            PyObject *number = PyLong_FromSsize_t(n_groups);
            int failed = number == NULL || PyDict_SetItem(numbers, t, number) < 0;
            Py_XDECREF(number);
            if (failed)
                goto done;
        }
        first[n_groups] = last[n_groups] = i;
        n_groups++;
    }
    if ((groups = PyTuple_New(n_groups)) == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n_groups; j++) {
        Py_ssize_t size = 0, parts = 0;
        for (Py_ssize_t i = first[j]; i >= 0; i = next[i], parts++)
            size += g.bounds[i + 1] - g.bounds[i];
        PyObject *key = PyBytes_FromStringAndSize(NULL, size * (Py_ssize_t)sizeof(int64_t)), *nodes = NULL, *group = NULL;
        if (key != NULL) {
            int64_t *merged = (int64_t *)PyBytes_AS_STRING(key);
            Py_ssize_t at = 0;
            for (Py_ssize_t i = first[j]; i >= 0; i = next[i]) {
                memcpy(merged + at, g.nodes + g.bounds[i], (size_t)(g.bounds[i + 1] - g.bounds[i]) * sizeof(int64_t));
                at += g.bounds[i + 1] - g.bounds[i];
            }
            Py_ssize_t kept = parts > 1 || !sorted ? sort_unique(merged, size) : size;
            if (kept < size)
                _PyBytes_Resize(&key, kept * (Py_ssize_t)sizeof(int64_t));
            size = kept;
        }
        if (key != NULL && (nodes = array_of(self, key, self->int64)) != NULL)
            group = new_group(self, terminals[first[j]], nodes, key);
        Py_XDECREF(key);
        Py_XDECREF(nodes);
        if (group == NULL) {
            Py_CLEAR(groups);
            goto done;
        }
        PyTuple_SET_ITEM(groups, j, group);
        *bytes += size * (Py_ssize_t)sizeof(int64_t);
    }
done:
    for (Py_ssize_t i = 0; i < got; i++)
        Py_DECREF(terminals[i]);
    Py_XDECREF(numbers);
    if (terminals != fixed_terminals)
        free(terminals);
    if (next != fixed_links)
        free(next);
    grouped_free(&g);
    return groups;
}

/* One walk from `roots` (a group's nodes or the trie's first level: int64, or int32 taken as such) on
 * `tables` (as good_tables() takes them) as a new classification: with `slices` (not None) the plain-body cut;
 * with `sparse_max` >= 0, at most that many inside tokens as ids (`tokens`, more as a read-only mask), else the
 * inside tokens as a writable numpy.zeros mask. Its bytes (inside tokens and groups' nodes) are added to
 * `bytes`. */
static PyObject *walk_classification(IndexWalks *self, PyObject *tables, PyObject *nodes, PyObject *slices,
                                     Py_ssize_t sparse_max, Py_ssize_t *bytes)
{
    const int sparse = sparse_max >= 0;
    Walk w;
    Buffers b;
    Py_ssize_t n_roots;
    int32_t root_state;
    int sorted, status;
    PyObject *groups = NULL, *inside = NULL, *result = NULL, *mask = NULL;
    Fixed fixed;
    int64_t wide_fixed[64];
    Vec wide = vec_in(sizeof(int64_t), wide_fixed, sizeof wide_fixed);
    start_walk(&w, &fixed, 0);
    b.held = 0;
    if (trie_arg(&w, &b, self->trie) < 0 || tables_arg(&w, &b, PyTuple_GET_ITEM(tables, 0)) < 0)
        goto done;
    w.n_sets = PyLong_AsSsize_t(PyTuple_GET_ITEM(tables, 1));
    if (w.n_sets == -1 && PyErr_Occurred())
        goto done;
    if (w.n_sets < 0 || w.n_sets > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "n_sets must be a non-negative count");
        goto done;
    }
    const int64_t *first = open_roots(&w, &b, nodes, &n_roots, &sorted, &wide);
    if (first == NULL || parse_state(PyTuple_GET_ITEM(tables, 2), w.n_states, &root_state) < 0)
        goto done;
    if (slices != Py_None && open_slices(&w, &b, slices) < 0)
        goto done;
    w.mask_words = self->mask_words;
    w.sparse = sparse;
    Py_BEGIN_ALLOW_THREADS
    status = run(&w, first, n_roots, root_state);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        walk_error(&w);
        goto done;
    }
    self->walks++;
    self->visited += w.visited;
    self->cut += w.cut;
    self->searched += w.searched;
    if ((groups = handed_groups(self, &w, tables, sorted && !w.unsorted, bytes)) == NULL)
        goto done;
    if (!sparse) {
        if (w.n_inside == 0) {
            result = new_classification(self, Py_None, groups, Py_None);
            goto done;
        }
        Py_buffer view;
        PyObject *count = PyLong_FromSsize_t(self->mask_words);
        if (count == NULL)
            goto done;
        PyObject *args[2] = {count, self->int32};
        mask = PyObject_Vectorcall(self->zeros, args, 2, NULL);
        Py_DECREF(count);
        if (mask == NULL || PyObject_GetBuffer(mask, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        Py_BEGIN_ALLOW_THREADS
        status = fill_mask(&w, (uint32_t *)view.buf, 1);
        Py_END_ALLOW_THREADS
        *bytes += view.len;
        PyBuffer_Release(&view);
        if (status < 0) {
            walk_error(&w);
            goto done;
        }
        result = new_classification(self, mask, groups, Py_None);
        goto done;
    }
    int dense;
    if ((inside = sparse_data(&w, sparse_max, &dense)) == NULL) {
        if (!PyErr_Occurred())
            result = new_classification(self, Py_None, groups, Py_None);
        goto done;
    }
    if ((mask = array_of(self, inside, self->int32)) == NULL)
        goto done;
    *bytes += PyBytes_GET_SIZE(inside);
    result = dense ? new_classification(self, mask, groups, Py_None) : new_classification(self, Py_None, groups, mask);
done:
    vec_free(&wide);
    Py_XDECREF(groups);
    Py_XDECREF(inside);
    Py_XDECREF(mask);
    free_walk(&w);
    release_all(&b);
    return result;
}

/* The walk of a group's suffixes from the start of a lexeme under `live` (a new classification): sparse, no
 * cut. Its bytes are added to `bytes`. */
static PyObject *suffix_walk(IndexWalks *self, PyObject *group, PyObject *live, Py_ssize_t *bytes)
{
    PyObject *tables = live_tables(self, live), *nodes = NULL, *found = NULL;
    if (tables == NULL)
        return NULL;
    if (tables == Py_None) /* nothing can start a lexeme: every suffix dies at its first byte */
        found = new_classification(self, Py_None, self->empty, Py_None);
    else if ((nodes = PyObject_GetAttr(group, s_nodes)) != NULL)
        found = walk_classification(self, tables, nodes, Py_None, self->sparse_max, bytes);
    Py_DECREF(tables);
    Py_XDECREF(nodes);
    return found;
}

PyDoc_STRVAR(classify_doc,
"classify(tables, roots, slices, sparse_max=None)\n--\n\n"
"One walk from `roots` on `tables` (as tables_of returns them) as a Classification: the inside tokens as\n"
"a mask (with `sparse_max` an int, at most that many as `tokens`, int32 ids), one boundary group per\n"
"terminal set; `slices` (plain_body, proof, depth, search_min_nodes) or None: the plain-body cut (see\n"
"pda/kernels/walk.py). Records nothing.");

static PyObject *IndexWalks_classify(IndexWalks *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "classify(tables, roots, slices, sparse_max=None) takes 3 or 4 arguments");
        return NULL;
    }
    if (!good_tables(args[0])) {
        PyErr_Format(PyExc_TypeError, "tables must be %s", TABLES_SHAPE);
        return NULL;
    }
    Py_ssize_t sparse_max = -1;
    if (nargs == 4 && args[3] != Py_None) {
        if ((sparse_max = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
            return NULL;
        if (sparse_max < 0) {
            PyErr_SetString(PyExc_ValueError, "sparse_max must be None or a count");
            return NULL;
        }
    }
    Py_ssize_t bytes = 0;
    return walk_classification(self, args[0], args[1], args[2], sparse_max, &bytes);
}

/* The bytes of a classification's arrays, as Classification.nbytes counts them (its tokens or inside mask,
 * its groups' nodes). */
static int classification_bytes(PyObject *found, Py_ssize_t *bytes)
{
    PyObject *names[3] = {s_tokens, s_inside, s_groups}, *values[3] = {NULL, NULL, NULL};
    int rc = -1;
    for (int i = 0; i < 3; i++)
        if ((values[i] = PyObject_GetAttr(found, names[i])) == NULL)
            goto done;
    if (!PyTuple_Check(values[2])) {
        PyErr_SetString(PyExc_TypeError, "a classification's `groups` is not a tuple");
        goto done;
    }
    PyObject *allowed = values[0] != Py_None ? values[0] : values[1];
    Py_buffer view;
    if (allowed != Py_None) {
        if (PyObject_GetBuffer(allowed, &view, PyBUF_SIMPLE) < 0)
            goto done;
        *bytes += view.len;
        PyBuffer_Release(&view);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(values[2]); i++) {
        PyObject *nodes = PyObject_GetAttr(PyTuple_GET_ITEM(values[2], i), s_nodes);
        if (nodes == NULL)
            goto done;
        int got = PyObject_GetBuffer(nodes, &view, PyBUF_SIMPLE);
        Py_DECREF(nodes);
        if (got < 0)
            goto done;
        *bytes += view.len;
        PyBuffer_Release(&view);
    }
    rc = 0;
done:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(values[i]);
    return rc;
}

static PyObject *IndexWalks_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    IndexWalks *self = (IndexWalks *)op;
    if (PyVectorcall_NARGS(nargsf) != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "after_boundary(group, live_set) takes 2 positional arguments");
        return NULL;
    }
    PyObject *group = args[0], *live = args[1], *memo, *key = NULL, *pair = NULL, *found = NULL;
    if (!PyLong_Check(live)) {
        PyErr_SetString(PyExc_TypeError, "live_set must be an int");
        return NULL;
    }
    if ((memo = PyObject_GetAttr(group, s_after)) == NULL)
        return NULL;
    if (!PyDict_Check(memo)) {
        PyErr_SetString(PyExc_TypeError, "a boundary group's `after` is not a dict");
        goto done;
    }
    if ((found = PyDict_GetItemWithError(memo, live)) != NULL) {
        Py_INCREF(found);
        goto done;
    }
    if (PyErr_Occurred() || (key = PyObject_GetAttr(group, s_key)) == NULL || (pair = PyTuple_Pack(2, key, live)) == NULL)
        goto done;
    if ((found = PyDict_GetItemWithError(self->suffixes, pair)) != NULL) {
        Py_INCREF(found);
    } else if (!PyErr_Occurred()) {
        Py_ssize_t bytes = 0;
        if (self->classify != Py_None)
            found = PyObject_CallFunctionObjArgs(self->classify, group, live, NULL);
        else
            found = suffix_walk(self, group, live, &bytes);
        if (found != NULL && self->classify != Py_None && classification_bytes(found, &bytes) < 0)
            Py_CLEAR(found);
        if (found == NULL || PyDict_SetItem(self->suffixes, pair, found) < 0)
            goto fail;
        self->nbytes += bytes;
    }
    if (found != NULL && PyDict_SetItem(memo, live, found) < 0)
        goto fail;
    goto done;
fail:
    Py_CLEAR(found);
done:
    Py_DECREF(memo);
    Py_XDECREF(key);
    Py_XDECREF(pair);
    return found;
}

static int IndexWalks_traverse(IndexWalks *self, visitproc visit, void *arg)
{
    Py_VISIT(self->trie);
    Py_VISIT(self->suffixes);
    Py_VISIT(self->tables_of);
    Py_VISIT(self->best);
    Py_VISIT(self->classify);
    Py_VISIT(self->classification);
    Py_VISIT(self->group);
    Py_VISIT(self->tables);
    return 0;
}

static int IndexWalks_clear(IndexWalks *self)
{
    Py_CLEAR(self->trie);
    Py_CLEAR(self->suffixes);
    Py_CLEAR(self->tables_of);
    Py_CLEAR(self->best);
    Py_CLEAR(self->classify);
    Py_CLEAR(self->classification);
    Py_CLEAR(self->group);
    Py_CLEAR(self->tables);
    Py_CLEAR(self->frombuffer);
    Py_CLEAR(self->zeros);
    Py_CLEAR(self->int64);
    Py_CLEAR(self->int32);
    Py_CLEAR(self->empty);
    return 0;
}

static void IndexWalks_dealloc(IndexWalks *self)
{
    PyObject_GC_UnTrack(self);
    IndexWalks_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *IndexWalks_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *trie, *words, *most, *suffixes, *tables_of, *best, *classify, *types;
    Py_ssize_t mask_words, sparse_max;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "IndexWalks takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOO:IndexWalks", &trie, &words, &most, &suffixes, &tables_of, &best,
                          &classify, &types))
        return NULL;
    if (parse_mask_words(words, &mask_words) < 0 || (sparse_max = PyLong_AsSsize_t(most)) == -1) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError) || !PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "mask_words and sparse_max must be non-negative counts");
        }
        return NULL;
    }
    if (!Py_IS_TYPE(trie, &OpenedType) || ((Opened *)trie)->tables) {
        PyErr_SetString(PyExc_TypeError, "trie must be an opened trie (opened(TrieArrays))");
        return NULL;
    }
    if (mask_words < 0 || mask_words > (PY_SSIZE_T_MAX >> 6) || sparse_max < 0) {
        PyErr_SetString(PyExc_ValueError, "mask_words and sparse_max must be non-negative counts");
        return NULL;
    }
    if (!PyDict_Check(suffixes) || !PyCallable_Check(tables_of) || !PyCallable_Check(best)
        || (classify != Py_None && !PyCallable_Check(classify))) {
        PyErr_SetString(PyExc_TypeError, "suffixes must be a dict, tables_of and best callable, classify None or callable");
        return NULL;
    }
    if (!PyTuple_Check(types) || PyTuple_GET_SIZE(types) != 2 || !PyType_Check(PyTuple_GET_ITEM(types, 0))
        || !PyType_Check(PyTuple_GET_ITEM(types, 1))) {
        PyErr_SetString(PyExc_TypeError, "types must be (Classification, BoundaryGroup)");
        return NULL;
    }
    PyObject *classification_names[3] = {s_inside, s_tokens, s_groups};
    PyObject *group_names[4] = {s_terminals, s_nodes, s_key, s_after};
    Py_ssize_t classification_slots[3], group_slots[4];
    for (int i = 0; i < 3; i++)
        if ((classification_slots[i] = slot_offset(PyTuple_GET_ITEM(types, 0), classification_names[i])) < 0)
            return NULL;
    for (int i = 0; i < 4; i++)
        if ((group_slots[i] = slot_offset(PyTuple_GET_ITEM(types, 1), group_names[i])) < 0)
            return NULL;
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL)
        return NULL;
    IndexWalks *self = (IndexWalks *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(numpy);
        return NULL;
    }
    self->vectorcall = IndexWalks_call;
    self->mask_words = mask_words;
    self->sparse_max = sparse_max;
    Py_INCREF(trie);
    self->trie = trie;
    Py_INCREF(suffixes);
    self->suffixes = suffixes;
    Py_INCREF(tables_of);
    self->tables_of = tables_of;
    Py_INCREF(best);
    self->best = best;
    Py_INCREF(classify);
    self->classify = classify;
    self->classification = Py_NewRef(PyTuple_GET_ITEM(types, 0));
    self->group = Py_NewRef(PyTuple_GET_ITEM(types, 1));
    memcpy(self->classification_slots, classification_slots, sizeof classification_slots);
    memcpy(self->group_slots, group_slots, sizeof group_slots);
    self->tables = PyDict_New();
    self->frombuffer = PyObject_GetAttrString(numpy, "frombuffer");
    self->zeros = PyObject_GetAttrString(numpy, "zeros");
    PyObject *dtype = PyObject_GetAttrString(numpy, "dtype");
    self->int64 = dtype == NULL ? NULL : PyObject_CallFunction(dtype, "s", "<i8");
    self->int32 = dtype == NULL ? NULL : PyObject_CallFunction(dtype, "s", "<i4");
    self->empty = PyTuple_New(0);
    Py_XDECREF(dtype);
    Py_DECREF(numpy);
    if (self->tables == NULL || self->frombuffer == NULL || self->zeros == NULL || self->int64 == NULL
        || self->int32 == NULL
        || self->empty == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *IndexWalks_get_nbytes(IndexWalks *self, void *closure)
{
    return PyLong_FromSsize_t(self->nbytes);
}

static PyObject *IndexWalks_get_counts(IndexWalks *self, void *closure)
{
    return Py_BuildValue("(nnnn)", self->walks, self->visited, self->cut, self->searched);
}

static PyGetSetDef IndexWalks_getset[] = {
    {"nbytes", (getter)IndexWalks_get_nbytes, NULL, "The bytes of the classifications recorded here.", NULL},
    {"counts", (getter)IndexWalks_get_counts, NULL,
     "(walks, nodes visited, subtrees cut, pairs searched), summed over its walks.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef IndexWalks_methods[] = {
    {"classify", (PyCFunction)(void (*)(void))IndexWalks_classify, METH_FASTCALL, classify_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IndexWalksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pda.kernels._walk.IndexWalks",
    .tp_basicsize = sizeof(IndexWalks),
    .tp_dealloc = (destructor)IndexWalks_dealloc,
    .tp_vectorcall_offset = offsetof(IndexWalks, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "after_boundary(group, live_set): a boundary group's suffix classification, walked and recorded; "
              "classify(tables, roots, slices): one walk as a classification (see pda/kernels/walk.py).",
    .tp_traverse = (traverseproc)IndexWalks_traverse,
    .tp_clear = (inquiry)IndexWalks_clear,
    .tp_getset = IndexWalks_getset,
    .tp_methods = IndexWalks_methods,
    .tp_new = IndexWalks_new,
};

/* content_tag(content, order, numbers) -> str: the disk tag of a root walk's content (`TokenIndex._content_tag`):
 * h = 0, then per live terminal (digest, priority, state) of `content`, terminal id `order[i]`,
 * h = (h ^ number ^ state * STATE_MIX) * TAG_PRIME mod 2**64, where number = the digest's first 16 hex digits ^
 * priority * TAG_PRIME mod 2**64, memoised in the dict `numbers` by terminal id; as 16 hex digits. The loop
 * Python ran cost ~3 us a root-walk miss in big-int operations (2,680 in 44 JSON Schemas' first documents). */
#define TAG_PRIME 0x100000001B3ULL
#define STATE_MIX 0x9E3779B97F4A7C15ULL

static int tag_number(PyObject *item, PyObject *j, PyObject *numbers, uint64_t *out)
{
    PyObject *found = PyDict_GetItemWithError(numbers, j);
    if (found != NULL) {
        *out = PyLong_AsUnsignedLongLongMask(found);
        return *out == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t len;
    const char *digest = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(item, 0), &len);
    if (digest == NULL)
        return -1;
    if (len < 16) {
        PyErr_SetString(PyExc_ValueError, "a terminal's digest has fewer than 16 hex digits");
        return -1;
    }
    uint64_t number = 0;
    for (int i = 0; i < 16; i++) {
        char c = digest[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0) {
            PyErr_SetString(PyExc_ValueError, "a terminal's digest is not hexadecimal");
            return -1;
        }
        number = number << 4 | (uint64_t)v;
    }
    uint64_t priority = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(item, 1));
    if (priority == (uint64_t)-1 && PyErr_Occurred())
        return -1;
    number ^= priority * TAG_PRIME;
    PyObject *value = PyLong_FromUnsignedLongLong(number);
    if (value == NULL || PyDict_SetItem(numbers, j, value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_DECREF(value);
    *out = number;
    return 0;
}

static PyObject *content_tag(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyTuple_Check(args[0]) || !PyList_Check(args[1]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "content_tag(content: tuple, order: list, numbers: dict)");
        return NULL;
    }
    PyObject *content = args[0], *order = args[1], *numbers = args[2];
    Py_ssize_t n = PyTuple_GET_SIZE(content);
    if (PyList_GET_SIZE(order) != n) {
        PyErr_SetString(PyExc_ValueError, "content and order differ in length");
        return NULL;
    }
    uint64_t h = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(content, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
            PyErr_SetString(PyExc_ValueError, "a content entry is not (digest, priority, state)");
            return NULL;
        }
        uint64_t number, state = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(item, 2));
        if ((state == (uint64_t)-1 && PyErr_Occurred()) || tag_number(item, PyList_GET_ITEM(order, i), numbers, &number) < 0)
            return NULL;
        h = (h ^ number ^ state * STATE_MIX) * TAG_PRIME;
    }
    char text[17];
    snprintf(text, sizeof text, "%016llx", (unsigned long long)h);
    return PyUnicode_FromStringAndSize(text, 16);
}

static PyMethodDef walk_methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL, walk_doc},
    {"walk_states", (PyCFunction)(void (*)(void))walk_states, METH_FASTCALL, walk_states_doc},
    {"pack", (PyCFunction)(void (*)(void))pack, METH_FASTCALL, pack_doc},
    {"chain_walk", (PyCFunction)(void (*)(void))chain_walk, METH_FASTCALL, chain_walk_doc},
    {"opened", (PyCFunction)opened, METH_O, opened_doc},
    {"content_tag", (PyCFunction)(void (*)(void))content_tag, METH_FASTCALL,
     "content_tag(content, order, numbers) -> str: a root walk's disk tag (see pda/kernels/walk.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef walk_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._walk", "The token index's trie walk (see pda/kernels/walk.py).", -1,
    walk_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__walk(void)
{
    if (pool_lock == NULL && (pool_lock = PyThread_allocate_lock()) == NULL)
        return PyErr_NoMemory();
    if (PyType_Ready(&OpenedType) < 0 || PyType_Ready(&IndexWalksType) < 0)
        return NULL;
    if (!(s_after = PyUnicode_InternFromString("after")) || !(s_key = PyUnicode_InternFromString("key"))
        || !(s_nodes = PyUnicode_InternFromString("nodes")) || !(s_terminals = PyUnicode_InternFromString("terminals"))
        || !(s_inside = PyUnicode_InternFromString("inside")) || !(s_tokens = PyUnicode_InternFromString("tokens"))
        || !(s_groups = PyUnicode_InternFromString("groups")))
        return NULL;
    PyObject *module = PyModule_Create(&walk_module);
    if (module != NULL && (PyModule_AddObjectRef(module, "Opened", (PyObject *)&OpenedType) < 0
                           || PyModule_AddObjectRef(module, "IndexWalks", (PyObject *)&IndexWalksType) < 0))
        Py_CLEAR(module);
    return module;
}

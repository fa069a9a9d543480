/* pda.kernels._earley: the Earley parser's nodes and their step, compiled.
 *
 * Written against the plain Python C API, like the other kernels; pda/kernels/earley.py
 * is the Python side and documents the interface, pda/parser/earley.py wires it to the
 * grammar's tables, and pda.reference.ReferenceEarley is the plain-Python parser the
 * tests compare it to node for node.
 *
 * Core(arrays..., limits, error): one grammar's static tables (see earley.py) and
 *     everything its nodes share: the predictions (interned by their seed
 *     nonterminals), the arena that owns its nodes, the intern table of nodes (by
 *     kernel content) and the memo of recent probes (a least-recently-used table of
 *     RECENT_PROBES entries).
 * Node: an interned Earley item set. Its kernel is the items that came from scanning
 *     or completion, as (dot position, origin node), sorted by (symbol after the dot,
 *     position, origin address); its predicted items (origin = the node itself) are
 *     its prediction's positions. Attributes: allowed (int bitmask of the terminals it
 *     can scan), accepting, cache (a dict owned by the mask layer), kernel (a
 *     frozenset of (position, origin), built when read: for tests and debugging).
 *     Methods: advance(terminals) (memoised on the node: its first entry in two fields,
 *     any later ones in a small hash table, as most nodes are advanced by one terminal
 *     set only), probe(terminals) (memoised in the core's recent probes only).
 *
 * Invariants:
 * - The step (`advance_node`) is the algorithm of pda.reference.ReferenceEarley, with
 *   the same work count, so the budgets (max_items, max_work, max_seconds) cut at the
 *   same place and raise the same LimitExceeded message. Nullable symbols are stepped
 *   over by the `step` table (Aycock-Horspool); right recursion uses Leo's memo.
 * - The step reads and writes only C data between its start and its result: no Python
 *   code can run in between (no allocation of Python objects, no decref), so the
 *   core's scratch buffers are never seen half-used by another thread or a finaliser.
 *   Python objects (the new node, its allowed int) are made after it; neither is
 *   tracked, so no collection runs then, and only a sweep removes nodes.
 * - The core's arena owns its nodes (one reference each; a root from its first step on,
 *   so that a core never stepped is freed by reference counting); a node holds a reference to
 *   its core (a node a matcher holds keeps the core alive), its `allowed` int, its
 *   cache dict and its memo's terminal sets. Its origins, its Leo memo's origins and
 *   its advance memo's results, and the probe memo's nodes, are borrowed pointers into
 *   the arena. So nodes are not tracked by the garbage collector (a cached compiled
 *   grammar's nodes were a fifth of the objects each full collection walked; profile.md,
 *   "Twenty-eighth profile"): the core is, and it reports to the collector one reference
 *   to itself per node that only the arena holds (refcount 1). When those are all of the
 *   core's references, nothing outside reaches the core or a node, and the collector
 *   clears the core, which frees its nodes.
 * - `sweep` frees the nodes nothing reaches any more, marking from the nodes Python
 *   holds (refcount > 1), the probe memo's and the node being stepped, through origins,
 *   Leo origins and advance memos (the edges that were references before): the nodes
 *   the arena keeps are the ones reference counting kept. It runs before a step once
 *   the arena has doubled since the last sweep (amortised O(1) a node), and from
 *   `stats` and `clear_probes`. A node only ever points to nodes in the arena: a marked
 *   node's pointers lead to marked nodes, and a step reads only nodes reachable from
 *   the node it steps.
 * - Every index read from the tables is checked when the core is built (ValueError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "int_words.h"

/* The clock is read once per this many work units while building a node (~1 ms of work). */
#define CLOCK_EVERY_WORK 16384

/* The arena is swept once it holds twice the nodes the last sweep kept, and at least this many. */
#define SWEEP_MIN_NODES 1024

typedef struct NodeObject NodeObject;

typedef struct {
    int64_t pos;
    NodeObject *origin;
} Item;

/* Positions grouped by a symbol: syms[i] owns pos[ptr[i]:ptr[i+1]] (syms sorted). */
typedef struct {
    int32_t n;
    int32_t *syms;
    int32_t *ptr;
    int32_t *pos;
} Groups;

typedef struct {
    int32_t n_seeds;
    int32_t *seeds; /* sorted nonterminal symbols */
    uint64_t hash;
    uint64_t *allowed; /* W words */
    int accepting;
    Groups scan;    /* by terminal */
    Groups waiting; /* by nonterminal */
} Prediction;

typedef struct {
    int32_t sym;        /* -1: empty slot */
    int32_t pos;        /* -1: no deterministic chain */
    NodeObject *origin; /* borrowed, or NULL */
} LeoEntry;

/* An advance memo entry past the first: terminals (a reference; NULL: empty slot) -> result (borrowed: a node or Py_None). */
typedef struct {
    PyObject *terms;
    Py_hash_t hash;
    PyObject *result;
} MemoEntry;

struct NodeObject {
    PyObject_HEAD
    PyObject *core;
    int32_t n_items;
    int32_t pred; /* prediction index in the core */
    Item *items;
    uint64_t hash;
    PyObject *allowed; /* int */
    int accepting;
    int interned;
    int marked;   /* by `sweep`, 0 between sweeps */
    int in_arena; /* a root enters the arena when first stepped */
    PyObject *first_terms, *first_next; /* the advance memo's first entry: terminals -> node or None (borrowed) */
    MemoEntry *memo; /* its later entries; NULL until used */
    int32_t memo_cap, memo_n;
    PyObject *cache; /* dict, made when first read */
    LeoEntry *leo;
    int32_t leo_cap, leo_n;
};

/* The probe memo: a least-recently-used table of (node, terminals) -> node or None (nodes borrowed). */
typedef struct {
    NodeObject *node;
    PyObject *terminals; /* a reference */
    PyObject *result;
    Py_hash_t hash;
    int32_t prev, next, chain;
} ProbeEntry;

typedef struct {
    PyObject_HEAD
    int32_t T, N, P, W, accept_pos;
    int32_t *next_sym, *lhs_of, *step_ptr, *step_to, *closure_ptr, *closure, *starts_ptr, *starts;
    uint8_t *is_end, *penult;
    int64_t max_items, max_work;
    double max_seconds;
    PyObject *error; /* LimitExceeded */
    /* predictions */
    Prediction *preds;
    int32_t n_preds, cap_preds;
    int32_t *pred_slots;
    int32_t n_pred_slots;
    /* the arena: every node made and not swept, one reference each */
    NodeObject **arena;
    int64_t n_arena, cap_arena, sweep_at;
    int sweeping;
    /* nodes, by kernel content (no references held); NULL empty, TOMB deleted */
    NodeObject **slots;
    int64_t n_slots, n_used, n_filled;
    /* probe memo */
    ProbeEntry *probes;
    int32_t *probe_buckets;
    int32_t probe_cap, n_probes, probe_head, probe_tail, probe_free;
    int32_t probe_made, probe_max; /* entries handed out so far (the rest never touched), and `recent_probes` */
    /* scratch for one step (see `busy`) */
    Item *items;
    int64_t cap_items;
    int32_t *set_slots;
    uint32_t *set_stamp;
    uint32_t stamp;
    int64_t n_set_slots;
    int64_t *complete;
    int64_t cap_complete;
    uint8_t *nt_mark;
    int busy;
} CoreObject;

static PyTypeObject NodeType;
static PyTypeObject CoreType;
static NodeObject TOMB_NODE;
#define TOMB (&TOMB_NODE)

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 29);
}

/* ---------------------------------------------------------------- groups, predictions */

/* The positions of symbol `sym` in `g` (count in *n), or NULL. */
static const int32_t *group_of(const Groups *g, int32_t sym, int32_t *n)
{
    int32_t lo = 0, hi = g->n;
    while (lo < hi) {
        int32_t mid = (lo + hi) >> 1;
        if (g->syms[mid] < sym)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < g->n && g->syms[lo] == sym) {
        *n = g->ptr[lo + 1] - g->ptr[lo];
        return g->pos + g->ptr[lo];
    }
    *n = 0;
    return NULL;
}

static int cmp_pair(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Groups from (sym << 32 | pos) pairs, sorted here; 0, or -1 on memory failure. */
static int groups_from_pairs(Groups *g, uint64_t *pairs, int32_t n)
{
    int32_t i, k = 0;
    qsort(pairs, (size_t)n, sizeof(uint64_t), cmp_pair);
    g->pos = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    g->syms = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    g->ptr = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!g->pos || !g->syms || !g->ptr)
        return -1;
    for (i = 0; i < n; i++) {
        int32_t sym = (int32_t)(pairs[i] >> 32);
        g->pos[i] = (int32_t)(pairs[i] & 0xffffffffu);
        if (k == 0 || g->syms[k - 1] != sym) {
            g->syms[k] = sym;
            g->ptr[k] = i;
            k++;
        }
    }
    g->ptr[k] = n;
    g->n = k;
    return 0;
}

static uint64_t hash_seeds(const int32_t *seeds, int32_t n)
{
    uint64_t h = 0x2545F4914F6CDD1DULL ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++)
        h = mix(h, (uint64_t)(uint32_t)seeds[i]);
    return h;
}

/* Build prediction `pr` for the sorted, distinct nonterminals seeds[0:n]; 0, or -1 on memory failure. */
static int build_prediction(CoreObject *c, Prediction *pr, const int32_t *seeds, int32_t n)
{
    int32_t T = c->T, i, j, n_marked = 0, n_scan = 0, n_wait = 0, total = 0;
    int32_t *marked = malloc(sizeof(int32_t) * (size_t)(c->N ? c->N : 1));
    uint64_t *scan = NULL, *wait = NULL;
    int ok = -1;
    memset(pr, 0, sizeof(*pr));
    pr->allowed = calloc((size_t)(c->W ? c->W : 1), sizeof(uint64_t));
    pr->seeds = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!marked || !pr->allowed || !pr->seeds)
        goto done;
    memcpy(pr->seeds, seeds, sizeof(int32_t) * (size_t)n);
    pr->n_seeds = n;
    pr->hash = hash_seeds(seeds, n);
    for (i = 0; i < n; i++) {
        int32_t a = seeds[i] - T;
        for (j = c->closure_ptr[a]; j < c->closure_ptr[a + 1]; j++) {
            int32_t b = c->closure[j] - T;
            if (!c->nt_mark[b]) {
                c->nt_mark[b] = 1;
                marked[n_marked++] = b;
                total += c->starts_ptr[b + 1] - c->starts_ptr[b];
            }
        }
    }
    scan = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
    wait = malloc(sizeof(uint64_t) * (size_t)(total ? total : 1));
    if (!scan || !wait)
        goto done;
    for (i = 0; i < n_marked; i++) {
        int32_t b = marked[i];
        for (j = c->starts_ptr[b]; j < c->starts_ptr[b + 1]; j++) {
            int32_t p = c->starts[j], sym = c->next_sym[p];
            if (sym < 0) {
                if (p == c->accept_pos)
                    pr->accepting = 1;
            } else if (sym < T) {
                scan[n_scan++] = (uint64_t)(uint32_t)sym << 32 | (uint32_t)p;
                pr->allowed[sym >> 6] |= 1ULL << (sym & 63);
            } else {
                wait[n_wait++] = (uint64_t)(uint32_t)sym << 32 | (uint32_t)p;
            }
        }
    }
    if (groups_from_pairs(&pr->scan, scan, n_scan) < 0 || groups_from_pairs(&pr->waiting, wait, n_wait) < 0)
        goto done;
    ok = 0;
done:
    if (marked)
        for (i = 0; i < n_marked; i++)
            c->nt_mark[marked[i]] = 0;
    free(marked);
    free(scan);
    free(wait);
    return ok;
}

static void free_groups(Groups *g)
{
    free(g->syms);
    free(g->ptr);
    free(g->pos);
}

/* The index of the prediction for sorted, distinct seeds[0:n] (built if new); -1 on memory failure. */
static int32_t prediction_for(CoreObject *c, const int32_t *seeds, int32_t n)
{
    uint64_t h = hash_seeds(seeds, n);
    int32_t mask = c->n_pred_slots - 1, i = (int32_t)(h & (uint64_t)mask), k;
    while ((k = c->pred_slots[i]) >= 0) {
        Prediction *pr = &c->preds[k];
        if (pr->hash == h && pr->n_seeds == n && memcmp(pr->seeds, seeds, sizeof(int32_t) * (size_t)n) == 0)
            return k;
        i = (i + 1) & mask;
    }
    if (c->n_preds == c->cap_preds) {
        int32_t cap = c->cap_preds ? 2 * c->cap_preds : 16;
        Prediction *grown = realloc(c->preds, sizeof(Prediction) * (size_t)cap);
        if (!grown)
            return -1;
        c->preds = grown;
        c->cap_preds = cap;
    }
    k = c->n_preds;
    if (build_prediction(c, &c->preds[k], seeds, n) < 0)
        return -1;
    c->n_preds++;
    c->pred_slots[i] = k;
    if (2 * c->n_preds > c->n_pred_slots) {
        int32_t size = 2 * c->n_pred_slots, q;
        int32_t *slots = malloc(sizeof(int32_t) * (size_t)size);
        if (!slots)
            return -1;
        memset(slots, 0xff, sizeof(int32_t) * (size_t)size);
        for (q = 0; q < c->n_preds; q++) {
            int32_t s = (int32_t)(c->preds[q].hash & (uint64_t)(size - 1));
            while (slots[s] >= 0)
                s = (s + 1) & (size - 1);
            slots[s] = q;
        }
        free(c->pred_slots);
        c->pred_slots = slots;
        c->n_pred_slots = size;
    }
    return k;
}

/* ---------------------------------------------------------------- the intern table */

static uint64_t hash_items(const Item *items, int32_t n)
{
    uint64_t h = 0x84222325CBF29CE4ULL ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++)
        h = mix(mix(h, (uint64_t)items[i].pos), (uint64_t)(uintptr_t)items[i].origin);
    return h;
}

static int same_items(const Item *a, const Item *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i].pos != b[i].pos || a[i].origin != b[i].origin)
            return 0;
    return 1;
}

/* The interned node with kernel items[0:n] (hash h), or NULL (a borrowed pointer). */
static NodeObject *find_node(CoreObject *c, const Item *items, int32_t n, uint64_t h)
{
    int64_t mask = c->n_slots - 1, i = (int64_t)(h & (uint64_t)mask);
    NodeObject *x;
    while ((x = c->slots[i]) != NULL) {
        if (x != TOMB && x->hash == h && x->n_items == n && same_items(x->items, items, n))
            return x;
        i = (i + 1) & mask;
    }
    return NULL;
}

static int rehash_nodes(CoreObject *c, int64_t size)
{
    NodeObject **slots = calloc((size_t)size, sizeof(NodeObject *));
    int64_t i;
    if (!slots)
        return -1;
    for (i = 0; i < c->n_slots; i++) {
        NodeObject *x = c->slots[i];
        if (x != NULL && x != TOMB) {
            int64_t s = (int64_t)(x->hash & (uint64_t)(size - 1));
            while (slots[s] != NULL)
                s = (s + 1) & (size - 1);
            slots[s] = x;
        }
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = size;
    c->n_filled = c->n_used;
    return 0;
}

static int insert_node(CoreObject *c, NodeObject *x)
{
    int64_t mask, i;
    if (2 * (c->n_filled + 1) > c->n_slots) {
        int64_t size = c->n_slots;
        while (4 * (c->n_used + 1) > size)
            size *= 2;
        if (rehash_nodes(c, size) < 0)
            return -1;
    }
    mask = c->n_slots - 1;
    i = (int64_t)(x->hash & (uint64_t)mask);
    while (c->slots[i] != NULL && c->slots[i] != TOMB)
        i = (i + 1) & mask;
    if (c->slots[i] == NULL)
        c->n_filled++;
    c->slots[i] = x;
    c->n_used++;
    x->interned = 1;
    return 0;
}

static void remove_node(CoreObject *c, NodeObject *x)
{
    int64_t mask = c->n_slots - 1, i = (int64_t)(x->hash & (uint64_t)mask);
    while (c->slots[i] != NULL) {
        if (c->slots[i] == x) {
            c->slots[i] = TOMB;
            c->n_used--;
            break;
        }
        i = (i + 1) & mask;
    }
    x->interned = 0;
}

/* ---------------------------------------------------------------- the arena */

/* Give the arena a reference to node x; 0, or -1 on memory failure (x untouched). */
static int arena_add(CoreObject *c, NodeObject *x)
{
    if (x->in_arena)
        return 0;
    if (c->n_arena == c->cap_arena) {
        int64_t cap = c->cap_arena ? 2 * c->cap_arena : 256;
        NodeObject **grown = realloc(c->arena, sizeof(NodeObject *) * (size_t)cap);
        if (!grown)
            return -1;
        c->arena = grown;
        c->cap_arena = cap;
    }
    Py_INCREF(x);
    c->arena[c->n_arena++] = x;
    x->in_arena = 1;
    return 0;
}

/* A node's result pointer (an advance or probe result): the node, or NULL for Py_None. */
static NodeObject *as_node(PyObject *result)
{
    return result == Py_None ? NULL : (NodeObject *)result;
}

/* Free the arena's nodes that nothing reaches (see the invariants at the top): mark from the nodes
 * Python holds, `keep` (may be NULL) and the probe memo's, through the borrowed pointers; then
 * drop the rest from the intern table and the arena, and release them last, the core consistent
 * (their caches' values may run Python code). 0, or -1 with MemoryError (nothing freed). */
static int sweep(CoreObject *c, NodeObject *keep)
{
    int64_t i, n_stack = 0, n_live = 0, n_dead;
    NodeObject **stack;
    if (c->sweeping)
        return 0;
    stack = malloc(sizeof(NodeObject *) * (size_t)(c->n_arena ? c->n_arena : 1));
    if (!stack) {
        PyErr_NoMemory();
        return -1;
    }
#define MARK(y)                                 \
    do {                                        \
        NodeObject *m_ = (y);                   \
        if (m_ && !m_->marked) {                \
            m_->marked = 1;                     \
            stack[n_stack++] = m_;              \
        }                                       \
    } while (0)
    for (i = 0; i < c->n_arena; i++)
        if (Py_REFCNT(c->arena[i]) > 1)
            MARK(c->arena[i]);
    MARK(keep);
    for (int32_t e = c->probe_head; e >= 0; e = c->probes[e].next) {
        MARK(c->probes[e].node);
        MARK(as_node(c->probes[e].result));
    }
    while (n_stack) {
        NodeObject *y = stack[--n_stack];
        for (int32_t k = 0; k < y->n_items; k++)
            MARK(y->items[k].origin);
        for (int32_t k = 0; k < y->leo_cap; k++)
            if (y->leo[k].sym >= 0)
                MARK(y->leo[k].origin);
        if (y->first_terms)
            MARK(as_node(y->first_next));
        for (int32_t k = 0; k < y->memo_cap; k++)
            if (y->memo[k].terms)
                MARK(as_node(y->memo[k].result));
    }
#undef MARK
    /* the marked stay (in order), the rest go to the stack's space */
    for (i = 0; i < c->n_arena; i++) {
        NodeObject *y = c->arena[i];
        if (y->marked) {
            y->marked = 0;
            c->arena[n_live++] = y;
        } else {
            if (y->interned)
                remove_node(c, y);
            stack[n_stack++] = y;
        }
    }
    n_dead = n_stack;
    c->n_arena = n_live;
    c->sweep_at = 2 * n_live > SWEEP_MIN_NODES ? 2 * n_live : SWEEP_MIN_NODES;
    c->sweeping = 1;
    for (i = 0; i < n_dead; i++)
        Py_DECREF(stack[i]);
    c->sweeping = 0;
    free(stack);
    return 0;
}

/* ---------------------------------------------------------------- node queries (pure C) */

static CoreObject *core_of(NodeObject *x)
{
    return (CoreObject *)x->core;
}

/* The kernel items of x with symbol `sym` after the dot: items[*lo:*hi] (kernels are sorted by it). */
static void kernel_waiting(CoreObject *c, NodeObject *x, int32_t sym, int32_t *lo_out, int32_t *hi_out)
{
    int32_t lo = 0, hi = x->n_items;
    while (lo < hi) {
        int32_t mid = (lo + hi) >> 1;
        if (c->next_sym[x->items[mid].pos] < sym)
            lo = mid + 1;
        else
            hi = mid;
    }
    hi = lo;
    while (hi < x->n_items && c->next_sym[x->items[hi].pos] == sym)
        hi++;
    *lo_out = lo;
    *hi_out = hi;
}

/* Leo memo of x for sym: the entry, or NULL. */
static LeoEntry *leo_get(NodeObject *x, int32_t sym)
{
    if (!x->leo_cap)
        return NULL;
    int32_t mask = x->leo_cap - 1, i = (int32_t)(((uint32_t)sym * 2654435761u) & (uint32_t)mask);
    while (x->leo[i].sym >= 0) {
        if (x->leo[i].sym == sym)
            return &x->leo[i];
        i = (i + 1) & mask;
    }
    return NULL;
}

/* Set x's Leo memo for sym to (pos, origin) (pos -1: none; origin borrowed). 0 or -1. */
static int leo_put(NodeObject *x, int32_t sym, int32_t pos, NodeObject *origin)
{
    int32_t mask, i;
    if (2 * (x->leo_n + 1) > x->leo_cap) {
        int32_t cap = x->leo_cap ? 2 * x->leo_cap : 4, k;
        LeoEntry *grown = malloc(sizeof(LeoEntry) * (size_t)cap);
        if (!grown)
            return -1;
        for (k = 0; k < cap; k++)
            grown[k].sym = -1;
        for (k = 0; k < x->leo_cap; k++)
            if (x->leo[k].sym >= 0) {
                int32_t s = (int32_t)(((uint32_t)x->leo[k].sym * 2654435761u) & (uint32_t)(cap - 1));
                while (grown[s].sym >= 0)
                    s = (s + 1) & (cap - 1);
                grown[s] = x->leo[k];
            }
        free(x->leo);
        x->leo = grown;
        x->leo_cap = cap;
    }
    mask = x->leo_cap - 1;
    i = (int32_t)(((uint32_t)sym * 2654435761u) & (uint32_t)mask);
    while (x->leo[i].sym >= 0)
        i = (i + 1) & mask;
    x->leo[i].sym = sym;
    x->leo[i].pos = pos;
    x->leo[i].origin = origin;
    x->leo_n++;
    return 0;
}

/* The topmost item of a deterministic completion chain for sym from x: *pos >= 0 and *origin,
 * or *pos = -1. 0, or -1 on memory failure. Walks the chain in a loop, memoising every link. */
static int leo_top(CoreObject *c, NodeObject *x, int32_t sym, int32_t *pos_out, NodeObject **origin_out)
{
    LeoEntry *e = leo_get(x, sym);
    int32_t top_pos = -1, n_chain = 0, cap_chain = 0, k;
    NodeObject *top_origin = NULL, *node = x;
    int32_t s = sym;
    struct link { NodeObject *node; int32_t sym, pos; NodeObject *origin; } *chain = NULL;
    if (e) {
        *pos_out = e->pos;
        *origin_out = e->origin;
        return 0;
    }
    for (;;) {
        int32_t lo, hi, n_pred;
        const int32_t *pred;
        e = leo_get(node, s);
        if (e) {
            top_pos = e->pos;
            top_origin = e->origin;
            break;
        }
        kernel_waiting(c, node, s, &lo, &hi);
        pred = group_of(&c->preds[node->pred].waiting, s, &n_pred);
        if ((hi - lo) + n_pred == 1) {
            int32_t p = hi > lo ? (int32_t)node->items[lo].pos : pred[0];
            NodeObject *o = hi > lo ? node->items[lo].origin : node;
            if (c->penult[p]) {
                if (n_chain == cap_chain) {
                    cap_chain = cap_chain ? 2 * cap_chain : 16;
                    struct link *grown = realloc(chain, sizeof(struct link) * (size_t)cap_chain);
                    if (!grown) {
                        free(chain);
                        return -1;
                    }
                    chain = grown;
                }
                chain[n_chain].node = node;
                chain[n_chain].sym = s;
                chain[n_chain].pos = p + 1;
                chain[n_chain].origin = o;
                n_chain++;
                node = o;
                s = c->lhs_of[p];
                continue;
            }
        }
        if (leo_put(node, s, -1, NULL) < 0) {
            free(chain);
            return -1;
        }
        break;
    }
    for (k = n_chain - 1; k >= 0; k--) {
        if (top_pos < 0) {
            top_pos = chain[k].pos;
            top_origin = chain[k].origin;
        }
        if (leo_put(chain[k].node, chain[k].sym, top_pos, top_origin) < 0) {
            free(chain);
            return -1;
        }
    }
    free(chain);
    e = leo_get(x, sym);
    *pos_out = e->pos;
    *origin_out = e->origin;
    return 0;
}

/* ---------------------------------------------------------------- the step */

/* Scratch item set of one step: add (pos, origin) if new; returns 1 if added, 0 if present, -1 on memory failure. */
static int grow_set(CoreObject *c);

static uint64_t item_hash(int64_t pos, NodeObject *o)
{
    return mix((uint64_t)pos * 0x9E3779B97F4A7C15ULL, (uint64_t)(uintptr_t)o);
}

static int add_item(CoreObject *c, int64_t *n_items, int64_t pos, NodeObject *o)
{
    int64_t mask, i;
    if (2 * (*n_items + 1) > c->n_set_slots && grow_set(c) < 0)
        return -1;
    mask = c->n_set_slots - 1;
    i = (int64_t)(item_hash(pos, o) & (uint64_t)mask);
    while (c->set_stamp[i] == c->stamp) {
        Item *it = &c->items[c->set_slots[i]];
        if (it->pos == pos && it->origin == o)
            return 0;
        i = (i + 1) & mask;
    }
    if (*n_items == c->cap_items) {
        int64_t cap = 2 * c->cap_items;
        Item *grown = realloc(c->items, sizeof(Item) * (size_t)cap);
        if (!grown)
            return -1;
        c->items = grown;
        c->cap_items = cap;
    }
    c->items[*n_items].pos = pos;
    c->items[*n_items].origin = o;
    c->set_stamp[i] = c->stamp;
    c->set_slots[i] = (int32_t)*n_items;
    (*n_items)++;
    return 1;
}

static int grow_set(CoreObject *c)
{
    int64_t size = 2 * c->n_set_slots, i, n = 0;
    int32_t *slots = malloc(sizeof(int32_t) * (size_t)size);
    uint32_t *stamp = calloc((size_t)size, sizeof(uint32_t));
    if (!slots || !stamp) {
        free(slots);
        free(stamp);
        return -1;
    }
    /* re-insert every item of this step (their indices are 0..count-1: count them from the old table) */
    for (i = 0; i < c->n_set_slots; i++)
        if (c->set_stamp[i] == c->stamp)
            n++;
    free(c->set_slots);
    free(c->set_stamp);
    c->set_slots = slots;
    c->set_stamp = stamp;
    c->n_set_slots = size;
    c->stamp = 1;
    for (i = 0; i < n; i++) {
        int64_t s = (int64_t)(item_hash(c->items[i].pos, c->items[i].origin) & (uint64_t)(size - 1));
        while (stamp[s] == 1)
            s = (s + 1) & (size - 1);
        stamp[s] = 1;
        slots[s] = (int32_t)i;
    }
    return 0;
}

static int push_complete(CoreObject *c, int64_t *n_complete, int64_t index)
{
    if (*n_complete == c->cap_complete) {
        int64_t cap = 2 * c->cap_complete;
        int64_t *grown = realloc(c->complete, sizeof(int64_t) * (size_t)cap);
        if (!grown)
            return -1;
        c->complete = grown;
        c->cap_complete = cap;
    }
    c->complete[(*n_complete)++] = index;
    return 0;
}

/* Add (p2, o) for every p2 in step[p]; queue the completed ones. 0, or -1 on memory failure. */
static int add_steps(CoreObject *c, int64_t *n_items, int64_t *n_complete, int32_t p, NodeObject *o)
{
    for (int32_t j = c->step_ptr[p]; j < c->step_ptr[p + 1]; j++) {
        int32_t p2 = c->step_to[j];
        int added = add_item(c, n_items, p2, o);
        if (added < 0)
            return -1;
        if (added && c->is_end[p2] && push_complete(c, n_complete, *n_items - 1) < 0)
            return -1;
    }
    return 0;
}

typedef enum { STEP_OK, STEP_NOMEM, STEP_WORK, STEP_ITEMS, STEP_TIME } StepStatus;

/* Raise-free budget check (the reference's `_check_budget`): a status, and the work to check at next. */
static StepStatus check_budget(CoreObject *c, int64_t work, int64_t items, double started, int64_t *check_at)
{
    if (work > c->max_work)
        return STEP_WORK;
    if (items > c->max_items)
        return STEP_ITEMS;
    if (now_seconds() - started > c->max_seconds)
        return STEP_TIME;
    *check_at = work + CLOCK_EVERY_WORK < c->max_work + 1 ? work + CLOCK_EVERY_WORK : c->max_work + 1;
    return STEP_OK;
}

static int cmp_sort_item(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* The step's items after scanning `terms` (W words, already within x's allowed set), sorted into
 * a new array (*out, *n_out; malloc'ed, no references taken). Pure C. */
static StepStatus step_items(CoreObject *c, NodeObject *x, const uint64_t *terms, Item **out, int32_t *n_out,
                             int64_t *n_at_limit)
{
    int64_t n_items = 0, n_complete = 0, work, check_at, i;
    int32_t T = c->T;
    double started = now_seconds();
    Prediction *pr = &c->preds[x->pred];
    StepStatus status;
    uint64_t *keys;
    c->stamp++;
    if (c->stamp == 0) { /* wrapped: clear the stamps */
        memset(c->set_stamp, 0, sizeof(uint32_t) * (size_t)c->n_set_slots);
        c->stamp = 1;
    }
    check_at = CLOCK_EVERY_WORK < c->max_work + 1 ? CLOCK_EVERY_WORK : c->max_work + 1;
    for (i = 0; i < x->n_items; i++) {
        int32_t p = (int32_t)x->items[i].pos, sym = c->next_sym[p];
        if (sym >= 0 && sym < T && (terms[sym >> 6] >> (sym & 63) & 1))
            if (add_steps(c, &n_items, &n_complete, p, x->items[i].origin) < 0)
                return STEP_NOMEM;
    }
    for (int32_t w = 0; w < c->W; w++) {
        uint64_t bits = terms[w] & pr->allowed[w];
        while (bits) {
            int32_t t = w * 64 + __builtin_ctzll(bits), n, k;
            const int32_t *ps = group_of(&pr->scan, t, &n);
            bits &= bits - 1;
            for (k = 0; k < n; k++)
                if (add_steps(c, &n_items, &n_complete, ps[k], x) < 0)
                    return STEP_NOMEM;
        }
    }
    work = n_items;
    *n_at_limit = n_items;
    if (work >= check_at && (status = check_budget(c, work, work, started, &check_at)) != STEP_OK)
        return status;
    while (n_complete) {
        Item it = c->items[c->complete[--n_complete]];
        NodeObject *o = it.origin;
        int32_t sym = c->lhs_of[it.pos], top_pos, lo, hi, n_pred, k;
        NodeObject *top_origin;
        const int32_t *pred;
        if (leo_top(c, o, sym, &top_pos, &top_origin) < 0)
            return STEP_NOMEM;
        if (top_pos >= 0) {
            int added;
            work += 1;
            added = add_item(c, &n_items, top_pos, top_origin);
            if (added < 0 || (added && push_complete(c, &n_complete, n_items - 1) < 0))
                return STEP_NOMEM;
            continue;
        }
        kernel_waiting(c, o, sym, &lo, &hi);
        pred = group_of(&c->preds[o->pred].waiting, sym, &n_pred);
        work += 1 + (hi - lo) + n_pred;
        *n_at_limit = n_items;
        if (work >= check_at && (status = check_budget(c, work, n_items, started, &check_at)) != STEP_OK)
            return status;
        for (k = lo; k < hi; k++)
            if (add_steps(c, &n_items, &n_complete, (int32_t)o->items[k].pos, o->items[k].origin) < 0)
                return STEP_NOMEM;
        for (k = 0; k < n_pred; k++)
            if (add_steps(c, &n_items, &n_complete, pred[k], o) < 0)
                return STEP_NOMEM;
    }
    *n_at_limit = n_items;
    if (n_items > c->max_items && (status = check_budget(c, work, n_items, started, &check_at)) != STEP_OK)
        return status;
    /* sort by (symbol after the dot, position, origin address) */
    keys = malloc(sizeof(uint64_t) * 2 * (size_t)(n_items ? n_items : 1));
    *out = malloc(sizeof(Item) * (size_t)(n_items ? n_items : 1));
    if (!keys || !*out) {
        free(keys);
        free(*out);
        *out = NULL;
        return STEP_NOMEM;
    }
    for (i = 0; i < n_items; i++) {
        keys[2 * i] = (uint64_t)(uint32_t)(c->next_sym[c->items[i].pos] + 1) << 32 | (uint64_t)c->items[i].pos;
        keys[2 * i + 1] = (uint64_t)(uintptr_t)c->items[i].origin;
    }
    qsort(keys, (size_t)n_items, 2 * sizeof(uint64_t), cmp_sort_item);
    for (i = 0; i < n_items; i++) {
        (*out)[i].pos = (int64_t)(keys[2 * i] & 0xffffffffu);
        (*out)[i].origin = (NodeObject *)(uintptr_t)keys[2 * i + 1];
    }
    free(keys);
    *n_out = (int32_t)n_items;
    return STEP_OK;
}

static PyObject *words_to_int(const uint64_t *words, int32_t W)
{
    unsigned char *bytes = malloc((size_t)(W ? W : 1) * 8);
    PyObject *v;
    if (!bytes)
        return PyErr_NoMemory();
    for (int32_t w = 0; w < W; w++)
        for (int b = 0; b < 8; b++)
            bytes[8 * w + b] = (unsigned char)(words[w] >> (8 * b));
    v = _PyLong_FromByteArray(bytes, (size_t)W * 8, 1, 0);
    free(bytes);
    return v;
}

/* The prediction of kernel items[0:n] (sorted): of the nonterminals after their dots. -1 on memory failure. */
static int32_t kernel_prediction(CoreObject *c, const Item *items, int32_t n)
{
    int32_t T = c->T, i, k = 0, pred;
    int32_t *seeds = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!seeds)
        return -1;
    for (i = 0; i < n; i++) {
        int32_t sym = c->next_sym[items[i].pos];
        if (sym >= T && (k == 0 || seeds[k - 1] != sym))
            seeds[k++] = sym;
    }
    pred = prediction_for(c, seeds, k);
    free(seeds);
    return pred;
}

/* A new node over kernel items[0:n] (hash h; the array is taken over) with prediction `pred`
 * (-1: memory failed), in the arena if `owned`; a new reference (the caller's), or NULL with an exception. */
static NodeObject *new_node(CoreObject *c, Item *items, int32_t n, uint64_t h, int32_t pred, int owned)
{
    int32_t T = c->T, i, W = c->W;
    uint64_t *allowed = malloc(sizeof(uint64_t) * (size_t)(W ? W : 1));
    NodeObject *x = NULL;
    if (pred < 0 || !allowed || !(x = PyObject_New(NodeObject, &NodeType))) {
        free(items);
        free(allowed);
        return PyErr_Occurred() ? NULL : (NodeObject *)PyErr_NoMemory();
    }
    memcpy(allowed, c->preds[pred].allowed, sizeof(uint64_t) * (size_t)W);
    x->core = (PyObject *)c;
    Py_INCREF(c);
    x->n_items = n;
    x->pred = pred;
    x->items = items;
    x->hash = h;
    x->accepting = c->preds[pred].accepting;
    x->interned = x->marked = x->in_arena = 0;
    x->first_terms = x->first_next = NULL;
    x->memo = NULL;
    x->memo_cap = x->memo_n = 0;
    x->leo = NULL;
    x->leo_cap = x->leo_n = 0;
    for (i = 0; i < n; i++) {
        int32_t sym = c->next_sym[items[i].pos];
        if (sym >= 0 && sym < T)
            allowed[sym >> 6] |= 1ULL << (sym & 63);
        if (items[i].pos == c->accept_pos)
            x->accepting = 1;
    }
    x->allowed = words_to_int(allowed, W);
    free(allowed);
    x->cache = NULL; /* made when first read: most nodes are probes, whose masks are never asked */
    if (!x->allowed || (owned && arena_add(c, x) < 0)) {
        Py_DECREF(x);
        return PyErr_Occurred() ? NULL : (NodeObject *)PyErr_NoMemory();
    }
    return x;
}

static PyObject *limit_error(CoreObject *c, StepStatus status, int64_t n_items)
{
    if (status == STEP_NOMEM)
        return PyErr_NoMemory();
    if (status == STEP_WORK)
        PyErr_Format(c->error,
                     "building one Earley item set took over %lld steps (Limits.max_node_work); "
                     "the grammar is too ambiguous for this input",
                     (long long)c->max_work);
    else if (status == STEP_ITEMS)
        PyErr_Format(c->error, "Earley item set has %lld items, over the limit of %lld (Limits.max_node_items); "
                     "the grammar is too ambiguous for this input",
                     (long long)n_items, (long long)c->max_items);
    else {
        PyObject *seconds = PyFloat_FromDouble(c->max_seconds);
        if (seconds) {
            PyErr_Format(c->error, "building one Earley item set took over %R s (Limits.max_node_seconds)", seconds);
            Py_DECREF(seconds);
        }
    }
    return NULL;
}

/* The node after scanning `terms` from x (a new reference), Py_None if dead; NULL with an exception. */
static PyObject *advance_node(CoreObject *c, NodeObject *x, const uint64_t *terms)
{
    Item *items = NULL;
    int32_t n = 0;
    int64_t n_at_limit = 0;
    StepStatus status;
    NodeObject *found;
    uint64_t h;
    if (c->busy) {
        PyErr_SetString(PyExc_RuntimeError, "an Earley step ran inside another (re-entrant call)");
        return NULL;
    }
    if (arena_add(c, x) < 0) /* a root, stepped for the first time: new nodes will point to it */
        return PyErr_NoMemory();
    if (c->n_arena >= c->sweep_at && sweep(c, x) < 0)
        return NULL;
    c->busy = 1;
    status = step_items(c, x, terms, &items, &n, &n_at_limit);
    c->busy = 0;
    if (status != STEP_OK)
        return limit_error(c, status, n_at_limit);
    h = hash_items(items, n);
    found = find_node(c, items, n, h);
    if (found) {
        free(items);
        Py_INCREF(found);
        return (PyObject *)found;
    }
    found = new_node(c, items, n, h, kernel_prediction(c, items, n), 1);
    if (!found)
        return NULL;
    if (insert_node(c, found) < 0) {
        Py_DECREF(found); /* the arena's reference frees it at the next sweep */
        return PyErr_NoMemory();
    }
    return (PyObject *)found;
}

/* ---------------------------------------------------------------- the probe memo */

static Py_hash_t probe_hash(NodeObject *x, PyObject *terminals)
{
    Py_hash_t h = PyObject_Hash(terminals);
    if (h == -1)
        return -1;
    h = (Py_hash_t)mix((uint64_t)h, (uint64_t)(uintptr_t)x);
    return h == -1 ? -2 : h;
}

static void probe_unlink(CoreObject *c, int32_t e)
{
    ProbeEntry *p = &c->probes[e];
    if (p->prev >= 0)
        c->probes[p->prev].next = p->next;
    else
        c->probe_head = p->next;
    if (p->next >= 0)
        c->probes[p->next].prev = p->prev;
    else
        c->probe_tail = p->prev;
}

static void probe_push_front(CoreObject *c, int32_t e)
{
    ProbeEntry *p = &c->probes[e];
    p->prev = -1;
    p->next = c->probe_head;
    if (c->probe_head >= 0)
        c->probes[c->probe_head].prev = e;
    c->probe_head = e;
    if (c->probe_tail < 0)
        c->probe_tail = e;
}

/* The memoised probe (a borrowed reference), NULL if absent; -1 in *error with an exception. */
static PyObject *probe_get(CoreObject *c, NodeObject *x, PyObject *terminals, Py_hash_t h, int *error)
{
    int32_t e = c->probe_buckets[(uint64_t)h & (uint64_t)(c->probe_cap - 1)];
    *error = 0;
    while (e >= 0) {
        ProbeEntry *p = &c->probes[e];
        if (p->hash == h && p->node == x) {
            int same = PyObject_RichCompareBool(p->terminals, terminals, Py_EQ);
            if (same < 0) {
                *error = -1;
                return NULL;
            }
            if (same) {
                if (c->probe_head != e) {
                    probe_unlink(c, e);
                    probe_push_front(c, e);
                }
                return p->result;
            }
        }
        e = p->chain;
    }
    return NULL;
}

/* Remember a probe, forgetting the least recently used one when full. */
static void probe_put(CoreObject *c, NodeObject *x, PyObject *terminals, PyObject *result, Py_hash_t h)
{
    int32_t e, *b;
    PyObject *old_terms = NULL;
    if (c->probe_free >= 0) {
        e = c->probe_free;
        c->probe_free = c->probes[e].chain;
        c->n_probes++;
    } else if (c->probe_made < c->probe_max) { /* an entry never used: the table is touched as it fills */
        e = c->probe_made++;
        c->n_probes++;
    } else {
        ProbeEntry *p;
        e = c->probe_tail;
        p = &c->probes[e];
        probe_unlink(c, e);
        b = &c->probe_buckets[(uint64_t)p->hash & (uint64_t)(c->probe_cap - 1)];
        while (*b != e)
            b = &c->probes[*b].chain;
        *b = p->chain;
        old_terms = p->terminals;
    }
    c->probes[e].node = x;
    c->probes[e].terminals = terminals;
    c->probes[e].result = result;
    c->probes[e].hash = h;
    Py_INCREF(terminals);
    b = &c->probe_buckets[(uint64_t)h & (uint64_t)(c->probe_cap - 1)];
    c->probes[e].chain = *b;
    *b = e;
    probe_push_front(c, e);
    Py_XDECREF(old_terms); /* last, with the table consistent */
}

static void probe_clear(CoreObject *c)
{
    int32_t e;
    while ((e = c->probe_head) >= 0) {
        ProbeEntry *p = &c->probes[e];
        PyObject *terms = p->terminals;
        int32_t *b;
        probe_unlink(c, e);
        b = &c->probe_buckets[(uint64_t)p->hash & (uint64_t)(c->probe_cap - 1)];
        while (*b != e)
            b = &c->probes[*b].chain;
        *b = p->chain;
        p->chain = c->probe_free;
        c->probe_free = e;
        c->n_probes--;
        Py_DECREF(terms);
    }
}

/* ---------------------------------------------------------------- Node methods */

/* terminals & x.allowed, a new int (so it fits the core's W words). */
static PyObject *masked_terminals(NodeObject *x, PyObject *terminals)
{
    if (!PyLong_Check(terminals)) {
        PyErr_SetString(PyExc_TypeError, "terminals must be an int bitmask");
        return NULL;
    }
    return PyNumber_And(terminals, x->allowed);
}

/* The advance memo's entry for `masked` (borrowed), or NULL: not there, or an error (set). */
static PyObject *next_get(NodeObject *x, PyObject *masked)
{
    Py_hash_t h;
    int32_t mask, i;
    if (x->first_terms) {
        int same = PyObject_RichCompareBool(x->first_terms, masked, Py_EQ);
        if (same)
            return same > 0 ? x->first_next : NULL;
    }
    if (!x->memo_cap || (h = PyObject_Hash(masked)) == -1)
        return NULL;
    mask = x->memo_cap - 1;
    for (i = (int32_t)((uint64_t)h & (uint64_t)mask); x->memo[i].terms; i = (i + 1) & mask)
        if (x->memo[i].hash == h) {
            int same = PyObject_RichCompareBool(x->memo[i].terms, masked, Py_EQ);
            if (same)
                return same > 0 ? x->memo[i].result : NULL;
        }
    return NULL;
}

/* Put (terms, h) -> result in a memo table with a free slot (takes the reference to terms). */
static void memo_insert(MemoEntry *memo, int32_t cap, PyObject *terms, Py_hash_t h, PyObject *result)
{
    int32_t i = (int32_t)((uint64_t)h & (uint64_t)(cap - 1));
    while (memo[i].terms)
        i = (i + 1) & (cap - 1);
    memo[i].terms = terms;
    memo[i].hash = h;
    memo[i].result = result;
}

/* Record masked -> found (a node or Py_None, borrowed) in the advance memo: the first entry inline,
 * later ones in the table. 0, or -1 with an exception. */
static int next_put(NodeObject *x, PyObject *masked, PyObject *found)
{
    Py_hash_t h;
    if (!x->first_terms) {
        Py_INCREF(masked);
        x->first_terms = masked;
        x->first_next = found;
        return 0;
    }
    if ((h = PyObject_Hash(masked)) == -1)
        return -1;
    if (2 * (x->memo_n + 1) > x->memo_cap) {
        int32_t cap = x->memo_cap ? 2 * x->memo_cap : 4;
        MemoEntry *grown = calloc((size_t)cap, sizeof(MemoEntry));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        for (int32_t k = 0; k < x->memo_cap; k++)
            if (x->memo[k].terms)
                memo_insert(grown, cap, x->memo[k].terms, x->memo[k].hash, x->memo[k].result);
        free(x->memo);
        x->memo = grown;
        x->memo_cap = cap;
    }
    Py_INCREF(masked);
    memo_insert(x->memo, x->memo_cap, masked, h, found);
    x->memo_n++;
    return 0;
}

static PyObject *node_probe_masked(NodeObject *x, PyObject *masked)
{
    CoreObject *c = core_of(x);
    PyObject *found;
    Py_hash_t h;
    int error;
    uint64_t stack[16], *terms;
    found = next_get(x, masked);
    if (found) {
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred())
        return NULL;
    h = probe_hash(x, masked);
    if (h == -1)
        return NULL;
    found = probe_get(c, x, masked, h, &error);
    if (error)
        return NULL;
    if (found) {
        Py_INCREF(found);
        return found;
    }
    terms = c->W <= 16 ? stack : malloc(sizeof(uint64_t) * (size_t)c->W);
    if (!terms)
        return PyErr_NoMemory();
    found = int_to_words(masked, terms, c->W) < 0 ? NULL : advance_node(c, x, terms);
    if (terms != stack)
        free(terms);
    if (!found)
        return NULL;
    probe_put(c, x, masked, found, h);
    return found;
}

static PyObject *Node_probe(NodeObject *x, PyObject *terminals)
{
    PyObject *masked, *found;
    if (!(masked = masked_terminals(x, terminals)))
        return NULL;
    if (!PyObject_IsTrue(masked)) {
        Py_DECREF(masked);
        Py_RETURN_NONE;
    }
    found = node_probe_masked(x, masked);
    Py_DECREF(masked);
    return found;
}

static PyObject *Node_advance(NodeObject *x, PyObject *terminals)
{
    PyObject *masked, *found;
    if (!(masked = masked_terminals(x, terminals)))
        return NULL;
    found = next_get(x, masked);
    if (found || PyErr_Occurred()) {
        Py_XINCREF(found);
        Py_DECREF(masked);
        return found;
    }
    if (PyObject_IsTrue(masked))
        found = node_probe_masked(x, masked);
    else {
        found = Py_None;
        Py_INCREF(found);
    }
    if (found && next_put(x, masked, found) < 0)
        Py_CLEAR(found);
    Py_DECREF(masked);
    return found;
}

static PyObject *Node_get_kernel(NodeObject *x, void *closure)
{
    PyObject *items = PyList_New(x->n_items), *kernel;
    if (!items)
        return NULL;
    for (int32_t i = 0; i < x->n_items; i++) {
        PyObject *item = Py_BuildValue("(LO)", (long long)x->items[i].pos, (PyObject *)x->items[i].origin);
        if (!item) {
            Py_DECREF(items);
            return NULL;
        }
        PyList_SET_ITEM(items, i, item);
    }
    kernel = PyFrozenSet_New(items);
    Py_DECREF(items);
    return kernel;
}

static PyObject *Node_get_allowed(NodeObject *x, void *closure)
{
    if (!x->allowed)
        return PyLong_FromLong(0);
    Py_INCREF(x->allowed);
    return x->allowed;
}

static PyObject *Node_get_accepting(NodeObject *x, void *closure)
{
    return PyBool_FromLong(x->accepting);
}

static PyObject *Node_get_cache(NodeObject *x, void *closure)
{
    if (!x->cache && !(x->cache = PyDict_New()))
        return NULL;
    Py_INCREF(x->cache);
    return x->cache;
}

static PyObject *Node_repr(NodeObject *x)
{
    return PyUnicode_FromFormat("<Node %d kernel items, allowed=%R>", (int)x->n_items,
                                x->allowed ? x->allowed : Py_None);
}

/* Only the arena's reference ends a node (a sweep or the core's clear): what it points to in the
 * arena is borrowed, so only its own memory and its references go. */
static void Node_dealloc(NodeObject *x)
{
    free(x->items);
    free(x->leo);
    Py_XDECREF(x->first_terms);
    for (int32_t i = 0; i < x->memo_cap; i++)
        Py_XDECREF(x->memo[i].terms);
    free(x->memo);
    Py_XDECREF(x->cache);
    Py_XDECREF(x->allowed);
    Py_XDECREF(x->core);
    Py_TYPE(x)->tp_free((PyObject *)x);
}

static PyMethodDef Node_methods[] = {
    {"advance", (PyCFunction)Node_advance, METH_O,
     "The node after scanning a lexeme that matched `terminals` (a bitmask); None if dead. Memoised on the node."},
    {"probe", (PyCFunction)Node_probe, METH_O,
     "`advance` remembered only among the parser's recent probes, not on the node: for masks."},
    {NULL}};

static PyGetSetDef Node_getset[] = {
    {"kernel", (getter)Node_get_kernel, NULL, "The kernel items, a frozenset of (position, origin node).", NULL},
    {"allowed", (getter)Node_get_allowed, NULL, "The terminals this node can scan (a bitmask).", NULL},
    {"accepting", (getter)Node_get_accepting, NULL, "Whether the text read so far is a sentence.", NULL},
    {"cache", (getter)Node_get_cache, NULL, "A dict for the mask layer's memos (pda.masks).", NULL},
    {NULL}};

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pda.kernels._earley.Node",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An interned Earley item set: the parser's configuration at one position (made by a Core).",
    .tp_dealloc = (destructor)Node_dealloc,
    .tp_repr = (reprfunc)Node_repr,
    .tp_methods = Node_methods,
    .tp_getset = Node_getset,
};

/* ---------------------------------------------------------------- Core */

/* A copy of a 1-d buffer of `itemsize` bytes per entry; *n gets its length. NULL with an exception. */
static void *copy_buffer(PyObject *obj, const char *name, Py_ssize_t itemsize, Py_ssize_t *n)
{
    Py_buffer view;
    void *copy;
    if (PyBytes_CheckExact(obj)) { /* the entries' raw bytes, as pda.kernels.tables lays them out */
        Py_ssize_t len = PyBytes_GET_SIZE(obj);
        if (len % itemsize != 0) {
            PyErr_Format(PyExc_ValueError, "%s must hold whole %zd-byte entries", name, itemsize);
            return NULL;
        }
        if ((copy = malloc((size_t)(len ? len : 1))) == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(copy, PyBytes_AS_STRING(obj), (size_t)len);
        *n = len / itemsize;
        return copy;
    }
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (view.itemsize != itemsize || view.ndim != 1) {
        PyErr_Format(PyExc_ValueError, "%s must be 1-dimensional with %zd-byte entries", name, itemsize);
        PyBuffer_Release(&view);
        return NULL;
    }
    copy = malloc((size_t)(view.len ? view.len : 1));
    if (!copy) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(copy, view.buf, (size_t)view.len);
    *n = view.len / itemsize;
    PyBuffer_Release(&view);
    return copy;
}

static int check_csr(const int32_t *ptr, Py_ssize_t n_ptr, Py_ssize_t rows, const int32_t *to, Py_ssize_t n_to,
                     int32_t lo, int32_t hi, const char *name)
{
    if (n_ptr != rows + 1 || ptr[0] != 0 || ptr[rows] != n_to) {
        PyErr_Format(PyExc_ValueError, "%s: pointer array does not match its rows or entries", name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < rows; i++)
        if (ptr[i + 1] < ptr[i]) {
            PyErr_Format(PyExc_ValueError, "%s: pointers must not decrease", name);
            return -1;
        }
    for (Py_ssize_t i = 0; i < n_to; i++)
        if (to[i] < lo || to[i] >= hi) {
            PyErr_Format(PyExc_ValueError, "%s: entry %zd out of range", name, i);
            return -1;
        }
    return 0;
}

static void Core_free_tables(CoreObject *c)
{
    free(c->next_sym);
    free(c->lhs_of);
    free(c->step_ptr);
    free(c->step_to);
    free(c->closure_ptr);
    free(c->closure);
    free(c->starts_ptr);
    free(c->starts);
    free(c->is_end);
    free(c->penult);
    for (int32_t i = 0; i < c->n_preds; i++) {
        free(c->preds[i].seeds);
        free(c->preds[i].allowed);
        free_groups(&c->preds[i].scan);
        free_groups(&c->preds[i].waiting);
    }
    free(c->preds);
    free(c->pred_slots);
    free(c->arena);
    free(c->slots);
    free(c->probes);
    free(c->probe_buckets);
    free(c->items);
    free(c->set_slots);
    free(c->set_stamp);
    free(c->complete);
    free(c->nt_mark);
}

static PyObject *Core_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"n_terminals", "next_sym", "lhs_of", "is_end", "penultimate", "step_ptr", "step_to",
                            "closure_ptr", "closure", "starts_ptr", "starts", "accept_pos", "max_items",
                            "max_work", "max_seconds", "recent_probes", "error", NULL};
    int T, accept_pos, recent;
    long long max_items, max_work;
    double max_seconds;
    PyObject *a_next, *a_lhs, *a_end, *a_pen, *a_sp, *a_st, *a_cp, *a_c, *a_rp, *a_r, *error;
    Py_ssize_t P, n, n_sp, n_st, n_cp, n_c, n_rp, n_r;
    CoreObject *c;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOOOOOOOOOiLLdiO", names, &T, &a_next, &a_lhs, &a_end, &a_pen,
                                     &a_sp, &a_st, &a_cp, &a_c, &a_rp, &a_r, &accept_pos, &max_items, &max_work,
                                     &max_seconds, &recent, &error))
        return NULL;
    if (T < 0 || recent < 1 || recent > (1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "n_terminals must be >= 0 and recent_probes in [1, 2**24]");
        return NULL;
    }
    if (!PyType_Check(error) || !PyType_IsSubtype((PyTypeObject *)error, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "error must be an exception class");
        return NULL;
    }
    c = (CoreObject *)type->tp_alloc(type, 0);
    if (!c)
        return NULL;
    c->probe_head = c->probe_tail = -1;
    c->sweep_at = SWEEP_MIN_NODES;
    c->T = T;
    if (!(c->next_sym = copy_buffer(a_next, "next_sym", 4, &P)) || !(c->lhs_of = copy_buffer(a_lhs, "lhs_of", 4, &n))
        || n != P || !(c->is_end = copy_buffer(a_end, "is_end", 1, &n)) || n != P
        || !(c->penult = copy_buffer(a_pen, "penultimate", 1, &n)) || n != P
        || !(c->step_ptr = copy_buffer(a_sp, "step_ptr", 4, &n_sp)) || !(c->step_to = copy_buffer(a_st, "step_to", 4, &n_st))
        || !(c->closure_ptr = copy_buffer(a_cp, "closure_ptr", 4, &n_cp))
        || !(c->closure = copy_buffer(a_c, "closure", 4, &n_c))
        || !(c->starts_ptr = copy_buffer(a_rp, "starts_ptr", 4, &n_rp))
        || !(c->starts = copy_buffer(a_r, "starts", 4, &n_r))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "next_sym, lhs_of, is_end and penultimate must have one entry a position");
        Py_DECREF(c);
        return NULL;
    }
    c->P = (int32_t)P;
    c->N = (int32_t)(n_cp - 1);
    if (n_cp < 1 || n_rp != n_cp || P > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "closure_ptr and starts_ptr must have one entry a nonterminal, plus one");
        Py_DECREF(c);
        return NULL;
    }
    if (check_csr(c->step_ptr, n_sp, P, c->step_to, n_st, 0, (int32_t)P, "step") < 0
        || check_csr(c->closure_ptr, n_cp, c->N, c->closure, n_c, T, T + c->N, "closure") < 0
        || check_csr(c->starts_ptr, n_rp, c->N, c->starts, n_r, 0, (int32_t)P, "starts") < 0) {
        Py_DECREF(c);
        return NULL;
    }
    for (Py_ssize_t p = 0; p < P; p++)
        if (c->next_sym[p] < -1 || c->next_sym[p] >= T + c->N || c->lhs_of[p] < T || c->lhs_of[p] >= T + c->N) {
            PyErr_Format(PyExc_ValueError, "next_sym or lhs_of of position %zd out of range", p);
            Py_DECREF(c);
            return NULL;
        }
    if (accept_pos < 0 || accept_pos >= P) {
        PyErr_SetString(PyExc_ValueError, "accept_pos out of range");
        Py_DECREF(c);
        return NULL;
    }
    c->accept_pos = accept_pos;
    c->W = (T + 63) / 64;
    c->max_items = max_items;
    c->max_work = max_work;
    c->max_seconds = max_seconds;
    Py_INCREF(error);
    c->error = error;
    c->n_pred_slots = 64;
    c->pred_slots = malloc(sizeof(int32_t) * 64);
    c->n_slots = 1024;
    c->slots = calloc(1024, sizeof(NodeObject *));
    c->probe_cap = 1;
    while (c->probe_cap < recent)
        c->probe_cap *= 2;
    c->probes = malloc(sizeof(ProbeEntry) * (size_t)c->probe_cap);
    c->probe_buckets = malloc(sizeof(int32_t) * (size_t)c->probe_cap);
    c->cap_items = 256;
    c->items = malloc(sizeof(Item) * 256);
    c->n_set_slots = 512;
    c->set_slots = malloc(sizeof(int32_t) * 512);
    c->set_stamp = calloc(512, sizeof(uint32_t));
    c->cap_complete = 256;
    c->complete = malloc(sizeof(int64_t) * 256);
    c->nt_mark = calloc((size_t)(c->N ? c->N : 1), 1);
    if (!c->pred_slots || !c->slots || !c->probes || !c->probe_buckets || !c->items || !c->set_slots
        || !c->set_stamp || !c->complete || !c->nt_mark) {
        Py_DECREF(c);
        return PyErr_NoMemory();
    }
    memset(c->pred_slots, 0xff, sizeof(int32_t) * 64);
    memset(c->probe_buckets, 0xff, sizeof(int32_t) * (size_t)c->probe_cap);
    /* The table holds `recent` entries at most, handed out in order as probes are first remembered (a core
     * that probes little never touches the rest: a small grammar's compile wrote all 2,048, ~100 KiB), then
     * through the free list `chain` as `clear_probes` returns them. */
    c->probe_free = -1;
    c->probe_made = 0;
    c->probe_max = recent;
    return (PyObject *)c;
}

static PyObject *Core_root(CoreObject *c, PyObject *seed)
{
    long sym = PyLong_AsLong(seed);
    int32_t s;
    Item *items;
    if (sym == -1 && PyErr_Occurred())
        return NULL;
    if (sym < c->T || sym >= c->T + c->N) {
        PyErr_SetString(PyExc_ValueError, "the root's seed must be a nonterminal");
        return NULL;
    }
    s = (int32_t)sym;
    items = malloc(sizeof(Item));
    if (!items)
        return PyErr_NoMemory();
    /* the root's kernel is empty and it is not interned; its prediction is the seed's. It enters the arena
     * when first stepped: a core whose root was never stepped is freed by reference counting alone. */
    return (PyObject *)new_node(c, items, 0, hash_items(items, 0), prediction_for(c, &s, 1), 0);
}

static PyObject *Core_stats(CoreObject *c, PyObject *unused)
{
    if (sweep(c, NULL) < 0)
        return NULL;
    return Py_BuildValue("{s:L,s:i,s:i}", "nodes", (long long)c->n_used, "predictions", (int)c->n_preds,
                         "probes", (int)c->n_probes);
}

static PyObject *Core_clear_probes(CoreObject *c, PyObject *unused)
{
    probe_clear(c);
    if (sweep(c, NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The collector sees the core, not its nodes: each node only the arena holds reports its reference to
 * the core as the core's own (the core "visits itself"), so the core is garbage exactly when no other
 * object holds it or one of its nodes; the nodes' caches are visited as the core's. */
static int Core_traverse(CoreObject *c, visitproc visit, void *arg)
{
    Py_VISIT(c->error);
    for (int64_t i = 0; i < c->n_arena; i++) {
        NodeObject *x = c->arena[i];
        Py_VISIT(x->cache);
        if (Py_REFCNT(x) == 1)
            Py_VISIT((PyObject *)c);
    }
    return 0;
}

/* Free every node (the collector found the core unreachable, or it is deallocated): out of the
 * intern table and the probe memo first, then the arena's references go. */
static int Core_clear(CoreObject *c)
{
    NodeObject **arena = c->arena;
    int64_t n = c->n_arena;
    if (c->probes)
        probe_clear(c);
    if (c->slots)
        for (int64_t i = 0; i < c->n_slots; i++) {
            if (c->slots[i] && c->slots[i] != TOMB)
                c->slots[i]->interned = 0;
            c->slots[i] = NULL;
        }
    c->n_used = c->n_filled = 0;
    c->arena = NULL;
    c->n_arena = c->cap_arena = 0;
    for (int64_t i = 0; i < n; i++)
        Py_DECREF(arena[i]);
    free(arena);
    Py_CLEAR(c->error);
    return 0;
}

static void Core_dealloc(CoreObject *c)
{
    PyObject_GC_UnTrack(c);
    Core_clear(c);
    Core_free_tables(c);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef Core_methods[] = {
    {"root", (PyCFunction)Core_root, METH_O, "A new root node: empty kernel, predicting the given nonterminal."},
    {"stats", (PyCFunction)Core_stats, METH_NOARGS, "Counts: live interned nodes, predictions, remembered probes."},
    {"clear_probes", (PyCFunction)Core_clear_probes, METH_NOARGS, "Forget the remembered probes."},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pda.kernels._earley.Core",
    .tp_basicsize = sizeof(CoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One grammar's Earley tables, predictions, node intern table and probe memo.",
    .tp_new = Core_new,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_earley",
                                    "The Earley parser's nodes and step, compiled (see pda/kernels/earley.py).", -1,
                                    NULL};

PyMODINIT_FUNC PyInit__earley(void)
{
    PyObject *m;
    if (PyType_Ready(&NodeType) < 0 || PyType_Ready(&CoreType) < 0)
        return NULL;
    m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&NodeType);
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Node", (PyObject *)&NodeType) < 0 || PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0
        || PyModule_AddIntConstant(m, "CLOCK_EVERY_WORK", CLOCK_EVERY_WORK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

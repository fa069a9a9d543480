/* pda.kernels._partition: the coarsest stable partition of a partial DFA (Hopcroft's algorithm).
 *
 * Written against the plain Python C API and the buffer protocol, like _walk.c;
 * pda/kernels/partition.py is the Python side and documents the interface.
 *
 * refine(trans, blocks, out)
 *     trans: int64 [m, k], C-contiguous; trans[q, c] is q's successor on class c, or -1
 *     for none. blocks: int64 [m], the initial block of each state (any ids in [0, m)).
 *     out: writable int64 [m]; receives a block id per state of the coarsest partition
 *     that refines `blocks` and is stable (two states of one block have, per class,
 *     successors in one block or both none). Ids are 0..n_blocks-1 in no set order.
 *     Returns the number of blocks. trans has fewer than 2^31 entries (ValueError), so
 *     that the per-edge arrays hold 32-bit states and classes.
 *
 * coaccessible(trans, good)
 *     trans as above; good: writable uint8 [m], 1 at the accepting states on entry, and on
 *     return 1 at every state from which one of them is reachable (minimisation's trim).
 *     Backwards from the accepting states over an incoming-edge CSR: O(m k), no GIL;
 *     trans has fewer than 2^31 entries (ValueError).
 *
 * row_groups(table, rows, group, first)
 *     table: int64 [k, m], C-contiguous (a byte DFA's transition table transposed: one row
 *     per column); rows: int64 [c], indices of table rows (a byte -> column map); group,
 *     first: writable int64 [c]. Numbers the distinct rows among table[rows[i]] by first
 *     appearance in `rows`: group[i] is that of rows[i], first[g] a table row of group g.
 *     Returns the number of groups (the byte classes of a DFA, numbered by their lowest
 *     byte). Rows are hashed and compared in full on a hash match: O(k m + c), no GIL.
 *
 * column_groups(table, columns, group, first)
 *     row_groups(table.T, columns, group, first) without the transposed copy: table is
 *     int64 [m, k], C-contiguous (a DFA's transition table itself), columns int64 [c] its
 *     column indices. Every column is hashed in one row-major pass, columns are grouped by
 *     hash, and one more row-major pass checks each column equals its group's first (on a
 *     hash collision the columns are compared one by one instead). O(m (k + c)), no GIL.
 *
 * minimal(trans, accept, classes, settled) -> (n, n_classes, byte_class, table, accepting)
 *     One terminal's partial DFA (trans as above, int64 or int32 [m, k], state 0 its start, every state reachable from it;
 *     accept: uint8 [m]; classes: int64 [256], the column of trans each byte reads) made minimal and
 *     complete in one call, exactly as `pda.regex.dfa._minimise` then `_finish` make it: trimmed to the
 *     start and the states that reach an accepting one; partitioned (as `refine`, from the accepting
 *     and the other states); the blocks numbered by their first state, each block's first state
 *     standing for it; the byte classes, the distinct columns that the bytes read numbered by their
 *     lowest byte; the dead state n last, where every missing transition goes. Returns n (the states
 *     without dead), the number of byte classes and, as bytes, byte_class int32 [256], table int32
 *     [n + 1, n_classes] and accepting uint8 [n + 1] (dead: 0). Checks its inputs (ValueError),
 *     runs without the GIL. settled (a bool): the caller knows the DFA to be trimmed and minimal
 *     already (`pda.regex.compose.Classed.minimal_acyclic`), so each state is its own block, numbered
 *     as it is: the trim and the partition, most of the work, are skipped.
 *
 * Method, for an acyclic DFA (a counted string, a bounded number: most DFAs minimised here): one
 * depth-first search over the outgoing edges finishes each state after all its successors, and
 * a finished state's block is found by hashing its initial block and its successors' blocks
 * (the largest bisimulation of an acyclic graph, bottom up; Revuz's method): O(m k). The
 * search gives up at the first cycle, and then:
 * Hopcroft's "process the smaller half" refinement over a refinable partition
 * (Valmari and Lehtinen's layout): the states of a block are contiguous in `elems`,
 * and marking a state moves it to the front of its block, so a split is O(marked).
 * Per splitter block the predecessors of its states are gathered from an incoming-edge
 * CSR and bucketed by class. Time O(m k log m), memory O(m k) (12 bytes an edge). Every
 * index read from the inputs is checked first (ValueError), and the work runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The hash of a row of ints (row and column groups, acyclic blocks), a step per int. */
#define HASH_SEED 0x9E3779B97F4A7C15ULL

static inline uint64_t hash_step(uint64_t h, int64_t x)
{
    h ^= (uint64_t)x;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

typedef struct {
    int64_t m, k;
    const int64_t *trans;
    /* incoming edges by target: in_ptr[q]..in_ptr[q+1] index in_cls/in_src (32-bit: the
     * per-edge arrays are most of the memory, and `refine` takes fewer than 2^31 entries) */
    int64_t *in_ptr;
    int32_t *in_cls, *in_src;
    /* the refinable partition */
    int64_t *elems, *loc, *block_of, *first, *end, *mid;
    int64_t n_blocks;
    /* work stack of blocks, and which blocks are on it */
    int64_t *work, n_work;
    unsigned char *in_work;
    /* per splitter: its predecessors bucketed by class */
    int32_t *bucket_src;
    int64_t *count, *start, *classes_seen;
    /* blocks touched while marking one class's predecessors */
    int64_t *touched;
} Refiner;

static void free_refiner(Refiner *r)
{
    free(r->in_ptr); free(r->in_cls); free(r->in_src);
    free(r->elems); free(r->loc); free(r->block_of); free(r->first); free(r->end); free(r->mid);
    free(r->work); free(r->in_work);
    free(r->bucket_src); free(r->count); free(r->start);
    free(r->classes_seen); free(r->touched);
}

/* Allocate and fill everything but the refinement itself; -1 on memory failure. */
static int prepare(Refiner *r, const int64_t *blocks)
{
    int64_t m = r->m, k = r->k, q, c, e, b, n_edges = 0;
    const int64_t *trans = r->trans;
    for (q = 0; q < m * k; q++)
        n_edges += trans[q] >= 0;
    r->in_ptr = calloc((size_t)m + 1, sizeof(int64_t));
    r->in_cls = malloc(((size_t)n_edges + 1) * sizeof(int32_t));
    r->in_src = malloc(((size_t)n_edges + 1) * sizeof(int32_t));
    r->elems = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->loc = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->block_of = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->first = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->end = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->mid = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->work = malloc(((size_t)m + 1) * sizeof(int64_t));
    r->in_work = calloc((size_t)m + 1, 1);
    r->bucket_src = malloc(((size_t)n_edges + 1) * sizeof(int32_t));
    r->count = calloc((size_t)k + 1, sizeof(int64_t));
    r->start = malloc(((size_t)k + 1) * sizeof(int64_t));
    r->classes_seen = malloc(((size_t)k + 1) * sizeof(int64_t));
    r->touched = malloc(((size_t)m + 1) * sizeof(int64_t));
    if (!r->in_ptr || !r->in_cls || !r->in_src || !r->elems || !r->loc || !r->block_of || !r->first || !r->end
        || !r->mid || !r->work || !r->in_work || !r->bucket_src || !r->count
        || !r->start || !r->classes_seen || !r->touched)
        return -1;
    /* incoming CSR: count per target, prefix sums, fill */
    for (q = 0; q < m * k; q++)
        if (trans[q] >= 0)
            r->in_ptr[trans[q] + 1]++;
    for (q = 0; q < m; q++)
        r->in_ptr[q + 1] += r->in_ptr[q];
    {
        int64_t *fill = r->mid; /* scratch: next free slot per target */
        memcpy(fill, r->in_ptr, (size_t)m * sizeof(int64_t));
        for (q = 0; q < m; q++)
            for (c = 0; c < k; c++) {
                int64_t t = trans[q * k + c];
                if (t >= 0) {
                    e = fill[t]++;
                    r->in_cls[e] = (int32_t)c;
                    r->in_src[e] = (int32_t)q;
                }
            }
    }
    /* the initial partition: renumber the given ids densely, then lay blocks out contiguously */
    {
        int64_t *dense = r->touched; /* scratch: given id -> dense id, -1 unseen */
        for (q = 0; q < m; q++)
            dense[q] = -1;
        r->n_blocks = 0;
        for (q = 0; q < m; q++) {
            if (dense[blocks[q]] < 0)
                dense[blocks[q]] = r->n_blocks++;
            r->block_of[q] = dense[blocks[q]];
        }
        for (b = 0; b < r->n_blocks; b++)
            r->end[b] = 0;
        for (q = 0; q < m; q++)
            r->end[r->block_of[q]]++;
        e = 0;
        for (b = 0; b < r->n_blocks; b++) {
            r->first[b] = e;
            e += r->end[b];
            r->end[b] = r->first[b];
        }
        for (q = 0; q < m; q++) {
            b = r->block_of[q];
            r->loc[q] = r->end[b];
            r->elems[r->end[b]++] = q;
        }
        for (b = 0; b < r->n_blocks; b++)
            r->mid[b] = r->first[b];
    }
    r->n_work = 0;
    for (b = 0; b < r->n_blocks; b++) {
        r->work[r->n_work++] = b;
        r->in_work[b] = 1;
    }
    return 0;
}

/* Move state p to the marked front part of its block; returns whether its block was untouched. */
static inline int mark(Refiner *r, int64_t p)
{
    int64_t b = r->block_of[p], i = r->loc[p], j = r->mid[b];
    int fresh = j == r->first[b];
    if (i >= j) { /* not marked yet: swap it to position mid */
        int64_t other = r->elems[j];
        r->elems[j] = p;
        r->loc[p] = j;
        r->elems[i] = other;
        r->loc[other] = i;
        r->mid[b] = j + 1;
    }
    return fresh;
}

static void refine_all(Refiner *r)
{
    while (r->n_work > 0) {
        int64_t a = r->work[--r->n_work], n_seen = 0, i, e, s;
        r->in_work[a] = 0;
        /* the splitter's predecessors bucketed by class: a counting sort over the classes met,
         * reading the splitter's incoming edges twice (count, then place) */
        for (i = r->first[a]; i < r->end[a]; i++) {
            int64_t q = r->elems[i];
            for (e = r->in_ptr[q]; e < r->in_ptr[q + 1]; e++)
                if (r->count[r->in_cls[e]]++ == 0)
                    r->classes_seen[n_seen++] = r->in_cls[e];
        }
        e = 0;
        for (s = 0; s < n_seen; s++) {
            r->start[r->classes_seen[s]] = e;
            e += r->count[r->classes_seen[s]];
        }
        for (i = r->first[a]; i < r->end[a]; i++) {
            int64_t q = r->elems[i];
            for (e = r->in_ptr[q]; e < r->in_ptr[q + 1]; e++)
                r->bucket_src[r->start[r->in_cls[e]]++] = r->in_src[e];
        }
        e = 0;
        for (s = 0; s < n_seen; s++) {
            int64_t c = r->classes_seen[s], lo = e, hi = e + r->count[c], n_touched = 0, t;
            e = hi;
            r->count[c] = 0;
            for (i = lo; i < hi; i++)
                if (mark(r, r->bucket_src[i]))
                    r->touched[n_touched++] = r->block_of[r->bucket_src[i]];
            for (t = 0; t < n_touched; t++) {
                int64_t y = r->touched[t], z, j;
                if (r->mid[y] == r->end[y]) { /* every state of y was marked: no split */
                    r->mid[y] = r->first[y];
                    continue;
                }
                /* the marked part [first, mid) becomes block z; y keeps [mid, end) */
                z = r->n_blocks++;
                r->first[z] = r->first[y];
                r->end[z] = r->mid[y];
                r->mid[z] = r->first[z];
                r->first[y] = r->mid[y];
                for (j = r->first[z]; j < r->end[z]; j++)
                    r->block_of[r->elems[j]] = z;
                if (r->in_work[y] || r->end[z] - r->first[z] <= r->end[y] - r->first[y]) {
                    r->work[r->n_work++] = z;
                    r->in_work[z] = 1;
                } else {
                    r->work[r->n_work++] = y;
                    r->in_work[y] = 1;
                }
            }
        }
    }
}

/* The coarsest stable partition of an acyclic DFA (see Method): block ids in out, numbered in
 * the order the search finishes a new block. Returns the number of blocks, -2 when the DFA has
 * a cycle (out is then garbage), -1 on memory failure. */
static int64_t acyclic_partition(const int64_t *trans, int64_t m, int64_t k, const int64_t *blocks, int64_t *out)
{
    int64_t size = 16, n_blocks = 0, root, i;
    while (size < 2 * m)
        size *= 2;
    /* per state: 0 unseen, 1 on the search path, 2 finished; the next column to follow */
    unsigned char *color = calloc((size_t)(m ? m : 1), 1);
    int64_t *next = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    uint64_t *partial = malloc((size_t)(m ? m : 1) * sizeof(uint64_t)); /* a state's hash so far */
    int64_t *path = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    int64_t *first = malloc((size_t)(m ? m : 1) * sizeof(int64_t)); /* a state of each block */
    uint64_t *hash_of = malloc((size_t)(m ? m : 1) * sizeof(uint64_t)); /* of each block */
    int64_t *slots = malloc((size_t)size * sizeof(int64_t));
    if (!color || !next || !partial || !path || !first || !hash_of || !slots) {
        free(color); free(next); free(partial); free(path); free(first); free(hash_of); free(slots);
        return -1;
    }
    for (i = 0; i < size; i++)
        slots[i] = -1;
    for (root = 0; root < m && n_blocks >= 0; root++) {
        int64_t depth = 0;
        if (color[root])
            continue;
        path[depth++] = root;
        color[root] = 1;
        next[root] = 0;
        partial[root] = hash_step(HASH_SEED, blocks[root]);
        while (depth > 0) {
            /* q's hash takes in its (initial block, successors' blocks) column by column, up to
             * the first successor not finished yet */
            int64_t q = path[depth - 1], c = next[q];
            const int64_t *row = trans + q * k;
            uint64_t h = partial[q];
            for (; c < k; c++) {
                int64_t t = row[c];
                if (t >= 0 && color[t] != 2)
                    break;
                h = hash_step(h, t < 0 ? -1 : out[t]);
            }
            if (c < k) { /* descend into that successor, or meet the path again: a cycle */
                int64_t t = row[c];
                next[q] = c;
                partial[q] = h;
                if (color[t] == 1) {
                    n_blocks = -2;
                    break;
                }
                color[t] = 1;
                next[t] = 0;
                partial[t] = hash_step(HASH_SEED, blocks[t]);
                path[depth++] = t;
                continue;
            }
            /* every successor is finished: q joins the block of equal (initial block, successors' blocks) */
            int64_t slot = (int64_t)(h & (uint64_t)(size - 1)), b;
            for (;; slot = (slot + 1) & (size - 1)) {
                b = slots[slot];
                if (b < 0) {
                    b = slots[slot] = n_blocks++;
                    first[b] = q;
                    hash_of[b] = h;
                    break;
                }
                if (hash_of[b] == h && blocks[first[b]] == blocks[q]) {
                    const int64_t *other = trans + first[b] * k;
                    for (c = 0; c < k; c++)
                        if ((row[c] < 0 ? -1 : out[row[c]]) != (other[c] < 0 ? -1 : out[other[c]]))
                            break;
                    if (c == k)
                        break;
                }
            }
            out[q] = b;
            color[q] = 2;
            depth--;
        }
    }
    free(color); free(next); free(partial); free(path); free(first); free(hash_of); free(slots);
    return n_blocks;
}

static int get_int64(PyObject *obj, Py_buffer *view, int flags, const char *name)
{
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *f = view->format;
    if (f && (*f == '<' || *f == '=' || *f == '@'))
        f++;
    if (view->itemsize != 8 || f == NULL || (strcmp(f, "q") != 0 && strcmp(f, "l") != 0)) {
        PyErr_Format(PyExc_ValueError, "%s must be an int64 array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *refine(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, bv, ov;
    Refiner r;
    int64_t m, k, i, n_blocks;
    int failed = 0;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "refine(trans, blocks, out) takes 3 arguments");
        return NULL;
    }
    if (get_int64(args[0], &tv, PyBUF_ND, "trans") < 0)
        return NULL;
    if (tv.ndim != 2) {
        PyBuffer_Release(&tv);
        PyErr_SetString(PyExc_ValueError, "trans must be 2-dimensional");
        return NULL;
    }
    m = tv.shape[0];
    k = tv.shape[1];
    if (get_int64(args[1], &bv, PyBUF_ND, "blocks") < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (get_int64(args[2], &ov, PyBUF_ND | PyBUF_WRITABLE, "out") < 0) {
        PyBuffer_Release(&tv);
        PyBuffer_Release(&bv);
        return NULL;
    }
    if (bv.len != m * 8 || ov.len != m * 8) {
        PyErr_SetString(PyExc_ValueError, "blocks and out must have one entry per state");
        failed = 1;
    } else if (m * k >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "trans must have fewer than 2^31 entries");
        failed = 1;
    }
    const int64_t *trans = tv.buf, *blocks = bv.buf;
    for (i = 0; !failed && i < m * k; i++)
        if (trans[i] < -1 || trans[i] >= m) {
            PyErr_Format(PyExc_ValueError, "trans holds %lld, not a state or -1", (long long)trans[i]);
            failed = 1;
        }
    for (i = 0; !failed && i < m; i++)
        if (blocks[i] < 0 || blocks[i] >= m) {
            PyErr_Format(PyExc_ValueError, "blocks holds %lld, outside [0, %lld)", (long long)blocks[i], (long long)m);
            failed = 1;
        }
    if (failed) {
        PyBuffer_Release(&tv);
        PyBuffer_Release(&bv);
        PyBuffer_Release(&ov);
        return NULL;
    }
    memset(&r, 0, sizeof r);
    r.m = m;
    r.k = k;
    r.trans = trans;
    Py_BEGIN_ALLOW_THREADS
    n_blocks = acyclic_partition(trans, m, k, blocks, ov.buf);
    if (n_blocks == -1)
        failed = 1;
    else if (n_blocks == -2) { /* a cycle: Hopcroft */
        if (prepare(&r, blocks) < 0)
            failed = 1;
        else {
            refine_all(&r);
            memcpy(ov.buf, r.block_of, (size_t)m * sizeof(int64_t));
        }
        n_blocks = r.n_blocks;
    }
    Py_END_ALLOW_THREADS
    free_refiner(&r);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&ov);
    if (failed)
        return PyErr_NoMemory();
    return PyLong_FromLongLong((long long)n_blocks);
}

/* good[q] |= some state with good set is reachable from q; -1 on memory failure. */
static int mark_coaccessible(const int64_t *trans, int64_t m, int64_t k, unsigned char *good)
{
    int64_t q, c, i, n_edges = 0, head = 0, tail = 0;
    int64_t *ptr = calloc((size_t)m + 1, sizeof(int64_t));
    int64_t *fill = NULL, *queue = NULL;
    int32_t *src = NULL; /* 32-bit: `coaccessible` takes fewer than 2^31 entries */
    for (i = 0; i < m * k; i++)
        n_edges += trans[i] >= 0;
    src = malloc((size_t)(n_edges ? n_edges : 1) * sizeof(int32_t));
    fill = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    queue = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    if (!ptr || !src || !fill || !queue) {
        free(ptr); free(src); free(fill); free(queue);
        return -1;
    }
    for (i = 0; i < m * k; i++)
        if (trans[i] >= 0)
            ptr[trans[i] + 1]++;
    for (q = 0; q < m; q++) {
        ptr[q + 1] += ptr[q];
        fill[q] = ptr[q];
    }
    for (q = 0; q < m; q++)
        for (c = 0; c < k; c++)
            if (trans[q * k + c] >= 0)
                src[fill[trans[q * k + c]]++] = (int32_t)q;
    for (q = 0; q < m; q++)
        if (good[q])
            queue[tail++] = q;
    while (head < tail) {
        q = queue[head++];
        for (i = ptr[q]; i < ptr[q + 1]; i++)
            if (!good[src[i]]) {
                good[src[i]] = 1;
                queue[tail++] = src[i];
            }
    }
    free(ptr); free(src); free(fill); free(queue);
    return 0;
}

static PyObject *coaccessible(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, gv;
    int64_t m, k, i;
    int failed = 0;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "coaccessible(trans, good) takes 2 arguments");
        return NULL;
    }
    if (get_int64(args[0], &tv, PyBUF_ND, "trans") < 0)
        return NULL;
    if (tv.ndim != 2) {
        PyBuffer_Release(&tv);
        PyErr_SetString(PyExc_ValueError, "trans must be 2-dimensional");
        return NULL;
    }
    m = tv.shape[0];
    k = tv.shape[1];
    if (PyObject_GetBuffer(args[1], &gv, PyBUF_ND | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (gv.itemsize != 1 || gv.ndim != 1 || gv.len != m) {
        PyErr_SetString(PyExc_ValueError, "good must be a writable one-byte array with one entry per state");
        failed = 1;
    } else if (m * k >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "trans must have fewer than 2^31 entries");
        failed = 1;
    }
    const int64_t *trans = tv.buf;
    for (i = 0; !failed && i < m * k; i++)
        if (trans[i] < -1 || trans[i] >= m) {
            PyErr_Format(PyExc_ValueError, "trans holds %lld, not a state or -1", (long long)trans[i]);
            failed = 1;
        }
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS
        failed = mark_coaccessible(trans, m, k, gv.buf) < 0 ? 2 : 0;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&tv);
    PyBuffer_Release(&gv);
    if (failed == 2)
        return PyErr_NoMemory();
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* Row-major tables, read either by row (`row_groups`) or by column (`column_groups`): int64 entries, or int32
 * ones where `narrow` is set (`minimal`'s settled table, read where the caller made it). */
typedef struct {
    const int64_t *table;
    const int32_t *narrow;
    int64_t n_rows, n_cols;
} Table;

/* Entry i (row-major) of t. */
static inline int64_t cell(const Table *t, int64_t i)
{
    return t->narrow ? t->narrow[i] : t->table[i];
}

static int same_rows(const Table *t, int64_t a, int64_t b)
{
    if (t->narrow)
        return memcmp(t->narrow + a * t->n_cols, t->narrow + b * t->n_cols, (size_t)t->n_cols * sizeof(int32_t)) == 0;
    return memcmp(t->table + a * t->n_cols, t->table + b * t->n_cols, (size_t)t->n_cols * sizeof(int64_t)) == 0;
}

static int same_columns(const Table *t, int64_t a, int64_t b)
{
    for (int64_t r = 0; r < t->n_rows; r++)
        if (cell(t, r * t->n_cols + a) != cell(t, r * t->n_cols + b))
            return 0;
    return 1;
}

static int same_hash(const Table *t, int64_t a, int64_t b)
{
    (void)t; (void)a; (void)b;
    return 1;
}

/* Numbers the distinct keys among keys[i] (rows or columns of t, with their hashes) by first
 * appearance: group[i] that of keys[i], first[g] a key of group g. -1 on memory failure,
 * else the number of groups. */
static int64_t group_keys(const Table *t, int (*same)(const Table *, int64_t, int64_t), const uint64_t *hashes,
                          int64_t n_keys, const int64_t *keys, int64_t c, int64_t *group, int64_t *first)
{
    int64_t size = 16, n = 0, i, slot;
    while (size < 2 * n_keys)
        size *= 2;
    int64_t *slots = malloc((size_t)size * sizeof(int64_t));
    int64_t *of_key = malloc((size_t)(n_keys ? n_keys : 1) * sizeof(int64_t));
    if (!slots || !of_key) {
        free(slots); free(of_key);
        return -1;
    }
    for (i = 0; i < size; i++)
        slots[i] = -1;
    for (i = 0; i < n_keys; i++)
        of_key[i] = -1;
    for (i = 0; i < c; i++) {
        int64_t j = keys[i];
        if (of_key[j] < 0) {
            uint64_t h = hashes[j];
            for (slot = (int64_t)(h & (uint64_t)(size - 1));; slot = (slot + 1) & (size - 1)) {
                int64_t g = slots[slot];
                if (g < 0) {
                    slots[slot] = n;
                    first[n] = j;
                    of_key[j] = n++;
                    break;
                }
                if (hashes[first[g]] == h && same(t, first[g], j)) {
                    of_key[j] = g;
                    break;
                }
            }
        }
        group[i] = of_key[j];
    }
    free(slots); free(of_key);
    return n;
}

/* See row_groups / column_groups: the groups of t's rows (by_column 0) or columns (1) picked by keys. */
static int64_t group_lines(const Table *t, int by_column, const int64_t *keys, int64_t c, int64_t *group, int64_t *first)
{
    int64_t n_keys = by_column ? t->n_cols : t->n_rows, r, j, n;
    uint64_t *hashes = malloc((size_t)(n_keys ? n_keys : 1) * sizeof(uint64_t));
    if (!hashes)
        return -1;
    for (j = 0; j < n_keys; j++)
        hashes[j] = HASH_SEED;
    /* one row-major pass either way: a column's hash is built a row at a time */
    for (r = 0; r < t->n_rows; r++) {
        int64_t at = r * t->n_cols;
        if (by_column)
            for (j = 0; j < t->n_cols; j++)
                hashes[j] = hash_step(hashes[j], cell(t, at + j));
        else
            for (j = 0; j < t->n_cols; j++)
                hashes[r] = hash_step(hashes[r], cell(t, at + j));
    }
    if (!by_column) {
        n = group_keys(t, same_rows, hashes, n_keys, keys, c, group, first);
        free(hashes);
        return n;
    }
    /* Columns: grouped by hash alone, then checked against their group's first column in one row-major
     * pass (comparing a column at a time reads the table with a stride of a row, a cache miss a read:
     * ~3 ms for a 3,000-state byte DFA); a hash collision, if ever, falls back to that comparison. */
    n = group_keys(t, same_hash, hashes, n_keys, keys, c, group, first);
    /* the distinct columns that joined another's group, and that column (the check's pairs) */
    int64_t *pair = malloc((size_t)(2 * n_keys + 1) * sizeof(int64_t)), n_pairs = 0, p;
    if (!pair) {
        free(hashes);
        return -1;
    }
    for (j = 0; j < n_keys; j++)
        pair[j] = -1; /* column j's group's first, once met */
    for (j = 0; n >= 0 && j < c; j++)
        if (pair[keys[j]] < 0) {
            pair[keys[j]] = first[group[j]];
            if (first[group[j]] != keys[j])
                pair[n_keys + n_pairs++] = keys[j];
        }
    for (r = 0; n >= 0 && n_pairs && r < t->n_rows; r++) {
        int64_t at = r * t->n_cols;
        for (p = 0; p < n_pairs; p++)
            if (cell(t, at + pair[n_keys + p]) != cell(t, at + pair[pair[n_keys + p]]))
                break;
        if (p < n_pairs) {
            n = group_keys(t, same_columns, hashes, n_keys, keys, c, group, first);
            break;
        }
    }
    free(pair);
    free(hashes);
    return n;
}

static PyObject *grouped(PyObject *const *args, Py_ssize_t nargs, int by_column)
{
    Py_buffer tv, cv, gv, fv;
    int64_t n_keys, c, i, n = 0;
    int failed = 0;
    const char *what = by_column ? "column" : "row";
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "%s_groups(table, %ss, group, first) takes 4 arguments", what, what);
        return NULL;
    }
    if (get_int64(args[0], &tv, PyBUF_ND, "table") < 0)
        return NULL;
    if (get_int64(args[1], &cv, PyBUF_ND, by_column ? "columns" : "rows") < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (get_int64(args[2], &gv, PyBUF_ND | PyBUF_WRITABLE, "group") < 0) {
        PyBuffer_Release(&tv); PyBuffer_Release(&cv);
        return NULL;
    }
    if (get_int64(args[3], &fv, PyBUF_ND | PyBUF_WRITABLE, "first") < 0) {
        PyBuffer_Release(&tv); PyBuffer_Release(&cv); PyBuffer_Release(&gv);
        return NULL;
    }
    c = cv.ndim == 1 ? cv.shape[0] : -1;
    if (tv.ndim != 2 || c < 0 || gv.ndim != 1 || fv.ndim != 1 || gv.shape[0] != c || fv.shape[0] != c) {
        PyErr_Format(PyExc_ValueError, "table must be 2-dimensional, %ss, group and first 1-dimensional of one length",
                     what);
        failed = 1;
    }
    Table t = {tv.buf, NULL, tv.ndim == 2 ? tv.shape[0] : 0, tv.ndim == 2 ? tv.shape[1] : 0};
    n_keys = by_column ? t.n_cols : t.n_rows;
    const int64_t *keys = cv.buf;
    for (i = 0; !failed && i < c; i++)
        if (keys[i] < 0 || keys[i] >= n_keys) {
            PyErr_Format(PyExc_ValueError, "%ss holds %lld, not a %s of table", what, (long long)keys[i], what);
            failed = 1;
        }
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS
        n = group_lines(&t, by_column, keys, c, gv.buf, fv.buf);
        Py_END_ALLOW_THREADS
        failed = n < 0 ? 2 : 0;
    }
    PyBuffer_Release(&tv); PyBuffer_Release(&cv); PyBuffer_Release(&gv); PyBuffer_Release(&fv);
    if (failed == 2)
        return PyErr_NoMemory();
    if (failed)
        return NULL;
    return PyLong_FromLongLong((long long)n);
}

static PyObject *row_groups(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return grouped(args, nargs, 0);
}

static PyObject *column_groups(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return grouped(args, nargs, 1);
}

/* `minimal`'s work on checked inputs (see the top of the file); -1 on memory failure. The transitions are
 * `trans` (int64), or `narrow` (int32, trans NULL): a settled table is read where it is, any other is widened
 * first. Fills *n_out, *n_classes_out, `table` (room for (m + 1) k entries, the caller's) and two outputs
 * (malloc'd; the caller frees them). */
static int minimal_tables(const int64_t *trans, const int32_t *narrow, int64_t m, int64_t k,
                          const unsigned char *accept, const int64_t *classes, int settled, int64_t *n_out,
                          int64_t *n_classes_out, int32_t **byte_class_out, int32_t *table,
                          unsigned char **accepting_out)
{
    int64_t q, c, i, g, b, m2 = 0, n = 0, n_groups = 0, n_blocks;
    int failed = 0;
    /* Fresh memory costs a page fault per 4 KiB on first touch (most of a large table's time here): the
     * trimmed and the minimised tables are only made when they differ from their input. */
    unsigned char *good = malloc((size_t)m);
    int64_t *renum = malloc((size_t)m * sizeof(int64_t));
    int64_t *own_trimmed = NULL, *blocks = NULL, *block_of = NULL, *number = NULL, *rep = NULL, *own_small = NULL;
    int64_t *own_wide = NULL;
    const int64_t *trimmed, *small;
    int64_t *group_col = NULL;
    int32_t *byte_class = NULL;
    unsigned char *accepting = NULL;
    Refiner r;
    memset(&r, 0, sizeof r);
    if (!good || !renum) {
        failed = 1;
        goto done;
    }
    if (narrow != NULL && !settled) { /* the trim and the partition read int64 */
        own_wide = malloc((size_t)(m * k > 0 ? m * k : 1) * sizeof(int64_t));
        if (!own_wide) {
            failed = 1;
            goto done;
        }
        for (i = 0; i < m * k; i++)
            own_wide[i] = narrow[i];
        trans = own_wide;
        narrow = NULL;
    }
    trimmed = trans; /* NULL for a settled narrow table, which is never trimmed or partitioned */
    if (settled)
        memset(good, 1, (size_t)m);
    else {
        memcpy(good, accept, (size_t)m);
        if (mark_coaccessible(trans, m, k, good) < 0) {
            failed = 1;
            goto done;
        }
    }
    good[0] = 1; /* the start stays even if nothing is accepted */
    for (q = 0; q < m; q++)
        renum[q] = good[q] ? m2++ : -1;
    blocks = malloc((size_t)m2 * sizeof(int64_t));
    block_of = malloc((size_t)m2 * sizeof(int64_t));
    number = malloc((size_t)m2 * sizeof(int64_t));
    rep = malloc((size_t)m2 * sizeof(int64_t));
    if (!blocks || !block_of || !number || !rep) {
        failed = 1;
        goto done;
    }
    if (m2 < m) { /* the trimmed table: the good states renumbered in order, edges to the others gone */
        own_trimmed = malloc((size_t)(m2 * k > 0 ? m2 * k : 1) * sizeof(int64_t));
        if (!own_trimmed) {
            failed = 1;
            goto done;
        }
        for (q = 0; q < m; q++)
            if (good[q])
                for (c = 0; c < k; c++) {
                    int64_t t = trans[q * k + c];
                    own_trimmed[renum[q] * k + c] = t >= 0 ? renum[t] : -1;
                }
        trimmed = own_trimmed;
    }
    for (q = 0; q < m; q++)
        if (good[q])
            blocks[renum[q]] = m2 > 1 ? (int64_t)(accept[q] != 0) : 0; /* ids below m2, as `refine` takes them */
    if (settled) {
        for (q = 0; q < m2; q++)
            block_of[q] = q;
        n_blocks = m2;
    } else
        n_blocks = acyclic_partition(trimmed, m2, k, blocks, block_of);
    if (n_blocks == -1) {
        failed = 1;
        goto done;
    }
    if (n_blocks == -2) { /* a cycle: Hopcroft */
        r.m = m2;
        r.k = k;
        r.trans = trimmed;
        if (prepare(&r, blocks) < 0) {
            failed = 1;
            goto done;
        }
        refine_all(&r);
        memcpy(block_of, r.block_of, (size_t)m2 * sizeof(int64_t));
        n_blocks = r.n_blocks;
    }
    /* blocks numbered by their first state, which stands for the block */
    for (i = 0; i < n_blocks; i++)
        number[i] = -1;
    for (q = 0; q < m2; q++)
        if (number[block_of[q]] < 0) {
            rep[n] = q;
            number[block_of[q]] = n++;
        }
    accepting = malloc((size_t)n + 1);
    if (!accepting) {
        failed = 1;
        goto done;
    }
    small = trimmed; /* already minimal: each state its own block, numbered as before */
    if (n < m2) {
        own_small = malloc((size_t)(n * k > 0 ? n * k : 1) * sizeof(int64_t));
        if (!own_small) {
            failed = 1;
            goto done;
        }
        for (i = 0; i < n; i++) {
            const int64_t *row = trimmed + rep[i] * k;
            for (c = 0; c < k; c++)
                own_small[i * k + c] = row[c] >= 0 ? number[block_of[row[c]]] : -1;
        }
        small = own_small;
    }
    for (q = 0, i = 0; q < m && i < n; q++) /* each block's first state's accepting bit (rep ascends) */
        if (renum[q] == rep[i])
            accepting[i++] = accept[q] != 0;
    accepting[n] = 0;
    /* byte classes: the distinct columns of `small` the bytes read, numbered by their lowest byte
     * (`column_groups`' work: the groups of the columns the 256 bytes pick, by first appearance) */
    int64_t group[256];
    Table small_table = {small, small == NULL ? narrow : NULL, n, k};
    group_col = malloc(256 * sizeof(int64_t));
    byte_class = malloc(256 * sizeof(int32_t));
    if (!group_col || !byte_class) {
        failed = 1;
        goto done;
    }
    n_groups = group_lines(&small_table, 1, classes, 256, group, group_col);
    if (n_groups < 0) {
        failed = 1;
        goto done;
    }
    for (b = 0; b < 256; b++)
        byte_class[b] = (int32_t)group[b];
    for (i = 0; i < n; i++)
        for (g = 0; g < n_groups; g++) {
            int64_t t = cell(&small_table, i * k + group_col[g]);
            table[i * n_groups + g] = (int32_t)(t >= 0 ? t : n);
        }
    for (g = 0; g < n_groups; g++)
        table[n * n_groups + g] = (int32_t)n;
done:
    free_refiner(&r);
    free(good); free(renum); free(own_trimmed); free(blocks); free(block_of); free(number); free(rep);
    free(own_small); free(group_col); free(own_wide);
    if (failed) {
        free(byte_class); free(accepting);
        return -1;
    }
    *n_out = n;
    *n_classes_out = n_groups;
    *byte_class_out = byte_class;
    *accepting_out = accepting;
    return 0;
}

static PyObject *minimal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, av, cv;
    int64_t m, k, i, n = 0, n_classes = 0;
    int failed = 0;
    int32_t *byte_class = NULL;
    unsigned char *accepting = NULL;
    PyObject *table = NULL;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "minimal(trans, accept, classes, settled) takes 4 arguments");
        return NULL;
    }
    int settled = PyObject_IsTrue(args[3]);
    if (settled < 0)
        return NULL;
    if (PyObject_GetBuffer(args[0], &tv, PyBUF_ND | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    /* int32 (what composition makes, read in place) or int64 */
    const char *code = tv.format == NULL ? "" : tv.format;
    if (*code == '<' || *code == '=' || *code == '@')
        code++;
    int wide = tv.itemsize == 8 && (strcmp(code, "q") == 0 || strcmp(code, "l") == 0);
    if (!wide && !(tv.itemsize == 4 && (strcmp(code, "i") == 0 || strcmp(code, "l") == 0))) {
        PyBuffer_Release(&tv);
        PyErr_SetString(PyExc_ValueError, "trans must be an int32 or int64 array");
        return NULL;
    }
    if (tv.ndim != 2 || tv.shape[0] < 1) {
        PyBuffer_Release(&tv);
        PyErr_SetString(PyExc_ValueError, "trans must be 2-dimensional with a start state");
        return NULL;
    }
    m = tv.shape[0];
    k = tv.shape[1];
    if (PyObject_GetBuffer(args[1], &av, PyBUF_ND | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&tv);
        return NULL;
    }
    if (get_int64(args[2], &cv, PyBUF_ND, "classes") < 0) {
        PyBuffer_Release(&tv);
        PyBuffer_Release(&av);
        return NULL;
    }
    const int64_t *trans = wide ? tv.buf : NULL, *classes = cv.buf;
    const int32_t *narrow = wide ? NULL : tv.buf;
    if (av.itemsize != 1 || av.len != m) {
        PyErr_SetString(PyExc_ValueError, "accept must be a one-byte array with one entry per state");
        failed = 1;
    } else if (cv.len != 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "classes must have one entry per byte");
        failed = 1;
    } else if (m * k >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "trans must have fewer than 2^31 entries");
        failed = 1;
    }
    for (i = 0; !failed && i < m * k; i++) {
        int64_t t = wide ? trans[i] : narrow[i];
        if (t < -1 || t >= m) {
            PyErr_Format(PyExc_ValueError, "trans holds %lld, not a state or -1", (long long)t);
            failed = 1;
        }
    }
    for (i = 0; !failed && i < 256; i++)
        if (classes[i] < 0 || classes[i] >= k) {
            PyErr_Format(PyExc_ValueError, "classes holds %lld, not a column of trans", (long long)classes[i]);
            failed = 1;
        }
    /* The table is written where it is returned, in room for the most it can hold ((m + 1) k: no more states,
     * no more classes), then cut to its size: no copy of it, and no fresh memory but its own (a counted
     * string's table is hundreds of KiB, each page of fresh memory a fault on first touch). */
    if (!failed && (table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((m + 1) * k * (int64_t)sizeof(int32_t))))
                       == NULL)
        failed = 1;
    if (!failed) {
        int32_t *room = (int32_t *)PyBytes_AS_STRING(table);
        Py_BEGIN_ALLOW_THREADS
        failed = minimal_tables(trans, narrow, m, k, av.buf, classes, settled, &n, &n_classes, &byte_class, room,
                                &accepting) < 0
                     ? 2 : 0;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&tv);
    PyBuffer_Release(&av);
    PyBuffer_Release(&cv);
    Py_ssize_t size = (Py_ssize_t)((n + 1) * n_classes * (int64_t)sizeof(int32_t));
    if (!failed && size < PyBytes_GET_SIZE(table) && _PyBytes_Resize(&table, size) < 0)
        failed = 1; /* table is NULL: freed, with the error set */
    if (failed) {
        Py_XDECREF(table);
        free(byte_class);
        free(accepting);
        return failed == 2 ? PyErr_NoMemory() : NULL;
    }
    PyObject *out = Py_BuildValue("(LLy#Ny#)", (long long)n, (long long)n_classes,
                                  (const char *)byte_class, (Py_ssize_t)(256 * sizeof(int32_t)), table,
                                  (const char *)accepting, (Py_ssize_t)(n + 1));
    free(byte_class);
    free(accepting);
    return out;
}

static PyMethodDef partition_methods[] = {
    {"refine", (PyCFunction)(void (*)(void))refine, METH_FASTCALL,
     "refine(trans, blocks, out) -> number of blocks: the coarsest stable partition (see the module source)."},
    {"coaccessible", (PyCFunction)(void (*)(void))coaccessible, METH_FASTCALL,
     "coaccessible(trans, good): marks every state from which a marked state is reachable (see the module source)."},
    {"row_groups", (PyCFunction)(void (*)(void))row_groups, METH_FASTCALL,
     "row_groups(table, rows, group, first) -> number of groups: equal rows numbered by first appearance."},
    {"column_groups", (PyCFunction)(void (*)(void))column_groups, METH_FASTCALL,
     "column_groups(table, columns, group, first) -> number of groups: row_groups of the transposed table."},
    {"minimal", (PyCFunction)(void (*)(void))minimal, METH_FASTCALL,
     "minimal(trans, accept, classes, settled) -> (n, n_classes, byte_class, table, accepting): one terminal's "
     "minimal DFA."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef partition_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._partition",
    "The coarsest stable partition of a partial DFA, and its trim (pda/kernels/partition.py).", -1, partition_methods,
};

PyMODINIT_FUNC PyInit__partition(void)
{
    return PyModule_Create(&partition_module);
}

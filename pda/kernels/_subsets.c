/* pda.kernels._subsets: the subset construction of an epsilon-NFA over atoms.
 *
 * Written against the plain Python C API and the buffer protocol, like _walk.c;
 * pda/kernels/subsets.py is the Python side and documents the interface.
 *
 * determinise(eps_ptr, eps_dst, edge_ptr, atom_ptr, atoms, edge_dst, final_term, owner, lazy, start,
 *             n_atoms, n_terms, max_states) -> (trans, accept) or None
 *     An NFA of m states in CSR form (all int64 but `lazy`, uint8):
 *       eps_dst[eps_ptr[q]:eps_ptr[q+1]]   q's epsilon successors;
 *       edges edge_ptr[q]..edge_ptr[q+1]    q's atom edges, edge e going to edge_dst[e]
 *                                           on the atoms atoms[atom_ptr[e]:atom_ptr[e+1]];
 *       final_term[q]                        the terminal whose final state q is, or -1;
 *       owner[q]                             the terminal q belongs to, or -1 (the start);
 *       lazy[j]                              terminal j stops at its first match.
 *     A DFA state is the sorted set of "important" NFA states (with an atom edge, or
 *     final) of an epsilon-closure. The first is closure(start); the others are numbered
 *     as they are met: states in id order, atoms in increasing order. Where a set holds
 *     a lazy terminal's final state, that terminal's NFA states take no edge.
 *     Returns (n, trans, accept): the number of DFA states, and bytes of trans int64
 *     [n, n_atoms] (-1: no successor) and accept uint8 [n, n_terms]; or None when a
 *     state id would reach max_states.
 *
 * csr(eps, edges) -> (eps_ptr, eps_dst, edge_ptr, atom_ptr, atoms, edge_dst)
 *     The CSR arrays above (bytes of int64) of an NFA held as Python lists
 *     (`pda.regex.automaton.NFA`): eps[q] a list of q's epsilon successors, edges[q] a list
 *     of (atoms, target) pairs, atoms a tuple of ints. Two passes over the lists (sizes,
 *     then values), with the GIL; TypeError on anything else. What a numpy conversion
 *     took ~50 numpy and generator steps for (~20 us a small terminal's NFA).
 *
 * Every index read from the inputs is checked first (ValueError), and the
 * construction runs without the GIL. `pda.reference.reference_subsets` is the
 * plain-Python construction it is tested against, state for state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *data;
    int64_t n, cap;
} Vec;

static int push(Vec *v, int64_t x)
{
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        int64_t *grown = realloc(v->data, (size_t)cap * sizeof(int64_t));
        if (!grown)
            return -1;
        v->data = grown;
        v->cap = cap;
    }
    v->data[v->n++] = x;
    return 0;
}

typedef struct {
    int64_t m, k, t;
    const int64_t *eps_ptr, *eps_dst, *edge_ptr, *atom_ptr, *atoms, *edge_dst, *final_term, *owner;
    const uint8_t *lazy;
    unsigned char *important;
    /* closures, computed on first use: closure_ids[closure_ptr[q]..] once closure_done[q] */
    int64_t *closure_ptr, *closure_len;
    Vec closure_ids;
    /* DFA states: their NFA sets in set_ids[set_ptr[i]:set_ptr[i+1]] */
    Vec set_ids, set_ptr, trans, hash_of; /* hash_of: each state's content hash (uint64 bits) */
    int64_t *slots, n_slots;
    /* scratch */
    int64_t *stamp, stamp_now, *mark, mark_now, *stack, *done_term, done_now;
    Vec pairs_atom, pairs_dst, members, targets, prev_targets;
    int64_t *atom_count, *atom_start, *bucket;
    Vec touched_atoms;
} Builder;

static void free_builder(Builder *b)
{
    free(b->important); free(b->closure_ptr); free(b->closure_len); free(b->closure_ids.data);
    free(b->set_ids.data); free(b->set_ptr.data); free(b->trans.data); free(b->hash_of.data); free(b->slots);
    free(b->stamp); free(b->mark); free(b->stack); free(b->done_term);
    free(b->pairs_atom.data); free(b->pairs_dst.data); free(b->members.data); free(b->targets.data);
    free(b->prev_targets.data); free(b->atom_count); free(b->atom_start); free(b->bucket);
    free(b->touched_atoms.data);
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Up to this many ids are sorted by insertion: a DFA state's NFA set and an atom's targets are most often a few
 * ids, where qsort's call per comparison (and glibc's merge sort copies) cost more than the sorting. */
#define SORT_INSERTION_MAX 32

/* Sorts n ids ascending in place. */
static void sort_int64(int64_t *ids, int64_t n)
{
    if (n > SORT_INSERTION_MAX) {
        qsort(ids, (size_t)n, sizeof(int64_t), cmp_int64);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        int64_t v = ids[i], j = i;
        for (; j > 0 && ids[j - 1] > v; j--)
            ids[j] = ids[j - 1];
        ids[j] = v;
    }
}

/* Compute q's closure (important states reachable by epsilon moves, q included) if not done; -1 on failure. */
static int closure(Builder *b, int64_t q)
{
    if (b->closure_ptr[q] >= 0)
        return 0;
    int64_t top = 0, start = b->closure_ids.n;
    b->stamp_now++;
    b->stamp[q] = b->stamp_now;
    b->stack[top++] = q;
    while (top) {
        int64_t x = b->stack[--top];
        if (b->important[x] && push(&b->closure_ids, x) < 0)
            return -1;
        for (int64_t e = b->eps_ptr[x]; e < b->eps_ptr[x + 1]; e++) {
            int64_t y = b->eps_dst[e];
            if (b->stamp[y] != b->stamp_now) {
                b->stamp[y] = b->stamp_now;
                b->stack[top++] = y;
            }
        }
    }
    sort_int64(b->closure_ids.data + start, b->closure_ids.n - start);
    b->closure_ptr[q] = start;
    b->closure_len[q] = b->closure_ids.n - start;
    return 0;
}

static uint64_t hash_set(const int64_t *ids, int64_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i++) {
        h ^= (uint64_t)ids[i];
        h *= 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    return h;
}

static int64_t find_slot(const Builder *b, const int64_t *ids, int64_t n, uint64_t h)
{
    int64_t i = (int64_t)(h & (uint64_t)(b->n_slots - 1)), s;
    while ((s = b->slots[i]) >= 0) {
        int64_t lo = b->set_ptr.data[s], hi = b->set_ptr.data[s + 1];
        if ((uint64_t)b->hash_of.data[s] == h && hi - lo == n && memcmp(b->set_ids.data + lo, ids, (size_t)n * sizeof(int64_t)) == 0)
            return i;
        i = (i + 1) & (b->n_slots - 1);
    }
    return i;
}

static int grow_slots(Builder *b)
{
    int64_t n = b->n_slots * 2, s, n_states = b->set_ptr.n - 1;
    int64_t *slots = malloc((size_t)n * sizeof(int64_t));
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)n * sizeof(int64_t));
    for (s = 0; s < n_states; s++) {
        int64_t i = (int64_t)((uint64_t)b->hash_of.data[s] & (uint64_t)(n - 1));
        while (slots[i] >= 0)
            i = (i + 1) & (n - 1);
        slots[i] = s;
    }
    free(b->slots);
    b->slots = slots;
    b->n_slots = n;
    return 0;
}

/* The id of the DFA state with NFA set ids[0:n], added if new; -1 on memory failure, -2 at max_states. */
static int64_t intern(Builder *b, const int64_t *ids, int64_t n, int64_t max_states)
{
    uint64_t h = hash_set(ids, n);
    int64_t i = find_slot(b, ids, n, h), s = b->slots[i], j;
    if (s >= 0)
        return s;
    s = b->set_ptr.n - 1;
    if (s >= max_states)
        return -2;
    for (j = 0; j < n; j++)
        if (push(&b->set_ids, ids[j]) < 0)
            return -1;
    if (push(&b->set_ptr, b->set_ids.n) < 0)
        return -1;
    if (push(&b->hash_of, (int64_t)h) < 0)
        return -1;
    b->slots[i] = s;
    if (2 * (s + 1) > b->n_slots && grow_slots(b) < 0)
        return -1;
    return s;
}

/* The union of the closures of b->targets, sorted, into b->members; -1 on failure. */
static int closed_union(Builder *b)
{
    b->members.n = 0;
    b->mark_now++;
    for (int64_t i = 0; i < b->targets.n; i++) {
        int64_t t = b->targets.data[i];
        if (closure(b, t) < 0)
            return -1;
        const int64_t *c = b->closure_ids.data + b->closure_ptr[t];
        for (int64_t j = 0; j < b->closure_len[t]; j++)
            if (b->mark[c[j]] != b->mark_now) {
                b->mark[c[j]] = b->mark_now;
                if (push(&b->members, c[j]) < 0)
                    return -1;
            }
    }
    sort_int64(b->members.data, b->members.n);
    return 0;
}

/* The whole construction; 0 done, 1 at max_states, -1 memory failure. */
static int build(Builder *b, int64_t start, int64_t max_states)
{
    int64_t k = b->k, s, i, e, a, c;
    b->targets.n = 0;
    if (push(&b->targets, start) < 0 || closed_union(b) < 0)
        return -1;
    if (push(&b->set_ptr, 0) < 0)
        return -1;
    if (intern(b, b->members.data, b->members.n, INT64_MAX) < 0) /* the first state is never refused */
        return -1;
    for (s = 0; s < b->set_ptr.n - 1; s++) {
        int64_t lo = b->set_ptr.data[s], hi = b->set_ptr.data[s + 1];
        b->done_now++;
        for (i = lo; i < hi; i++) {
            int64_t q = b->set_ids.data[i], j = b->final_term[q];
            if (j >= 0 && b->lazy[j])
                b->done_term[j] = b->done_now;
        }
        /* (atom, target) pairs of the set's edges, bucketed by atom */
        b->pairs_atom.n = b->pairs_dst.n = b->touched_atoms.n = 0;
        for (i = lo; i < hi; i++) {
            int64_t q = b->set_ids.data[i], o = b->owner[q];
            if (o >= 0 && b->done_term[o] == b->done_now)
                continue;
            for (e = b->edge_ptr[q]; e < b->edge_ptr[q + 1]; e++)
                for (a = b->atom_ptr[e]; a < b->atom_ptr[e + 1]; a++) {
                    c = b->atoms[a];
                    if (b->atom_count[c]++ == 0 && push(&b->touched_atoms, c) < 0)
                        return -1;
                    if (push(&b->pairs_atom, c) < 0 || push(&b->pairs_dst, b->edge_dst[e]) < 0)
                        return -1;
                }
        }
        sort_int64(b->touched_atoms.data, b->touched_atoms.n);
        int64_t offset = 0;
        for (i = 0; i < b->touched_atoms.n; i++) {
            c = b->touched_atoms.data[i];
            b->atom_start[c] = offset;
            offset += b->atom_count[c];
            b->atom_count[c] = b->atom_start[c];
        }
        for (i = 0; i < b->pairs_atom.n; i++)
            b->bucket[b->atom_count[b->pairs_atom.data[i]]++] = b->pairs_dst.data[i];
        int64_t row = b->trans.n;
        for (c = 0; c < k; c++)
            if (push(&b->trans, -1) < 0)
                return -1;
        b->prev_targets.n = 0;
        int64_t prev = -1;
        for (i = 0; i < b->touched_atoms.n; i++) {
            c = b->touched_atoms.data[i];
            /* the atom's distinct targets, sorted */
            b->targets.n = 0;
            for (a = b->atom_start[c]; a < b->atom_count[c]; a++)
                if (push(&b->targets, b->bucket[a]) < 0)
                    return -1;
            sort_int64(b->targets.data, b->targets.n);
            int64_t n = 0;
            for (a = 0; a < b->targets.n; a++)
                if (n == 0 || b->targets.data[n - 1] != b->targets.data[a])
                    b->targets.data[n++] = b->targets.data[a];
            b->targets.n = n;
            b->atom_count[c] = 0;
            int64_t j;
            if (prev >= 0 && n == b->prev_targets.n
                && memcmp(b->targets.data, b->prev_targets.data, (size_t)n * sizeof(int64_t)) == 0)
                j = prev; /* the same targets as the last atom's: the same state */
            else {
                if (closed_union(b) < 0)
                    return -1;
                j = intern(b, b->members.data, b->members.n, max_states);
                if (j == -2)
                    return 1;
                if (j < 0)
                    return -1;
                b->prev_targets.n = 0;
                for (a = 0; a < n; a++)
                    if (push(&b->prev_targets, b->targets.data[a]) < 0)
                        return -1;
                prev = j;
            }
            b->trans.data[row + c] = j;
        }
    }
    return 0;
}

static int get_int64(PyObject *obj, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_ND | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != 8 || view->format == NULL || strchr("qlL", view->format[0]) == NULL
        || view->format[0] == 'L') {
        PyErr_Format(PyExc_ValueError, "%s must be an int64 array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#define N_ARRAYS 8

static PyObject *determinise(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *names[N_ARRAYS] = {"eps_ptr", "eps_dst", "edge_ptr", "atom_ptr", "atoms", "edge_dst",
                                          "final_term", "owner"};
    Py_buffer views[N_ARRAYS], lv;
    const int64_t *a[N_ARRAYS];
    int64_t len[N_ARRAYS];
    int n_views = 0, bad = 0, status = 0;
    int64_t m, k, t, start, max_states, i;
    Builder b;
    PyObject *result = NULL;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "determinise takes 13 arguments");
        return NULL;
    }
    start = PyLong_AsLongLong(args[9]);
    k = PyLong_AsLongLong(args[10]);
    t = PyLong_AsLongLong(args[11]);
    max_states = PyLong_AsLongLong(args[12]);
    if (PyErr_Occurred())
        return NULL;
    for (; n_views < N_ARRAYS; n_views++) {
        if (get_int64(args[n_views], &views[n_views], names[n_views]) < 0) {
            bad = 2;
            break;
        }
        a[n_views] = views[n_views].buf;
        len[n_views] = views[n_views].len / 8;
    }
    if (!bad && PyObject_GetBuffer(args[8], &lv, PyBUF_ND | PyBUF_C_CONTIGUOUS) < 0)
        bad = 2;
    if (bad) {
        for (i = 0; i < n_views; i++)
            PyBuffer_Release(&views[i]);
        return NULL;
    }
    const uint8_t *lazy = lv.buf;
    m = len[0] - 1;
#define FAIL(...) do { if (!bad) PyErr_Format(PyExc_ValueError, __VA_ARGS__); bad = 1; } while (0)
    if (m < 1 || len[2] != m + 1 || len[6] != m || len[7] != m)
        FAIL("the NFA's per-state arrays disagree in length");
    if (!bad && (len[3] != len[5] + 1 || lv.len != t || k < 0 || t < 0 || start < 0 || start >= m))
        FAIL("edge arrays, lazy flags or scalars out of range");
    for (i = 0; !bad && i <= m; i++)
        if (a[0][i] < 0 || a[0][i] > len[1] || (i && a[0][i] < a[0][i - 1])
            || a[2][i] < 0 || a[2][i] > len[5] || (i && a[2][i] < a[2][i - 1]))
            FAIL("pointer arrays must be non-decreasing offsets");
    for (i = 0; !bad && i < len[3]; i++)
        if (a[3][i] < 0 || a[3][i] > len[4] || (i && a[3][i] < a[3][i - 1]))
            FAIL("atom_ptr must be non-decreasing offsets");
    for (i = 0; !bad && i < len[1]; i++)
        if (a[1][i] < 0 || a[1][i] >= m)
            FAIL("eps_dst holds %lld, not a state", (long long)a[1][i]);
    for (i = 0; !bad && i < len[5]; i++)
        if (a[5][i] < 0 || a[5][i] >= m)
            FAIL("edge_dst holds %lld, not a state", (long long)a[5][i]);
    for (i = 0; !bad && i < len[4]; i++)
        if (a[4][i] < 0 || a[4][i] >= k)
            FAIL("atoms holds %lld, not an atom", (long long)a[4][i]);
    for (i = 0; !bad && i < m; i++)
        if (a[6][i] < -1 || a[6][i] >= t || a[7][i] < -1 || a[7][i] >= t)
            FAIL("final_term and owner must hold terminals or -1");
#undef FAIL
    if (bad) {
        for (i = 0; i < N_ARRAYS; i++)
            PyBuffer_Release(&views[i]);
        PyBuffer_Release(&lv);
        return NULL;
    }
    memset(&b, 0, sizeof b);
    b.m = m;
    b.k = k;
    b.t = t;
    b.eps_ptr = a[0]; b.eps_dst = a[1]; b.edge_ptr = a[2]; b.atom_ptr = a[3]; b.atoms = a[4]; b.edge_dst = a[5];
    b.final_term = a[6]; b.owner = a[7]; b.lazy = lazy;
    b.important = malloc((size_t)m);
    b.closure_ptr = malloc((size_t)m * sizeof(int64_t));
    b.closure_len = malloc((size_t)m * sizeof(int64_t));
    b.stamp = calloc((size_t)m, sizeof(int64_t));
    b.mark = calloc((size_t)m, sizeof(int64_t));
    b.stack = malloc((size_t)m * sizeof(int64_t));
    b.done_term = calloc((size_t)t + 1, sizeof(int64_t));
    b.atom_count = calloc((size_t)k + 1, sizeof(int64_t));
    b.atom_start = malloc(((size_t)k + 1) * sizeof(int64_t));
    b.bucket = malloc(((size_t)len[4] + 1) * sizeof(int64_t));
    b.n_slots = 64;
    b.slots = malloc((size_t)b.n_slots * sizeof(int64_t));
    if (!b.important || !b.closure_ptr || !b.closure_len || !b.stamp || !b.mark || !b.stack || !b.done_term || !b.atom_count
        || !b.atom_start || !b.bucket || !b.slots)
        status = -1;
    else {
        Py_BEGIN_ALLOW_THREADS
        memset(b.slots, 0xff, (size_t)b.n_slots * sizeof(int64_t));
        for (i = 0; i < m; i++) {
            b.important[i] = b.edge_ptr[i + 1] > b.edge_ptr[i] || b.final_term[i] >= 0;
            b.closure_ptr[i] = -1;
        }
        status = build(&b, start, max_states);
        Py_END_ALLOW_THREADS
    }
    if (status == 0) {
        int64_t n = b.set_ptr.n - 1, s;
        uint8_t *accept = calloc((size_t)(n * t) + 1, 1);
        if (!accept)
            PyErr_NoMemory();
        else {
            for (s = 0; s < n; s++)
                for (i = b.set_ptr.data[s]; i < b.set_ptr.data[s + 1]; i++) {
                    int64_t j = b.final_term[b.set_ids.data[i]];
                    if (j >= 0)
                        accept[s * t + j] = 1;
                }
            result = Py_BuildValue("(Ly#y#)", (long long)n, (const char *)b.trans.data, (Py_ssize_t)(b.trans.n * 8),
                                   (const char *)accept, (Py_ssize_t)(n * t));
            free(accept);
        }
    } else if (status == 1) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else
        PyErr_NoMemory();
    free_builder(&b);
    for (i = 0; i < N_ARRAYS; i++)
        PyBuffer_Release(&views[i]);
    PyBuffer_Release(&lv);
    return result;
}

/* A Python int as int64, or -1 with an exception set (a value of -1 is told apart by PyErr_Occurred). */
static int int_item(PyObject *o, int64_t *out)
{
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "csr: NFA states and atoms must be ints");
        return -1;
    }
    *out = (int64_t)PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *int64_bytes(Py_ssize_t n, int64_t **data)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (b)
        *data = (int64_t *)PyBytes_AS_STRING(b);
    return b;
}

static PyObject *csr(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *eps, *edges, *out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    int64_t *eps_ptr, *eps_dst, *edge_ptr, *atom_ptr, *atoms, *edge_dst;
    Py_ssize_t m, q, i, j, n_eps = 0, n_edges = 0, n_atoms = 0, at_eps = 0, at_edge = 0, at_atom = 0;
    (void)self;
    if (nargs != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "csr(eps, edges): two lists of one entry per NFA state");
        return NULL;
    }
    eps = args[0];
    edges = args[1];
    m = PyList_GET_SIZE(eps);
    for (q = 0; q < m; q++) {
        PyObject *e = PyList_GET_ITEM(eps, q), *d = PyList_GET_ITEM(edges, q);
        if (!PyList_Check(e) || !PyList_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "csr: each state's epsilon successors and edges must be lists");
            return NULL;
        }
        n_eps += PyList_GET_SIZE(e);
        n_edges += PyList_GET_SIZE(d);
        for (i = 0; i < PyList_GET_SIZE(d); i++) {
            PyObject *edge = PyList_GET_ITEM(d, i);
            if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(edge, 0))) {
                PyErr_SetString(PyExc_TypeError, "csr: an edge must be a pair (tuple of atoms, target)");
                return NULL;
            }
            n_atoms += PyTuple_GET_SIZE(PyTuple_GET_ITEM(edge, 0));
        }
    }
    if (!(out[0] = int64_bytes(m + 1, &eps_ptr)) || !(out[1] = int64_bytes(n_eps, &eps_dst)) ||
        !(out[2] = int64_bytes(m + 1, &edge_ptr)) || !(out[3] = int64_bytes(n_edges + 1, &atom_ptr)) ||
        !(out[4] = int64_bytes(n_atoms, &atoms)) || !(out[5] = int64_bytes(n_edges, &edge_dst)))
        goto fail;
    eps_ptr[0] = edge_ptr[0] = atom_ptr[0] = 0;
    for (q = 0; q < m; q++) {
        PyObject *e = PyList_GET_ITEM(eps, q), *d = PyList_GET_ITEM(edges, q);
        for (i = 0; i < PyList_GET_SIZE(e); i++)
            if (int_item(PyList_GET_ITEM(e, i), &eps_dst[at_eps++]) < 0)
                goto fail;
        eps_ptr[q + 1] = at_eps;
        for (i = 0; i < PyList_GET_SIZE(d); i++) {
            PyObject *edge = PyList_GET_ITEM(d, i), *set = PyTuple_GET_ITEM(edge, 0);
            for (j = 0; j < PyTuple_GET_SIZE(set); j++)
                if (int_item(PyTuple_GET_ITEM(set, j), &atoms[at_atom++]) < 0)
                    goto fail;
            if (int_item(PyTuple_GET_ITEM(edge, 1), &edge_dst[at_edge]) < 0)
                goto fail;
            atom_ptr[++at_edge] = at_atom;
        }
        edge_ptr[q + 1] = at_edge;
    }
    return Py_BuildValue("(NNNNNN)", out[0], out[1], out[2], out[3], out[4], out[5]);
fail:
    for (i = 0; i < 6; i++)
        Py_XDECREF(out[i]);
    return NULL;
}

static PyMethodDef subsets_methods[] = {
    {"csr", (PyCFunction)(void (*)(void))csr, METH_FASTCALL,
     "csr(eps, edges) -> the NFA's CSR arrays as bytes of int64 (see the module source)."},
    {"determinise", (PyCFunction)(void (*)(void))determinise, METH_FASTCALL,
     "determinise(...) -> (trans, accept) or None: the subset construction (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef subsets_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._subsets",
    "The subset construction of an epsilon-NFA over atoms (pda/kernels/subsets.py).", -1, subsets_methods,
};

PyMODINIT_FUNC PyInit__subsets(void)
{
    return PyModule_Create(&subsets_module);
}

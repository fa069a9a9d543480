/* pda.kernels._scan: the scanner's byte loop (pda/scanner.py), compiled.
 *
 * Written against the plain Python C API, like the other kernels; pda/kernels/scan.py is the
 * Python side and documents the interface, pda.scanner.Scanner subclasses `ByteLoop`, and
 * pda.reference.reference_scan is the plain-Python loop the tests compare it to.
 *
 * ByteLoop(tables_of, priority, ignore, basic): tables_of(candidates) is a candidate set's
 *     LexerTables (`Lexer.tables`), priority the terminals' priorities (`Lexer.priority`),
 *     ignore the %ignore terminals (an int bitmask), basic whether the tables' `extends`
 *     differs from liveness (the basic lexer mode).
 *     scan(node, q, data) -> (node, q, consumed); feed(node, q, data) -> (node, q) or None;
 *     commit(node, q) -> node or None; can_end(node, q) -> bool.
 * View (internal): one node `allowed` set's tables as the loop reads them: the transitions
 *     (`trans`, int32 [rows, classes]), `cls`, `start`, `extends` (basic mode: a tuple of
 *     bools), what `packed_rows()` gives the walk kernel (per row its live terminals and its
 *     accept row, the distinct accept rows, as 64-bit words), the candidates (allowed | ignore)
 *     and allowed sets as words, and a memo of commits per lexer state: the terminals the
 *     lexeme is typed as (`Lexer.best` of `accept_at`) and whether the node takes them.
 *
 * Invariants:
 * - `scan` is `reference_scan` step for step. A state is live where a candidate's bit is set in
 *   its live row (`live_flag`: `live_at(q) != 0`); a lexeme ending in q matches its accept row's
 *   candidates (`accept_at(q)`), typed as those of the highest priority (`Lexer.best`). START
 *   reads the row `start` (`LexerTables.resolve`); no transition leads to START. A negative
 *   transition is a lazy entry not filled yet: `tables.row(q)[c]` fills it (in the shared
 *   arrays, which the loop then reads). What a call raises (LimitExceeded) propagates.
 * - Views are keyed by the value of a node's `allowed`, so a commit's result is fixed per view
 *   and state; at most MAX_VIEWS are kept (all forgotten past that: each made again when met).
 *   A view holds its tables and their arrays (buffers), never nodes.
 * - `commit` and `can_end` are `reference_commit` and `reference_can_end`, through the same memo.
 * - The loop holds the GIL (it calls Python for new views, lazy entries and the nodes'
 *   `advance`/`allowed`/`accepting`). Across such a call it holds references to the views it reads, never
 *   raw pointers into a memo, so another thread's scan on the same loop is safe.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buffer_format.h"
#include "int_words.h"

#define START 0 /* no lexeme in progress (pda.lexer.lexer.START) */
#if defined(__GNUC__) || defined(__clang__)
#define LOWEST_BIT(x) __builtin_ctzll(x)
#else
static int LOWEST_BIT(uint64_t x)
{
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
}
#endif
#define MAX_VIEWS 4096

static PyObject *s_allowed, *s_accepting, *s_advance, *s_row, *s_trans, *s_cls, *s_start, *s_extends, *s_packed_rows;

/* 1 if a buffer format names a native unsigned 8-byte integer. */
static int is_uint64_format(const char *format, Py_ssize_t itemsize)
{
    if (format == NULL || itemsize != 8)
        return 0;
    format = native_code(format);
    return (format[0] == 'Q' || format[0] == 'L') && format[1] == '\0';
}

/* ---------------------------------------------------------------- View */

typedef struct {
    int32_t q;
    int32_t advances;
    PyObject *terms; /* NULL: an empty slot; Py_None: the lexeme matches no candidate */
} Ending;

typedef struct {
    PyObject_HEAD
    PyObject *tables, *allowed, *extends; /* extends: NULL but in the basic mode */
    Py_buffer trans, live_bits, accept_row, row_bits;
    int buffers; /* how many of the four buffers are held, in that order */
    const int32_t *rows, *accept;
    const uint64_t *live, *row_words;
    Py_ssize_t n_rows, n_classes, n_accept_rows, words;
    int32_t start;
    int32_t cls[256];
    uint64_t *candidates, *allowed_words; /* `words` each */
    Ending *ends;
    int32_t ends_cap, ends_n;
} ViewObject;

static PyTypeObject ViewType;

static int View_traverse(ViewObject *v, visitproc visit, void *arg)
{
    Py_VISIT(v->tables);
    Py_VISIT(v->extends);
    return 0;
}

static int View_clear(ViewObject *v)
{
    Py_CLEAR(v->tables);
    Py_CLEAR(v->allowed);
    Py_CLEAR(v->extends);
    return 0;
}

static void View_dealloc(ViewObject *v)
{
    Py_buffer *held[4] = {&v->trans, &v->live_bits, &v->accept_row, &v->row_bits};
    PyObject_GC_UnTrack(v);
    for (int i = 0; i < v->buffers; i++)
        PyBuffer_Release(held[i]);
    for (int32_t i = 0; i < v->ends_cap; i++)
        Py_XDECREF(v->ends[i].terms);
    PyMem_Free(v->ends);
    PyMem_Free(v->candidates);
    View_clear(v);
    PyObject_GC_Del(v);
}

static PyTypeObject ViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._scan.View",
    .tp_basicsize = sizeof(ViewObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A node allowed set's tables as the byte loop reads them (internal).",
    .tp_traverse = (traverseproc)View_traverse,
    .tp_clear = (inquiry)View_clear,
    .tp_dealloc = (destructor)View_dealloc,
};

/* Hold `obj`'s buffer as the view's next one: C-contiguous, `ndim` dimensions, int32 (`int32`) or uint64. */
static int hold(ViewObject *v, Py_buffer *buf, PyObject *obj, int ndim, int int32, const char *what)
{
    if (PyObject_GetBuffer(obj, buf, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    v->buffers++;
    if (buf->ndim != ndim || !(int32 ? is_int32_format(buf->format, buf->itemsize)
                                     : is_uint64_format(buf->format, buf->itemsize))) {
        PyErr_Format(PyExc_TypeError, "the tables' %s must be a %d-D %s array", what, ndim, int32 ? "int32" : "uint64");
        return -1;
    }
    return 0;
}

typedef struct LoopObject LoopObject;
static int view_read_cls(LoopObject *self, ViewObject *v, PyObject *cls);

/* The view of `tables` for a node whose allowed set is `allowed` (candidates: allowed | ignore): a new reference,
 * or NULL. */
static ViewObject *view_new(LoopObject *self, PyObject *tables, PyObject *allowed, PyObject *candidates, int basic)
{
    ViewObject *v = PyObject_GC_New(ViewObject, &ViewType);
    PyObject *trans = NULL, *cls = NULL, *start = NULL, *packed = NULL;
    if (!v)
        return NULL;
    v->buffers = 0;
    v->candidates = v->allowed_words = NULL;
    v->ends = NULL;
    v->ends_cap = v->ends_n = 0;
    v->extends = NULL;
    Py_INCREF(tables);
    v->tables = tables;
    Py_INCREF(allowed);
    v->allowed = allowed;
    PyObject_GC_Track(v);
    if (!(trans = PyObject_GetAttr(tables, s_trans)) || !(cls = PyObject_GetAttr(tables, s_cls)) ||
        !(start = PyObject_GetAttr(tables, s_start)) || !(packed = PyObject_CallMethodNoArgs(tables, s_packed_rows)))
        goto fail;
    if (basic) {
        if (!(v->extends = PyObject_GetAttr(tables, s_extends)))
            goto fail;
        if (!PyTuple_CheckExact(v->extends)) {
            PyErr_SetString(PyExc_TypeError, "the basic mode's tables' extends must be a tuple");
            goto fail;
        }
    }
    if (!PyTuple_Check(packed) || PyTuple_GET_SIZE(packed) < 4) {
        PyErr_SetString(PyExc_TypeError, "the tables' packed_rows() must be a tuple (live_bits, candidates, "
                                         "accept_row, row_bits, ...)");
        goto fail;
    }
    if (hold(v, &v->trans, trans, 2, 1, "trans") < 0 ||
        hold(v, &v->live_bits, PyTuple_GET_ITEM(packed, 0), 2, 0, "live bits") < 0 ||
        hold(v, &v->accept_row, PyTuple_GET_ITEM(packed, 2), 1, 1, "accept rows") < 0 ||
        hold(v, &v->row_bits, PyTuple_GET_ITEM(packed, 3), 2, 0, "distinct accept rows") < 0)
        goto fail;
    v->rows = v->trans.buf;
    v->n_rows = v->trans.shape[0];
    v->n_classes = v->trans.shape[1];
    v->live = v->live_bits.buf;
    v->words = v->live_bits.shape[1];
    v->accept = v->accept_row.buf;
    v->row_words = v->row_bits.buf;
    v->n_accept_rows = v->row_bits.shape[0];
    if (v->live_bits.shape[0] < v->n_rows || v->accept_row.shape[0] < v->n_rows ||
        (v->n_accept_rows && v->row_bits.shape[1] != v->words) ||
        (v->extends && PyTuple_GET_SIZE(v->extends) < v->n_rows)) {
        PyErr_SetString(PyExc_ValueError, "the tables' live bits, accept rows and extends must cover trans's "
                                          "rows, in the same words");
        goto fail;
    }
    long s = PyLong_AsLong(start);
    if (s == -1 && PyErr_Occurred())
        goto fail;
    if (s < 0 || s >= v->n_rows) {
        PyErr_Format(PyExc_ValueError, "the tables' start %ld is not a row", s);
        goto fail;
    }
    v->start = (int32_t)s;
    if (view_read_cls(self, v, cls) < 0)
        goto fail;
    if (!(v->candidates = PyMem_Malloc(sizeof(uint64_t) * (size_t)(2 * v->words + 1)))) {
        PyErr_NoMemory();
        goto fail;
    }
    v->allowed_words = v->candidates + v->words;
    if (int_to_words(candidates, v->candidates, v->words) < 0 || int_to_words(allowed, v->allowed_words, v->words) < 0)
        goto fail;
    Py_DECREF(trans);
    Py_DECREF(cls);
    Py_DECREF(start);
    Py_DECREF(packed);
    return v;
fail:
    Py_XDECREF(trans);
    Py_XDECREF(cls);
    Py_XDECREF(start);
    Py_XDECREF(packed);
    Py_DECREF(v);
    return NULL;
}

/* Whether a candidate is live at lexer state q (`live_flag`). */
static inline int is_live(const ViewObject *v, int32_t q)
{
    const uint64_t *row = v->live + (Py_ssize_t)(q == START ? v->start : q) * v->words;
    uint64_t any = 0;
    for (Py_ssize_t k = 0; k < v->words; k++)
        any |= row[k] & v->candidates[k];
    return any != 0;
}

static Ending *ending_slot(Ending *ends, int32_t cap, int32_t q)
{
    uint32_t i = ((uint32_t)q * 2654435761u) & (uint32_t)(cap - 1);
    while (ends[i].terms && ends[i].q != q)
        i = (i + 1) & (uint32_t)(cap - 1);
    return &ends[i];
}

/* Remember the commit at q (steals `terms`): the entry kept (one already there stays), or NULL with an
 * exception. */
static Ending *ending_put(ViewObject *v, int32_t q, PyObject *terms, int advances)
{
    Ending *e = v->ends ? ending_slot(v->ends, v->ends_cap, q) : NULL;
    if (e && e->terms) {
        Py_DECREF(terms);
        return e;
    }
    if (2 * (v->ends_n + 1) > v->ends_cap) {
        int32_t cap = v->ends_cap ? 2 * v->ends_cap : 16;
        Ending *grown = PyMem_Calloc((size_t)cap, sizeof(Ending));
        if (!grown) {
            Py_DECREF(terms);
            PyErr_NoMemory();
            return NULL;
        }
        for (int32_t i = 0; i < v->ends_cap; i++)
            if (v->ends[i].terms)
                *ending_slot(grown, cap, v->ends[i].q) = v->ends[i];
        PyMem_Free(v->ends);
        v->ends = grown;
        v->ends_cap = cap;
    }
    e = ending_slot(v->ends, v->ends_cap, q);
    e->q = q;
    e->terms = terms;
    e->advances = advances;
    v->ends_n++;
    return e;
}

/* ---------------------------------------------------------------- ByteLoop */

struct LoopObject {
    PyObject_HEAD
    PyObject *tables_of, *ignore, *views;
    int64_t *priority;
    Py_ssize_t n_terminals;
    int basic;
    PyObject *cls;       /* the last `cls` tuple read (views of one lexer share it) */
    int32_t cls_of[256]; /* its entries */
};

static int view_read_cls(LoopObject *self, ViewObject *v, PyObject *cls)
{
    if (cls != self->cls) {
        if (!PyTuple_CheckExact(cls) || PyTuple_GET_SIZE(cls) != 256) {
            PyErr_SetString(PyExc_TypeError, "the tables' cls must be a tuple of 256 byte classes");
            return -1;
        }
        for (int b = 0; b < 256; b++) {
            long c = PyLong_AsLong(PyTuple_GET_ITEM(cls, b));
            if (c == -1 && PyErr_Occurred())
                return -1;
            if (c < 0 || c > INT32_MAX) {
                PyErr_Format(PyExc_ValueError, "byte %d's class %ld is not a class", b, c);
                return -1;
            }
            self->cls_of[b] = (int32_t)c;
        }
        Py_INCREF(cls);
        Py_XSETREF(self->cls, cls);
    }
    for (int b = 0; b < 256; b++) {
        if (self->cls_of[b] >= v->n_classes) {
            PyErr_Format(PyExc_ValueError, "byte %d's class %d is not a column of trans", b, (int)self->cls_of[b]);
            return -1;
        }
        v->cls[b] = self->cls_of[b];
    }
    return 0;
}

static int Loop_traverse(LoopObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tables_of);
    Py_VISIT(self->views);
    return 0;
}

static int Loop_clear(LoopObject *self)
{
    Py_CLEAR(self->tables_of);
    Py_CLEAR(self->ignore);
    Py_CLEAR(self->views);
    Py_CLEAR(self->cls);
    return 0;
}

static void Loop_dealloc(LoopObject *self)
{
    PyObject_GC_UnTrack(self);
    Loop_clear(self);
    PyMem_Free(self->priority);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Loop_init(LoopObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tables_of", "priority", "ignore", "basic", NULL};
    PyObject *tables_of, *priority, *ignore, *views, *seq;
    int basic;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!p", kwlist, &tables_of, &priority, &PyLong_Type, &ignore,
                                     &basic))
        return -1;
    if (!(seq = PySequence_Fast(priority, "priority must be a sequence of ints")))
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *ranks = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!ranks) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        ranks[j] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, j));
        if (ranks[j] == -1 && PyErr_Occurred()) {
            PyMem_Free(ranks);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    if (!(views = PyDict_New())) {
        PyMem_Free(ranks);
        return -1;
    }
    Py_INCREF(tables_of);
    Py_INCREF(ignore);
    Py_XSETREF(self->tables_of, tables_of);
    Py_XSETREF(self->ignore, ignore);
    Py_XSETREF(self->views, views);
    PyMem_Free(self->priority);
    self->priority = ranks;
    self->n_terminals = n;
    self->basic = basic;
    return 0;
}

/* The view for `node`'s candidate set (a new reference), or NULL. */
static ViewObject *view_of(LoopObject *self, PyObject *node)
{
    PyObject *allowed = PyObject_GetAttr(node, s_allowed), *candidates, *tables;
    ViewObject *v;
    if (!allowed)
        return NULL;
    if (!self->views) {
        Py_DECREF(allowed);
        PyErr_SetString(PyExc_RuntimeError, "ByteLoop.__init__ was not called");
        return NULL;
    }
    v = (ViewObject *)PyDict_GetItemWithError(self->views, allowed);
    if (v || PyErr_Occurred()) {
        Py_XINCREF(v);
        Py_DECREF(allowed);
        return v;
    }
    candidates = PyNumber_Or(allowed, self->ignore);
    tables = candidates ? PyObject_CallOneArg(self->tables_of, candidates) : NULL;
    v = tables ? view_new(self, tables, allowed, candidates, self->basic) : NULL;
    Py_XDECREF(tables);
    Py_XDECREF(candidates);
    if (v && PyDict_GET_SIZE(self->views) >= MAX_VIEWS)
        PyDict_Clear(self->views);
    if (v && PyDict_SetItem(self->views, allowed, (PyObject *)v) < 0)
        Py_CLEAR(v);
    Py_DECREF(allowed);
    return v;
}

/* Lexer state q's successor on byte b: from trans, or `tables.row(q)[cls[b]]` for an entry not filled yet;
 * -1 with an exception. */
static int32_t next_state(ViewObject *v, int32_t q, unsigned char b)
{
    int32_t r = q == START ? v->start : q, c = v->cls[b], q2;
    PyObject *index, *row, *entry;
    long value;
    if (r >= v->n_rows) {
        PyErr_Format(PyExc_ValueError, "lexer state %d is not a row of its tables (%zd rows)", (int)q, v->n_rows);
        return -1;
    }
    q2 = v->rows[(Py_ssize_t)r * v->n_classes + c];
    if (q2 >= 0 && q2 < v->n_rows)
        return q2;
    if (q2 >= 0) {
        PyErr_Format(PyExc_ValueError, "lexer state %d's successor %d is not a row of its tables", (int)q, (int)q2);
        return -1;
    }
    if (!(index = PyLong_FromLong(q)))
        return -1;
    row = PyObject_CallMethodOneArg(v->tables, s_row, index);
    Py_DECREF(index);
    if (!row)
        return -1;
    entry = PySequence_GetItem(row, c);
    Py_DECREF(row);
    if (!entry)
        return -1;
    value = PyLong_AsLong(entry);
    Py_DECREF(entry);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (value < 0 || value >= v->n_rows) {
        PyErr_Format(PyExc_ValueError, "lexer state %d's successor %ld is not a row of its tables", (int)q, value);
        return -1;
    }
    return (int32_t)value;
}

/* The commit at lexer state q (not START): the terminals the lexeme is typed as (Py_None: it matches no
 * candidate), borrowed from the view's memo, and *advances; NULL with an exception. */
static PyObject *ending(LoopObject *self, ViewObject *v, int32_t q, int *advances)
{
    Ending *e = v->ends ? ending_slot(v->ends, v->ends_cap, q) : NULL;
    if (e && e->terms) {
        *advances = e->advances;
        return e->terms;
    }
    PyObject *terms;
    int meets = 0;
    int32_t row = v->accept[q];
    if (row >= v->n_accept_rows) {
        PyErr_Format(PyExc_ValueError, "lexer state %d's accept row %d is not one of the tables' %zd", (int)q,
                     (int)row, v->n_accept_rows);
        return NULL;
    }
    uint64_t stack[16], *best = v->words <= 16 ? stack : PyMem_Malloc(sizeof(uint64_t) * (size_t)v->words);
    if (!best)
        return PyErr_NoMemory();
    int64_t top = INT64_MIN;
    int any = 0;
    const uint64_t *accepts = row >= 0 ? v->row_words + (Py_ssize_t)row * v->words : NULL;
    for (Py_ssize_t k = 0; accepts && k < v->words; k++) {
        uint64_t matched = accepts[k] & v->candidates[k];
        for (; matched; matched &= matched - 1) {
            Py_ssize_t j = 64 * k + LOWEST_BIT(matched);
            if (j >= self->n_terminals) {
                if (best != stack)
                    PyMem_Free(best);
                PyErr_Format(PyExc_ValueError, "terminal %zd has no priority", j);
                return NULL;
            }
            if (!any || self->priority[j] > top)
                top = self->priority[j];
            any = 1;
        }
    }
    if (!any) {
        terms = Py_None;
        Py_INCREF(terms);
    } else {
        for (Py_ssize_t k = 0; k < v->words; k++) {
            uint64_t matched = accepts[k] & v->candidates[k], chosen = 0;
            for (; matched; matched &= matched - 1)
                if (self->priority[64 * k + LOWEST_BIT(matched)] == top)
                    chosen |= matched & -matched;
            best[k] = chosen;
            meets |= (chosen & v->allowed_words[k]) != 0;
        }
        unsigned char bytes[8 * 16], *out = v->words <= 16 ? bytes : PyMem_Malloc((size_t)v->words * 8);
        if (!out) {
            if (best != stack)
                PyMem_Free(best);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t k = 0; k < v->words; k++)
            for (int b = 0; b < 8; b++)
                out[8 * k + b] = (unsigned char)(best[k] >> (8 * b));
        terms = _PyLong_FromByteArray(out, (size_t)v->words * 8, 1, 0);
        if (out != bytes)
            PyMem_Free(out);
    }
    if (best != stack)
        PyMem_Free(best);
    if (!terms || !(e = ending_put(v, q, terms, meets)))
        return NULL;
    *advances = e->advances;
    return e->terms;
}

/* The parser node after the lexeme in state q (not START) ends, with the node's view `v`: a new reference,
 * Py_None (a new reference) if it cannot end there, or NULL with an exception (`Scanner.commit`). */
static PyObject *commit(LoopObject *self, ViewObject *v, PyObject *node, int32_t q)
{
    int advances;
    PyObject *terms = ending(self, v, q, &advances);
    if (!terms)
        return NULL;
    if (terms == Py_None || !advances) {
        PyObject *out = terms == Py_None ? Py_None : node;
        Py_INCREF(out);
        return out;
    }
    Py_INCREF(terms); /* the memo's, which another thread's scan may forget while `advance` runs */
    PyObject *after = PyObject_CallMethodOneArg(node, s_advance, terms);
    Py_DECREF(terms);
    return after;
}

/* The loop: feeds `data` from (node, q) until a byte is refused. Sets *node_out (a new reference), *q_out and
 * *consumed; -1 with an exception. */
static int run(LoopObject *self, PyObject *node, int32_t q, const unsigned char *data, Py_ssize_t n,
               PyObject **node_out, int32_t *q_out, Py_ssize_t *consumed)
{
    ViewObject *v = view_of(self, node);
    Py_ssize_t i;
    if (!v)
        return -1;
    if (q >= v->n_rows) {
        PyErr_Format(PyExc_ValueError, "lexer state %d is not a row of its tables (%zd rows)", (int)q, v->n_rows);
        Py_DECREF(v);
        return -1;
    }
    Py_INCREF(node);
    for (i = 0; i < n; i++) {
        unsigned char b = data[i];
        int32_t q2 = next_state(v, q, b);
        if (q2 < 0)
            goto fail;
        if (is_live(v, q2)) {
            q = q2;
            continue;
        }
        if (q == START || (v->extends && PyTuple_GET_ITEM(v->extends, q2) != Py_False))
            break;
        PyObject *after = commit(self, v, node, q);
        if (!after)
            goto fail;
        if (after == Py_None) {
            Py_DECREF(after);
            break;
        }
        ViewObject *next = view_of(self, after);
        int32_t q3 = next ? next_state(next, START, b) : -1;
        if (q3 < 0) {
            Py_XDECREF(next);
            Py_DECREF(after);
            goto fail;
        }
        if (!is_live(next, q3)) {
            Py_DECREF(next);
            Py_DECREF(after);
            break;
        }
        Py_SETREF(node, after);
        Py_SETREF(v, next);
        q = q3;
    }
    Py_DECREF(v);
    *node_out = node;
    *q_out = q;
    *consumed = i;
    return 0;
fail:
    Py_DECREF(v);
    Py_DECREF(node);
    return -1;
}

static int parse_args(PyObject *const *args, Py_ssize_t nargs, const char *name, int32_t *q, Py_buffer *data)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s(node, q, data) takes 3 arguments, got %zd", name, nargs);
        return -1;
    }
    long value = PyLong_AsLong(args[1]);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (value < 0 || value > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: lexer state %ld is not a state", name, value);
        return -1;
    }
    *q = (int32_t)value;
    return PyObject_GetBuffer(args[2], data, PyBUF_SIMPLE);
}

static PyObject *Loop_scan(LoopObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer data;
    int32_t q;
    PyObject *node;
    Py_ssize_t consumed;
    if (parse_args(args, nargs, "scan", &q, &data) < 0)
        return NULL;
    int status = run(self, args[0], q, data.buf, data.len, &node, &q, &consumed);
    PyBuffer_Release(&data);
    if (status < 0)
        return NULL;
    return Py_BuildValue("(Nin)", node, (int)q, consumed);
}

static PyObject *Loop_feed(LoopObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer data;
    int32_t q;
    PyObject *node;
    Py_ssize_t consumed;
    if (parse_args(args, nargs, "feed", &q, &data) < 0)
        return NULL;
    int status = run(self, args[0], q, data.buf, data.len, &node, &q, &consumed);
    Py_ssize_t n = data.len;
    PyBuffer_Release(&data);
    if (status < 0)
        return NULL;
    if (consumed < n) {
        Py_DECREF(node);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(Ni)", node, (int)q);
}

/* The node after the lexeme pending in state q ends (node itself at START), Py_None if it cannot: a new
 * reference, or NULL with an exception. */
static PyObject *end_lexeme(LoopObject *self, PyObject *node, PyObject *state)
{
    long value = PyLong_AsLong(state);
    if (value == -1 && PyErr_Occurred())
        return NULL;
    if (value < 0 || value > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "lexer state %ld is not a state", value);
        return NULL;
    }
    if (value == START) {
        Py_INCREF(node);
        return node;
    }
    ViewObject *v = view_of(self, node);
    if (!v)
        return NULL;
    PyObject *after = NULL;
    if (value >= v->n_rows)
        PyErr_Format(PyExc_ValueError, "lexer state %ld is not a row of its tables (%zd rows)", value, v->n_rows);
    else
        after = commit(self, v, node, (int32_t)value);
    Py_DECREF(v);
    return after;
}

static PyObject *Loop_commit(LoopObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "commit(node, q) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    return end_lexeme(self, args[0], args[1]);
}

static PyObject *Loop_can_end(LoopObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "can_end(node, q) takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *end = end_lexeme(self, args[0], args[1]), *accepting;
    if (!end)
        return NULL;
    if (end == Py_None) {
        Py_DECREF(end);
        Py_RETURN_FALSE;
    }
    accepting = PyObject_GetAttr(end, s_accepting);
    Py_DECREF(end);
    if (!accepting)
        return NULL;
    int truth = PyObject_IsTrue(accepting);
    Py_DECREF(accepting);
    if (truth < 0)
        return NULL;
    return PyBool_FromLong(truth);
}

static PyMethodDef Loop_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Loop_scan, METH_FASTCALL,
     "scan(node, q, data) -> (node, q, consumed): feed bytes until one is refused; the state before it."},
    {"feed", (PyCFunction)(void (*)(void))Loop_feed, METH_FASTCALL,
     "feed(node, q, data) -> (node, q), or None if some byte makes the text stop being a viable prefix."},
    {"commit", (PyCFunction)(void (*)(void))Loop_commit, METH_FASTCALL,
     "commit(node, q) -> node or None: the parser node after the lexeme pending in state q ends (node at START)."},
    {"can_end", (PyCFunction)(void (*)(void))Loop_can_end, METH_FASTCALL,
     "can_end(node, q) -> bool: whether the text may end here (the pending lexeme commits, the parser accepts)."},
    {NULL}};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._scan.ByteLoop",
    .tp_basicsize = sizeof(LoopObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "ByteLoop(tables_of, priority, ignore, basic): a lexer's byte loop against parser nodes "
              "(see pda.kernels.scan).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Loop_init,
    .tp_traverse = (traverseproc)Loop_traverse,
    .tp_clear = (inquiry)Loop_clear,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_methods = Loop_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pda.kernels._scan", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__scan(void)
{
#define INTERN(name)                                     \
    if (!(s_##name = PyUnicode_InternFromString(#name))) \
        return NULL;
    INTERN(allowed)
    INTERN(accepting)
    INTERN(advance)
    INTERN(row)
    INTERN(trans)
    INTERN(cls)
    INTERN(start)
    INTERN(extends)
    INTERN(packed_rows)
#undef INTERN
    if (PyType_Ready(&ViewType) < 0 || PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&LoopType);
    if (PyModule_AddObject(m, "ByteLoop", (PyObject *)&LoopType) < 0) {
        Py_DECREF(&LoopType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

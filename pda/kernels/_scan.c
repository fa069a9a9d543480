/* pda.kernels._scan: the scanner's byte loop (pda/scanner.py), compiled.
 *
 * Written against the plain Python C API, like the other kernels; pda/kernels/scan.py is the
 * Python side and documents the interface, pda.scanner.Scanner subclasses `ByteLoop`, and
 * pda.reference.reference_scan is the plain-Python loop the tests compare it to.
 *
 * ByteLoop(tables_of, best, ignore): tables_of(candidates) is a candidate set's LexerTables
 *     (`Lexer.tables`), best(matched) the top-priority terminals among `matched` (`Lexer.best`),
 *     ignore the %ignore terminals (an int bitmask).
 *     scan(node, q, data) -> (node, q, consumed); feed(node, q, data) -> (node, q) or None.
 * View (internal): one node `allowed` set's tables as the loop reads them: the transitions
 *     (`trans`, int32 [rows, classes], read in place), `cls` copied, `start`, the
 *     `live_flags`/`extends` objects (a bytearray or a tuple of bools, read in place), and a
 *     memo of commits per lexer state: the terminals the lexeme is typed as, and whether
 *     the parser can take them (`terminals & allowed`).
 *
 * Invariants:
 * - `scan` is `reference_scan` step for step: the same transitions, the same `live_flag`,
 *   `row`, `accept_at`, `best` and `advance` calls where the Python loop needs them (a
 *   negative transition is a lazy entry not filled yet, an `UNKNOWN` flag a view's state not
 *   worked out yet: both asked of the tables in Python, which fill them in the shared
 *   arrays). What a call raises (LimitExceeded) propagates unchanged.
 * - Views are keyed by the value of a node's `allowed` (so `terminals & allowed` is fixed per
 *   view and state); at most MAX_VIEWS are kept (all forgotten past that: one lookup each
 *   to make again). A view holds references to its tables and their arrays, never to nodes.
 * - The loop holds the GIL (it calls Python for the rare events above). Across such a call it
 *   holds references (never raw pointers into a memo or a bytearray), so another thread's
 *   scan on the same loop is safe.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buffer_format.h"

#define START 0   /* no lexeme in progress (pda.lexer.lexer.START) */
#define UNKNOWN 2 /* a live flag not worked out yet (pda.regex.product.UNKNOWN) */
#define MAX_VIEWS 4096

static PyObject *s_allowed, *s_advance, *s_accept_at, *s_live_flag, *s_row, *s_trans, *s_cls, *s_start,
    *s_live_flags, *s_extends, *s_packed_rows;

/* ---------------------------------------------------------------- View */

typedef struct {
    int32_t q;
    int32_t advances;
    PyObject *terms; /* NULL: an empty slot; Py_None: the lexeme matches nothing */
} Ending;

typedef struct {
    PyObject_HEAD
    PyObject *tables, *allowed, *live, *extends; /* extends: NULL where it is `live` */
    Py_buffer trans;
    const int32_t *rows;
    Py_ssize_t n_rows, n_classes;
    int32_t start;
    int32_t cls[256];
    /* The per-state live terminals (`packed_rows`), read when a flag is `UNKNOWN`; NULL until then. */
    Py_buffer live_bits;
    const uint64_t *bits;
    uint64_t *candidates;
    Py_ssize_t n_bit_rows, words;
    Ending *ends;
    int32_t ends_cap, ends_n;
} ViewObject;

static PyTypeObject ViewType;

static int View_traverse(ViewObject *v, visitproc visit, void *arg)
{
    Py_VISIT(v->tables);
    Py_VISIT(v->live);
    Py_VISIT(v->extends);
    return 0;
}

static int View_clear(ViewObject *v)
{
    Py_CLEAR(v->tables);
    Py_CLEAR(v->allowed);
    Py_CLEAR(v->live);
    Py_CLEAR(v->extends);
    return 0;
}

static void View_dealloc(ViewObject *v)
{
    PyObject_GC_UnTrack(v);
    if (v->rows)
        PyBuffer_Release(&v->trans);
    if (v->bits)
        PyBuffer_Release(&v->live_bits);
    PyMem_Free(v->candidates);
    for (int32_t i = 0; i < v->ends_cap; i++)
        Py_XDECREF(v->ends[i].terms);
    PyMem_Free(v->ends);
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

/* A flags object's entry q: 0, 1, or UNKNOWN (also past its end: `live_flag` decides); -1 with an exception. */
static int flag_at(PyObject *flags, int32_t q)
{
    if (PyByteArray_CheckExact(flags))
        return q < PyByteArray_GET_SIZE(flags) ? ((unsigned char *)PyByteArray_AS_STRING(flags))[q] : UNKNOWN;
    if (q < PyTuple_GET_SIZE(flags))
        return PyObject_IsTrue(PyTuple_GET_ITEM(flags, q));
    return UNKNOWN;
}

static int check_flags(PyObject *flags, const char *what)
{
    if (PyByteArray_CheckExact(flags) || PyTuple_CheckExact(flags))
        return 0;
    PyErr_Format(PyExc_TypeError, "the tables' %s must be a bytearray or a tuple, got %.100s", what,
                 Py_TYPE(flags)->tp_name);
    return -1;
}

/* The view of `tables` for a node whose allowed set is `allowed` (a new reference), or NULL. */
static ViewObject *view_new(PyObject *tables, PyObject *allowed)
{
    ViewObject *v = PyObject_GC_New(ViewObject, &ViewType);
    PyObject *trans = NULL, *cls = NULL, *start = NULL;
    if (!v)
        return NULL;
    v->rows = NULL;
    v->bits = NULL;
    v->candidates = NULL;
    v->ends = NULL;
    v->ends_cap = v->ends_n = 0;
    v->live = v->extends = NULL;
    Py_INCREF(tables);
    v->tables = tables;
    Py_INCREF(allowed);
    v->allowed = allowed;
    PyObject_GC_Track(v);
    if (!(trans = PyObject_GetAttr(tables, s_trans)) || !(cls = PyObject_GetAttr(tables, s_cls)) ||
        !(start = PyObject_GetAttr(tables, s_start)) || !(v->live = PyObject_GetAttr(tables, s_live_flags)) ||
        !(v->extends = PyObject_GetAttr(tables, s_extends)))
        goto fail;
    if (check_flags(v->live, "live_flags") < 0 || check_flags(v->extends, "extends") < 0)
        goto fail;
    if (v->extends == v->live)
        Py_CLEAR(v->extends);
    if (PyObject_GetBuffer(trans, &v->trans, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto fail;
    v->rows = v->trans.buf;
    if (v->trans.ndim != 2 || !is_int32_format(v->trans.format, v->trans.itemsize)) {
        PyErr_SetString(PyExc_TypeError, "the tables' trans must be a 2-D int32 array");
        goto fail;
    }
    v->n_rows = v->trans.shape[0];
    v->n_classes = v->trans.shape[1];
    long s = PyLong_AsLong(start);
    if (s == -1 && PyErr_Occurred())
        goto fail;
    if (s < 0 || s >= v->n_rows) {
        PyErr_Format(PyExc_ValueError, "the tables' start %ld is not a row", s);
        goto fail;
    }
    v->start = (int32_t)s;
    if (!PyTuple_CheckExact(cls) || PyTuple_GET_SIZE(cls) != 256) {
        PyErr_SetString(PyExc_TypeError, "the tables' cls must be a tuple of 256 byte classes");
        goto fail;
    }
    for (int b = 0; b < 256; b++) {
        long c = PyLong_AsLong(PyTuple_GET_ITEM(cls, b));
        if (c == -1 && PyErr_Occurred())
            goto fail;
        if (c < 0 || c >= v->n_classes) {
            PyErr_Format(PyExc_ValueError, "byte %d's class %ld is not a column of trans", b, c);
            goto fail;
        }
        v->cls[b] = (int32_t)c;
    }
    Py_DECREF(trans);
    Py_DECREF(cls);
    Py_DECREF(start);
    return v;
fail:
    Py_XDECREF(trans);
    Py_XDECREF(cls);
    Py_XDECREF(start);
    Py_DECREF(v);
    return NULL;
}

static Ending *ending_slot(Ending *ends, int32_t cap, int32_t q)
{
    uint32_t i = ((uint32_t)q * 2654435761u) & (uint32_t)(cap - 1);
    while (ends[i].terms && ends[i].q != q)
        i = (i + 1) & (uint32_t)(cap - 1);
    return &ends[i];
}

/* Remember the commit at q (steals `terms`); 0, or -1 with an exception. */
static int ending_put(ViewObject *v, int32_t q, PyObject *terms, int advances)
{
    if (2 * (v->ends_n + 1) > v->ends_cap) {
        int32_t cap = v->ends_cap ? 2 * v->ends_cap : 16;
        Ending *grown = PyMem_Calloc((size_t)cap, sizeof(Ending));
        if (!grown) {
            Py_DECREF(terms);
            PyErr_NoMemory();
            return -1;
        }
        for (int32_t i = 0; i < v->ends_cap; i++)
            if (v->ends[i].terms)
                *ending_slot(grown, cap, v->ends[i].q) = v->ends[i];
        PyMem_Free(v->ends);
        v->ends = grown;
        v->ends_cap = cap;
    }
    Ending *e = ending_slot(v->ends, v->ends_cap, q);
    if (e->terms) { /* another thread put it while this one was in Python: the same value */
        Py_DECREF(terms);
        return 0;
    }
    e->q = q;
    e->terms = terms;
    e->advances = advances;
    v->ends_n++;
    return 0;
}

/* ---------------------------------------------------------------- ByteLoop */

typedef struct {
    PyObject_HEAD
    PyObject *tables_of, *best, *ignore, *views;
} LoopObject;

static int Loop_traverse(LoopObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tables_of);
    Py_VISIT(self->best);
    Py_VISIT(self->views);
    return 0;
}

static int Loop_clear(LoopObject *self)
{
    Py_CLEAR(self->tables_of);
    Py_CLEAR(self->best);
    Py_CLEAR(self->ignore);
    Py_CLEAR(self->views);
    return 0;
}

static void Loop_dealloc(LoopObject *self)
{
    PyObject_GC_UnTrack(self);
    Loop_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Loop_init(LoopObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tables_of", "best", "ignore", NULL};
    PyObject *tables_of, *best, *ignore, *views;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!", kwlist, &tables_of, &best, &PyLong_Type, &ignore))
        return -1;
    if (!(views = PyDict_New()))
        return -1;
    Py_INCREF(tables_of);
    Py_INCREF(best);
    Py_INCREF(ignore);
    Py_XSETREF(self->tables_of, tables_of);
    Py_XSETREF(self->best, best);
    Py_XSETREF(self->ignore, ignore);
    Py_XSETREF(self->views, views);
    return 0;
}

/* The view for `node`'s candidate set (a new reference), or NULL. */
static ViewObject *view_of(LoopObject *self, PyObject *node)
{
    PyObject *allowed = PyObject_GetAttr(node, s_allowed), *candidates, *tables;
    ViewObject *v;
    if (!allowed)
        return NULL;
    v = (ViewObject *)PyDict_GetItemWithError(self->views, allowed);
    if (v || PyErr_Occurred()) {
        Py_XINCREF(v);
        Py_DECREF(allowed);
        return v;
    }
    candidates = PyNumber_Or(allowed, self->ignore);
    tables = candidates ? PyObject_CallOneArg(self->tables_of, candidates) : NULL;
    Py_XDECREF(candidates);
    v = tables ? view_new(tables, allowed) : NULL;
    Py_XDECREF(tables);
    if (v && PyDict_GET_SIZE(self->views) >= MAX_VIEWS)
        PyDict_Clear(self->views);
    if (v && PyDict_SetItem(self->views, allowed, (PyObject *)v) < 0)
        Py_CLEAR(v);
    Py_DECREF(allowed);
    return v;
}

/* 1 if a buffer format names a native unsigned 8-byte integer. */
static int is_uint64_format(const char *format, Py_ssize_t itemsize)
{
    if (format == NULL || itemsize != 8)
        return 0;
    format = native_code(format);
    return (format[0] == 'Q' || format[0] == 'L') && format[1] == '\0';
}

/* Take the tables' per-state live terminals and candidate words (`packed_rows()`'s first two); 0, or -1. */
static int read_live_bits(ViewObject *v)
{
    PyObject *packed = PyObject_CallMethodNoArgs(v->tables, s_packed_rows);
    Py_buffer cand;
    if (!packed)
        return -1;
    if (!PyTuple_Check(packed) || PyTuple_GET_SIZE(packed) < 2) {
        Py_DECREF(packed);
        PyErr_SetString(PyExc_TypeError, "the tables' packed_rows() must be a tuple (live_bits, candidates, ...)");
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(packed, 0), &v->live_bits, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        Py_DECREF(packed);
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(packed, 1), &cand, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&v->live_bits);
        Py_DECREF(packed);
        return -1;
    }
    Py_DECREF(packed); /* the buffers keep their arrays alive */
    int ok = v->live_bits.ndim == 2 && cand.ndim == 1 && is_uint64_format(v->live_bits.format, v->live_bits.itemsize) &&
             is_uint64_format(cand.format, cand.itemsize) && cand.shape[0] == v->live_bits.shape[1];
    if (ok && (v->candidates = PyMem_Malloc((size_t)(cand.shape[0] ? cand.shape[0] : 1) * sizeof(uint64_t))))
        memcpy(v->candidates, cand.buf, (size_t)cand.shape[0] * sizeof(uint64_t));
    PyBuffer_Release(&cand);
    if (!ok || !v->candidates) {
        PyBuffer_Release(&v->live_bits);
        if (ok)
            PyErr_NoMemory();
        else
            PyErr_SetString(PyExc_TypeError, "the tables' live bits must be uint64 [rows, words] and their "
                                             "candidates uint64 [words]");
        return -1;
    }
    v->n_bit_rows = v->live_bits.shape[0];
    v->words = v->live_bits.shape[1];
    v->bits = v->live_bits.buf;
    return 0;
}

/* `tables.live_flag(q)` (q is no transition's START): whether a candidate is live at q, from the tables' live bits
 * (what `live_at` reads); 1, 0, or -1 with an exception. */
static int live_flag(ViewObject *v, int32_t q)
{
    int32_t r = q == START ? v->start : q;
    uint64_t any = 0;
    if (!v->bits && read_live_bits(v) < 0)
        return -1;
    if (r >= v->n_bit_rows) {
        PyErr_Format(PyExc_ValueError, "lexer state %d has no live bits (%zd rows)", (int)q, v->n_bit_rows);
        return -1;
    }
    const uint64_t *row = v->bits + (Py_ssize_t)r * v->words;
    for (Py_ssize_t k = 0; k < v->words; k++)
        any |= row[k] & v->candidates[k];
    return any != 0;
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
    if (q2 >= 0)
        return q2;
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
    if (value < 0 || value > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "lexer state %d's successor %ld is not a state", (int)q, value);
        return -1;
    }
    return (int32_t)value;
}

/* Whether a lexeme may go on into q2 (a successor of some state): 1, 0, or -1 with an exception. */
static int is_live(ViewObject *v, int32_t q2)
{
    int flag = flag_at(v->live, q2);
    return flag == UNKNOWN ? live_flag(v, q2) : flag;
}

/* The parser node after the lexeme in state q (not START) ends, with the node's view `v`: a new reference,
 * Py_None (a new reference) if it cannot end there, or NULL with an exception. `Scanner.commit`, memoised. */
static PyObject *commit(LoopObject *self, ViewObject *v, PyObject *node, int32_t q)
{
    Ending *e = v->ends ? ending_slot(v->ends, v->ends_cap, q) : NULL;
    PyObject *terms;
    int advances;
    if (!e || !e->terms) {
        PyObject *index = PyLong_FromLong(q), *matched;
        if (!index)
            return NULL;
        matched = PyObject_CallMethodOneArg(v->tables, s_accept_at, index);
        Py_DECREF(index);
        if (!matched)
            return NULL;
        int any = PyObject_IsTrue(matched);
        if (any <= 0) {
            Py_DECREF(matched);
            if (any < 0)
                return NULL;
            Py_INCREF(Py_None);
            terms = Py_None;
            advances = 0;
        } else {
            terms = PyObject_CallOneArg(self->best, matched);
            Py_DECREF(matched);
            if (!terms)
                return NULL;
            PyObject *meet = PyNumber_And(terms, v->allowed);
            advances = meet ? PyObject_IsTrue(meet) : -1;
            Py_XDECREF(meet);
            if (advances < 0) {
                Py_DECREF(terms);
                return NULL;
            }
        }
        Py_INCREF(terms);
        if (ending_put(v, q, terms, advances) < 0) {
            Py_DECREF(terms);
            return NULL;
        }
    } else {
        terms = e->terms;
        advances = e->advances;
        Py_INCREF(terms);
    }
    if (terms == Py_None)
        return terms;
    if (!advances) {
        Py_DECREF(terms);
        Py_INCREF(node);
        return node;
    }
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
    Py_INCREF(node);
    for (i = 0; i < n; i++) {
        unsigned char b = data[i];
        int32_t q2 = next_state(v, q, b);
        int live;
        if (q2 < 0 || (live = is_live(v, q2)) < 0)
            goto fail;
        if (live) {
            q = q2;
            continue;
        }
        if (q == START)
            break;
        if (v->extends) {
            int grows = flag_at(v->extends, q2);
            if (grows < 0)
                goto fail;
            if (grows)
                break;
        }
        PyObject *after = commit(self, v, node, q);
        if (!after)
            goto fail;
        if (after == Py_None) {
            Py_DECREF(after);
            break;
        }
        ViewObject *next = view_of(self, after);
        int32_t q3 = next ? next_state(next, START, b) : -1;
        if (q3 < 0 || (live = is_live(next, q3)) < 0) {
            Py_XDECREF(next);
            Py_DECREF(after);
            goto fail;
        }
        if (!live) {
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
    PyObject *result = Py_BuildValue("(Nin)", node, (int)q, consumed);
    return result;
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

static PyMethodDef Loop_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Loop_scan, METH_FASTCALL,
     "scan(node, q, data) -> (node, q, consumed): feed bytes until one is refused; the state before it."},
    {"feed", (PyCFunction)(void (*)(void))Loop_feed, METH_FASTCALL,
     "feed(node, q, data) -> (node, q), or None if some byte makes the text stop being a viable prefix."},
    {NULL}};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._scan.ByteLoop",
    .tp_basicsize = sizeof(LoopObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "ByteLoop(tables_of, best, ignore): a lexer's byte loop against parser nodes (see pda.kernels.scan).",
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
#define INTERN(name)                                              \
    if (!(s_##name = PyUnicode_InternFromString(#name)))          \
        return NULL;
    INTERN(allowed)
    INTERN(advance)
    INTERN(accept_at)
    INTERN(live_flag)
    INTERN(row)
    INTERN(trans)
    INTERN(cls)
    INTERN(start)
    INTERN(live_flags)
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

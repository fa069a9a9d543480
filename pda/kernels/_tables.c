/* pda.kernels._tables: the Earley parser's static tables from a grammar's rules as integer arrays.
 *
 * Written against the plain Python C API and the buffer protocol, like _product.c;
 * pda/kernels/tables.py is the Python side and documents the interface.
 *
 * A grammar here is S symbols (ids 0..S-1) and R rules: rule r is lhs[r] -> flat[o_r : o_r + lens[r]],
 * o_r = lens[0] + ... + lens[r - 1].
 *
 * fixpoint(lhs, flat, lens, holds) -> (holds, complete)
 *     int64 lhs [R], flat [sum lens], lens [R]; uint8/bool holds [S]. The least superset of `holds`
 *     closed under "a rule whose right-hand side symbols all hold makes its lhs hold", as bool bytes
 *     [S], and per rule whether its right-hand side symbols all hold then (bool bytes [R]). One pass
 *     over a worklist: each occurrence of a symbol is visited once, when the symbol joins.
 *
 * layout(n_terminals, lhs, flat, lens, n_symbols) -> (rule_start, run_end, next_sym, lhs_of, is_end,
 *         penultimate, step_ptr, step_to, starts_ptr, starts, closure_ptr, closure)
 *     The per-position arrays of pda/parser/tables.py for rules whose lhs are nonterminals (ids
 *     n_terminals..S-1). Dot positions: rule r's are rule_start[r] .. rule_start[r] + lens[r] (int64
 *     [R + 1]). Per position p (P of them): next_sym int32 (the symbol after the dot, -1 at a rule's
 *     end), lhs_of int32, is_end and penultimate (bool), run_end int64 (the last position reached from
 *     p over nullable symbols); step (CSR, int32): p + 1 .. run_end[p + 1], none at a rule's end. Per
 *     nonterminal a (index a - n_terminals): starts (CSR, int32), its rules' start runs in rule order;
 *     closure (CSR, int32, ascending), a and every nonterminal predicted from it, transitively.
 *     Nullable symbols are the fixpoint above from nothing.
 *
 * build(terminal_names, lhs, rhs, start) -> (0, nonterminal_names, lhs, flat, layout) | (1, name) | (2, None)
 *     The same tables from rules given by name, as pda/parser/tables.py lays them out: list[str]
 *     terminal_names (distinct), list[str] lhs [R], list[tuple[str, ...]] rhs [R], str start. Names are
 *     numbered (terminals 0..T-1, then the others as met, rule by rule, lhs first; one dict lookup per
 *     occurrence), rules with an unproductive symbol dropped (the fixpoint from the terminals), and the
 *     kept nonterminals renumbered T.. as: start, the others in sorted name order, then "$start"; the kept
 *     rules in order, then $start -> start, are laid out. Returns 0, the nonterminal names (list[str]),
 *     lhs and flat (int64 bytes, the renumbered kept rules with $start's last) and layout's tuple; (1,
 *     name) when a rule's lhs is a terminal (the first such rule's); (2, None) when start has no
 *     productive rule (or names none). As Python calls, dict passes and numpy rounds this was ~0.3 ms of
 *     a small JSON Schema's cold compile, most of it numpy's dispatch and Python touching each name again.
 *
 * Every index read from the inputs is checked first (ValueError); the loops run without the GIL (but
 * build's reading of names, which holds it). A table past int32 CSR pointers (or out of memory) is
 * MemoryError; in build, a name that is not a str, or a right-hand side that is not a tuple, is TypeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_format.h"

static int get_buffer(PyObject *obj, Py_buffer *view, const char *format, Py_ssize_t itemsize, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_ND | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize || view->format == NULL || strchr(format, native_code(view->format)[0]) == NULL) {
        PyErr_Format(PyExc_ValueError, "%s has the wrong dtype", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A grammar's rules (lhs, flat, lens), acquired and checked: int64 arrays, lens non-negative and summing
 * to len(flat), every symbol in [lo_lhs, n) on the left and [0, n) on the right. 0, or -1 with an error
 * set and nothing held. */
static int open_rules(PyObject *const *args, Py_buffer *lv, Py_buffer *fv, Py_buffer *nv, int64_t lo_lhs, int64_t n,
                      int64_t *n_rules, int64_t *n_flat)
{
    if (get_buffer(args[0], lv, "qlL", 8, "lhs") < 0)
        return -1;
    if (get_buffer(args[1], fv, "qlL", 8, "flat") < 0) {
        PyBuffer_Release(lv);
        return -1;
    }
    if (get_buffer(args[2], nv, "qlL", 8, "lens") < 0) {
        PyBuffer_Release(lv);
        PyBuffer_Release(fv);
        return -1;
    }
    const int64_t *lhs = lv->buf, *flat = fv->buf, *lens = nv->buf;
    int64_t r, i, total = 0;
    *n_rules = lv->len / 8;
    *n_flat = fv->len / 8;
    const char *bad = nv->len != lv->len ? "lens must have one entry per rule" : NULL;
    for (r = 0; bad == NULL && r < *n_rules; r++) {
        if (lhs[r] < lo_lhs || lhs[r] >= n)
            bad = "lhs holds a symbol out of range";
        else if (lens[r] < 0 || (total += lens[r]) > *n_flat)
            bad = "lens must be non-negative and sum to len(flat)";
    }
    if (bad == NULL && total != *n_flat)
        bad = "lens must be non-negative and sum to len(flat)";
    for (i = 0; bad == NULL && i < *n_flat; i++)
        if (flat[i] < 0 || flat[i] >= n)
            bad = "flat holds a symbol out of range";
    if (bad != NULL) {
        PyErr_SetString(PyExc_ValueError, bad);
        PyBuffer_Release(lv);
        PyBuffer_Release(fv);
        PyBuffer_Release(nv);
        return -1;
    }
    return 0;
}

/* The least fixpoint (see the header) in place: holds [n] grows, complete [n_rules] is written.
 * 0, or -1 out of memory. */
static int grow_holds(const int64_t *lhs, const int64_t *flat, const int64_t *lens, int64_t n_rules, int64_t n,
                      uint8_t *holds, uint8_t *complete)
{
    int64_t r, i, j, o, top = 0, status = -1;
    int64_t *missing = calloc((size_t)(n_rules ? n_rules : 1), sizeof(int64_t)); /* per rule: symbols not holding */
    int64_t *users_ptr = calloc((size_t)n + 1, sizeof(int64_t));                 /* per symbol: its occurrences' rules */
    int64_t *users = NULL, *stack = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (missing == NULL || users_ptr == NULL || stack == NULL)
        goto done;
    for (r = 0, o = 0; r < n_rules; o += lens[r++])
        for (i = o; i < o + lens[r]; i++)
            if (!holds[flat[i]]) {
                missing[r]++;
                users_ptr[flat[i] + 1]++;
            }
    for (j = 0; j < n; j++)
        users_ptr[j + 1] += users_ptr[j];
    users = malloc((size_t)(users_ptr[n] ? users_ptr[n] : 1) * sizeof(int64_t));
    if (users == NULL)
        goto done;
    for (r = 0, o = 0; r < n_rules; o += lens[r++])
        for (i = o; i < o + lens[r]; i++)
            if (!holds[flat[i]])
                users[users_ptr[flat[i]]++] = r; /* users_ptr[s] now ends s's list (starts s + 1's) */
    for (r = 0; r < n_rules; r++)
        if (missing[r] == 0 && !holds[lhs[r]]) {
            holds[lhs[r]] = 1;
            stack[top++] = lhs[r];
        }
    while (top > 0) {
        int64_t s = stack[--top];
        for (i = s ? users_ptr[s - 1] : 0; i < users_ptr[s]; i++) {
            r = users[i];
            if (--missing[r] == 0 && !holds[lhs[r]]) {
                holds[lhs[r]] = 1;
                stack[top++] = lhs[r];
            }
        }
    }
    for (r = 0; r < n_rules; r++)
        complete[r] = missing[r] == 0;
    status = 0;
done:
    free(missing);
    free(users_ptr);
    free(users);
    free(stack);
    return (int)status;
}

static PyObject *fixpoint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer lv, fv, nv, hv;
    int64_t n_rules, n_flat, n;
    PyObject *holds = NULL, *complete = NULL, *result = NULL;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "fixpoint(lhs, flat, lens, holds) takes 4 arguments");
        return NULL;
    }
    if (get_buffer(args[3], &hv, "BB?", 1, "holds") < 0)
        return NULL;
    n = hv.len;
    if (open_rules(args, &lv, &fv, &nv, 0, n, &n_rules, &n_flat) < 0) {
        PyBuffer_Release(&hv);
        return NULL;
    }
    /* new objects, written below (from a string, CPython would hand out its shared one-byte objects) */
    holds = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    complete = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n_rules);
    if (holds != NULL && complete != NULL) {
        int status;
        uint8_t *h = (uint8_t *)PyBytes_AS_STRING(holds);
        for (int64_t s = 0; s < n; s++)
            h[s] = ((const uint8_t *)hv.buf)[s] != 0;
        Py_BEGIN_ALLOW_THREADS
        status = grow_holds(lv.buf, fv.buf, nv.buf, n_rules, n, h, (uint8_t *)PyBytes_AS_STRING(complete));
        Py_END_ALLOW_THREADS
        if (status < 0)
            PyErr_NoMemory();
        else
            result = PyTuple_Pack(2, holds, complete);
    }
    Py_XDECREF(holds);
    Py_XDECREF(complete);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&fv);
    PyBuffer_Release(&nv);
    PyBuffer_Release(&hv);
    return result;
}

/* The arrays layout returns, allocated together. */
typedef struct {
    int64_t *rule_start, *run_end;
    int32_t *next_sym, *lhs_of, *step_ptr, *step_to, *starts_ptr, *starts, *closure_ptr, *closure;
    uint8_t *is_end, *penultimate;
    int64_t n_pos, n_step, n_starts, n_closure;
} Layout;

static void layout_free(Layout *out)
{
    free(out->rule_start);
    free(out->run_end);
    free(out->next_sym);
    free(out->lhs_of);
    free(out->step_ptr);
    free(out->step_to);
    free(out->starts_ptr);
    free(out->starts);
    free(out->closure_ptr);
    free(out->closure);
    free(out->is_end);
    free(out->penultimate);
}

static int ascending(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Per nonterminal a, a and every nonterminal reached over `direct` edges (CSR, local ids), ascending,
 * as CSR rows: one depth-first search per node, each marking with its own stamp. 0, or -1 out of memory. */
static int closures(int64_t m, const int64_t *edge_ptr, const int32_t *edge, Layout *out)
{
    int64_t a, i, cap = 4 * (m ? m : 1), n = 0;
    int64_t *stamp = malloc((size_t)(m ? m : 1) * sizeof(int64_t));
    int32_t *stack = malloc((size_t)(m ? m : 1) * sizeof(int32_t));
    out->closure_ptr = malloc((size_t)(m + 1) * sizeof(int32_t));
    out->closure = malloc((size_t)cap * sizeof(int32_t));
    if (stamp == NULL || stack == NULL || out->closure_ptr == NULL || out->closure == NULL) {
        free(stamp);
        free(stack);
        return -1;
    }
    for (a = 0; a < m; a++)
        stamp[a] = -1;
    out->closure_ptr[0] = 0;
    for (a = 0; a < m; a++) {
        int64_t top = 0, first = n;
        stamp[a] = a;
        stack[top++] = (int32_t)a;
        while (top > 0) {
            int32_t b = stack[--top];
            if (n == cap) {
                int32_t *grown = n < INT32_MAX ? realloc(out->closure, (size_t)(cap *= 2) * sizeof(int32_t)) : NULL;
                if (grown == NULL) {
                    free(stamp);
                    free(stack);
                    return -1;
                }
                out->closure = grown;
            }
            out->closure[n++] = b;
            for (i = edge_ptr[b]; i < edge_ptr[b + 1]; i++)
                if (stamp[edge[i]] != a) {
                    stamp[edge[i]] = a;
                    stack[top++] = edge[i];
                }
        }
        qsort(out->closure + first, (size_t)(n - first), sizeof(int32_t), ascending);
        out->closure_ptr[a + 1] = (int32_t)n;
    }
    out->n_closure = n;
    free(stamp);
    free(stack);
    return 0;
}

/* The layout of the header's comment into `out` (closure ids local, 0..m-1, until the caller adds
 * n_terminals). 0, or -1 out of memory. */
static int lay_out(int64_t t, int64_t n_symbols, const int64_t *lhs, const int64_t *flat, const int64_t *lens,
                   int64_t n_rules, Layout *out)
{
    int64_t m = n_symbols - t, r, p, a, i, o, n_pos = 0;
    int status = -1;
    uint8_t *nullable = calloc((size_t)(n_symbols ? n_symbols : 1), 1), *complete = malloc((size_t)(n_rules ? n_rules : 1));
    int64_t *edge_ptr = NULL;
    int32_t *edge = NULL;
    if (nullable == NULL || complete == NULL || grow_holds(lhs, flat, lens, n_rules, n_symbols, nullable, complete) < 0)
        goto done;
    for (r = 0; r < n_rules; r++)
        n_pos += lens[r] + 1;
    out->n_pos = n_pos;
    out->rule_start = malloc((size_t)(n_rules + 1) * sizeof(int64_t));
    out->run_end = malloc((size_t)(n_pos ? n_pos : 1) * sizeof(int64_t));
    out->next_sym = malloc((size_t)(n_pos ? n_pos : 1) * sizeof(int32_t));
    out->lhs_of = malloc((size_t)(n_pos ? n_pos : 1) * sizeof(int32_t));
    out->is_end = malloc((size_t)(n_pos ? n_pos : 1));
    out->penultimate = malloc((size_t)(n_pos ? n_pos : 1));
    out->step_ptr = malloc((size_t)(n_pos + 1) * sizeof(int32_t));
    out->starts_ptr = calloc((size_t)(m + 1), sizeof(int32_t));
    if (!out->rule_start || !out->run_end || !out->next_sym || !out->lhs_of || !out->is_end || !out->penultimate
        || !out->step_ptr || !out->starts_ptr)
        goto done;
    /* positions, then run_end backwards: a position over a nullable symbol reaches what the next one does */
    for (r = 0, p = 0, o = 0; r < n_rules; o += lens[r++]) {
        out->rule_start[r] = p;
        for (i = 0; i <= lens[r]; i++, p++) {
            out->next_sym[p] = i < lens[r] ? (int32_t)flat[o + i] : -1;
            out->lhs_of[p] = (int32_t)lhs[r];
            out->is_end[p] = i == lens[r];
            out->penultimate[p] = i == lens[r] - 1;
        }
    }
    out->rule_start[n_rules] = p;
    for (p = n_pos - 1; p >= 0; p--)
        out->run_end[p] = !out->is_end[p] && nullable[out->next_sym[p]] ? out->run_end[p + 1] : p;
    /* step[p]: p + 1 .. run_end[p + 1] */
    out->step_ptr[0] = 0;
    for (p = 0, i = 0; p < n_pos; p++) {
        i += out->is_end[p] ? 0 : out->run_end[p + 1] - p;
        if (i > INT32_MAX) /* the CSR's int32 pointers cannot hold it */
            goto done;
        out->step_ptr[p + 1] = (int32_t)i;
    }
    out->n_step = i;
    out->step_to = malloc((size_t)(out->n_step ? out->n_step : 1) * sizeof(int32_t));
    if (out->step_to == NULL)
        goto done;
    for (p = 0, i = 0; p < n_pos; p++)
        if (!out->is_end[p])
            for (int64_t q = p + 1; q <= out->run_end[p + 1]; q++)
                out->step_to[i++] = (int32_t)q;
    /* starts: rules grouped by lhs (a counting sort, rule order kept), each its start run */
    for (r = 0; r < n_rules; r++) {
        int64_t s = out->rule_start[r];
        out->starts_ptr[lhs[r] - t + 1] += (int32_t)(out->run_end[s] - s + 1);
    }
    for (a = 0; a < m; a++)
        out->starts_ptr[a + 1] += out->starts_ptr[a];
    out->n_starts = out->starts_ptr[m];
    out->starts = malloc((size_t)(out->n_starts ? out->n_starts : 1) * sizeof(int32_t));
    edge_ptr = calloc((size_t)(m + 1), sizeof(int64_t));
    edge = malloc((size_t)(out->n_starts ? out->n_starts : 1) * sizeof(int32_t));
    int64_t *fill = calloc((size_t)(m ? m : 1), sizeof(int64_t));
    if (out->starts == NULL || edge_ptr == NULL || edge == NULL || fill == NULL) {
        free(fill);
        goto done;
    }
    for (a = 0; a < m; a++)
        fill[a] = out->starts_ptr[a];
    for (r = 0; r < n_rules; r++) {
        int64_t s = out->rule_start[r];
        for (p = s; p <= out->run_end[s]; p++)
            out->starts[fill[lhs[r] - t]++] = (int32_t)p;
    }
    free(fill);
    /* direct predictions: the nonterminals after the dot at a nonterminal's start positions */
    for (a = 0, i = 0; a < m; a++) {
        edge_ptr[a] = i;
        for (int64_t j = out->starts_ptr[a]; j < out->starts_ptr[a + 1]; j++) {
            int32_t b = out->next_sym[out->starts[j]];
            if (b >= t)
                edge[i++] = (int32_t)(b - t);
        }
    }
    edge_ptr[m] = i;
    if (closures(m, edge_ptr, edge, out) < 0)
        goto done;
    for (i = 0; i < out->n_closure; i++)
        out->closure[i] += (int32_t)t;
    status = 0;
done:
    free(nullable);
    free(complete);
    free(edge_ptr);
    free(edge);
    return status;
}

/* layout's result tuple of bytes from `out` (m nonterminals): a new reference, or NULL. */
static PyObject *layout_value(const Layout *out, int64_t n_rules, int64_t m)
{
    int64_t P = out->n_pos;
    return Py_BuildValue("(y#y#y#y#y#y#y#y#y#y#y#y#)",
                         (const char *)out->rule_start, (Py_ssize_t)((n_rules + 1) * 8),
                         (const char *)out->run_end, (Py_ssize_t)(P * 8),
                         (const char *)out->next_sym, (Py_ssize_t)(P * 4),
                         (const char *)out->lhs_of, (Py_ssize_t)(P * 4),
                         (const char *)out->is_end, (Py_ssize_t)P,
                         (const char *)out->penultimate, (Py_ssize_t)P,
                         (const char *)out->step_ptr, (Py_ssize_t)((P + 1) * 4),
                         (const char *)out->step_to, (Py_ssize_t)(out->n_step * 4),
                         (const char *)out->starts_ptr, (Py_ssize_t)((m + 1) * 4),
                         (const char *)out->starts, (Py_ssize_t)(out->n_starts * 4),
                         (const char *)out->closure_ptr, (Py_ssize_t)((m + 1) * 4),
                         (const char *)out->closure, (Py_ssize_t)(out->n_closure * 4));
}

static PyObject *layout(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer lv, fv, nv;
    int64_t t, n_symbols, n_rules, n_flat;
    Layout out;
    PyObject *result = NULL;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "layout(n_terminals, lhs, flat, lens, n_symbols) takes 5 arguments");
        return NULL;
    }
    t = PyLong_AsLongLong(args[0]);
    n_symbols = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (t < 0 || n_symbols < t || n_symbols > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "layout needs 0 <= n_terminals <= n_symbols < 2**31");
        return NULL;
    }
    if (open_rules(args + 1, &lv, &fv, &nv, t, n_symbols, &n_rules, &n_flat) < 0)
        return NULL;
    if (n_flat + n_rules > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more dot positions than int32 ids");
        goto release;
    }
    int status;
    memset(&out, 0, sizeof out);
    Py_BEGIN_ALLOW_THREADS
    status = lay_out(t, n_symbols, lv.buf, fv.buf, nv.buf, n_rules, &out);
    Py_END_ALLOW_THREADS
    if (status < 0)
        PyErr_NoMemory();
    else
        result = layout_value(&out, n_rules, n_symbols - t);
    layout_free(&out);
release:
    PyBuffer_Release(&lv);
    PyBuffer_Release(&fv);
    PyBuffer_Release(&nv);
    return result;
}

/* The id of `name` in `ids` (name -> int), numbering it next (appended to `names`) when it is new.
 * -1 with an error set when it is no str or out of memory. */
static int64_t symbol_id(PyObject *ids, PyObject *names, PyObject *name, const char *where)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "build: %s holds a %.100s, not a str", where, Py_TYPE(name)->tp_name);
        return -1;
    }
    PyObject *found = PyDict_GetItemWithError(ids, name); /* borrowed */
    if (found != NULL)
        return PyLong_AsLongLong(found);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t id = PyList_GET_SIZE(names);
    PyObject *number = PyLong_FromSsize_t(id);
    if (number == NULL)
        return -1;
    int status = PyDict_SetItem(ids, name, number);
    Py_DECREF(number);
    if (status < 0 || PyList_Append(names, name) < 0)
        return -1;
    return (int64_t)id;
}

/* The rules of build's arguments as ids (the header's numbering): `names` (list) and `ids` (dict) filled,
 * lhs/lens [n_rules] and flat [n_flat] malloc'd here (the caller frees them, also on failure). 0, or -1
 * with an error set. */
static int intern_rules(PyObject *terminal_names, PyObject *lhs_names, PyObject *rhs_tuples, PyObject *names,
                        PyObject *ids, int64_t **lhs, int64_t **lens, int64_t **flat, int64_t *n_rules, int64_t *n_flat)
{
    Py_ssize_t r, i, k = 0;
    if (!PyList_Check(terminal_names) || !PyList_Check(lhs_names) || !PyList_Check(rhs_tuples)) {
        PyErr_SetString(PyExc_TypeError, "build: terminal_names, lhs and rhs must be lists");
        return -1;
    }
    *n_rules = PyList_GET_SIZE(lhs_names);
    *n_flat = 0;
    if (PyList_GET_SIZE(rhs_tuples) != *n_rules) {
        PyErr_SetString(PyExc_ValueError, "build: lhs and rhs must have one entry per rule");
        return -1;
    }
    for (r = 0; r < *n_rules; r++) {
        PyObject *rhs = PyList_GET_ITEM(rhs_tuples, r);
        if (!PyTuple_Check(rhs)) {
            PyErr_Format(PyExc_TypeError, "build: rhs holds a %.100s, not a tuple", Py_TYPE(rhs)->tp_name);
            return -1;
        }
        *n_flat += PyTuple_GET_SIZE(rhs);
    }
    *lhs = malloc((size_t)(*n_rules + 1) * sizeof(int64_t));
    *lens = malloc((size_t)(*n_rules + 1) * sizeof(int64_t));
    *flat = malloc((size_t)(*n_flat + 1) * sizeof(int64_t));
    if (*lhs == NULL || *lens == NULL || *flat == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < PyList_GET_SIZE(terminal_names); i++)
        if (symbol_id(ids, names, PyList_GET_ITEM(terminal_names, i), "terminal_names") != i) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "build: terminal_names holds a name twice");
            return -1;
        }
    for (r = 0; r < *n_rules; r++) {
        PyObject *rhs = PyList_GET_ITEM(rhs_tuples, r);
        if (((*lhs)[r] = symbol_id(ids, names, PyList_GET_ITEM(lhs_names, r), "lhs")) < 0)
            return -1;
        (*lens)[r] = PyTuple_GET_SIZE(rhs);
        for (i = 0; i < (*lens)[r]; i++)
            if (((*flat)[k++] = symbol_id(ids, names, PyTuple_GET_ITEM(rhs, i), "rhs")) < 0)
                return -1;
    }
    return 0;
}

/* build's result once the rules are interned (ids in [0, S)): (1, name) for a rule defining a terminal,
 * (2, None) when the start symbol derives nothing, else (0, nonterminal names, lhs, flat, layout). A new
 * reference, or NULL with an error set. */
static PyObject *prune_and_lay_out(int64_t t, PyObject *names, PyObject *ids, PyObject *start, const int64_t *lhs_all,
                                   const int64_t *lens_all, const int64_t *flat_all, int64_t n_rules)
{
    int64_t S = PyList_GET_SIZE(names), r, i, o, k, n_kept = 0, kept_flat = 0, start_id = -1;
    PyObject *result = NULL, *nt_names = NULL, *dollar = NULL, *lhs_b = NULL, *flat_b = NULL, *laid = NULL;
    uint8_t *holds = calloc((size_t)S + 1, 1), *complete = malloc((size_t)n_rules + 1), *has_rule = calloc((size_t)S + 1, 1);
    int64_t *renumber = malloc(((size_t)S + 1) * sizeof(int64_t));
    Layout out;
    memset(&out, 0, sizeof out);
    if (holds == NULL || complete == NULL || has_rule == NULL || renumber == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (r = 0; r < n_rules; r++)
        if (lhs_all[r] < t) {
            result = Py_BuildValue("(iO)", 1, PyList_GET_ITEM(names, lhs_all[r]));
            goto done;
        }
    /* productive: the terminals, then every lhs of a rule whose symbols all are; a rule is kept when complete */
    memset(holds, 1, (size_t)t);
    int grown;
    Py_BEGIN_ALLOW_THREADS
    grown = grow_holds(lhs_all, flat_all, lens_all, n_rules, S, holds, complete);
    Py_END_ALLOW_THREADS
    if (grown < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (r = 0; r < n_rules; r++)
        if (complete[r]) {
            has_rule[lhs_all[r]] = 1;
            n_kept++;
            kept_flat += lens_all[r];
        }
    PyObject *found = PyDict_GetItemWithError(ids, start); /* borrowed */
    if (found == NULL && PyErr_Occurred())
        goto done;
    if (found != NULL)
        start_id = PyLong_AsLongLong(found);
    if (start_id < t || !has_rule[start_id]) {
        result = Py_BuildValue("(iO)", 2, Py_None);
        goto done;
    }
    /* nonterminals: the start symbol, the others kept by name, then $start; ids t.. in that order */
    has_rule[start_id] = 0;
    nt_names = PyList_New(0);
    if (nt_names == NULL)
        goto done;
    for (i = t; i < S; i++)
        if (has_rule[i] && PyList_Append(nt_names, PyList_GET_ITEM(names, i)) < 0)
            goto done;
    if (PyList_Sort(nt_names) < 0 || PyList_Insert(nt_names, 0, PyList_GET_ITEM(names, start_id)) < 0)
        goto done;
    for (i = 0; i < S; i++)
        renumber[i] = i < t ? i : -1;
    for (i = 0; i < PyList_GET_SIZE(nt_names); i++) {
        found = PyDict_GetItemWithError(ids, PyList_GET_ITEM(nt_names, i));
        if (found == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_SystemError, "build: a nonterminal lost its id");
            goto done;
        }
        renumber[PyLong_AsLongLong(found)] = t + i;
    }
    int64_t aug = t + PyList_GET_SIZE(nt_names);
    dollar = PyUnicode_FromString("$start");
    if (dollar == NULL || PyList_Append(nt_names, dollar) < 0)
        goto done;
    /* the kept rules in order, then $start -> start */
    lhs_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n_kept + 1) * 8));
    flat_b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((kept_flat + 1) * 8));
    int64_t *lens = malloc((size_t)(n_kept + 1) * sizeof(int64_t));
    if (lhs_b == NULL || flat_b == NULL || lens == NULL) {
        free(lens);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    int64_t *lhs = (int64_t *)PyBytes_AS_STRING(lhs_b), *flat = (int64_t *)PyBytes_AS_STRING(flat_b);
    for (r = 0, o = 0, k = 0, i = 0; r < n_rules; o += lens_all[r++])
        if (complete[r]) {
            lhs[i] = renumber[lhs_all[r]];
            lens[i++] = lens_all[r];
            for (int64_t j = o; j < o + lens_all[r]; j++)
                flat[k++] = renumber[flat_all[j]];
        }
    lhs[i] = aug;
    lens[i] = 1;
    flat[k] = t; /* the start symbol's new id */
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = lay_out(t, aug + 1, lhs, flat, lens, n_kept + 1, &out);
    Py_END_ALLOW_THREADS
    free(lens);
    if (status < 0) {
        PyErr_NoMemory();
        goto done;
    }
    laid = layout_value(&out, n_kept + 1, aug + 1 - t);
    if (laid != NULL)
        result = Py_BuildValue("(iOOOO)", 0, nt_names, lhs_b, flat_b, laid);
done:
    layout_free(&out);
    free(holds);
    free(complete);
    free(has_rule);
    free(renumber);
    Py_XDECREF(nt_names);
    Py_XDECREF(dollar);
    Py_XDECREF(lhs_b);
    Py_XDECREF(flat_b);
    Py_XDECREF(laid);
    return result;
}

static PyObject *build(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "build(terminal_names, lhs, rhs, start) takes 4 arguments");
        return NULL;
    }
    if (!PyUnicode_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "build: start must be a str");
        return NULL;
    }
    int64_t *lhs = NULL, *lens = NULL, *flat = NULL, n_rules, n_flat;
    PyObject *names = PyList_New(0), *ids = PyDict_New(), *result = NULL;
    if (names != NULL && ids != NULL
        && intern_rules(args[0], args[1], args[2], names, ids, &lhs, &lens, &flat, &n_rules, &n_flat) == 0) {
        if (PyList_GET_SIZE(names) >= INT32_MAX || n_flat + n_rules + 1 >= INT32_MAX)
            PyErr_SetString(PyExc_ValueError, "build: more symbols or dot positions than int32 ids");
        else
            result = prune_and_lay_out(PyList_GET_SIZE(args[0]), names, ids, args[3], lhs, lens, flat, n_rules);
    }
    free(lhs);
    free(lens);
    free(flat);
    Py_XDECREF(names);
    Py_XDECREF(ids);
    return result;
}

static PyMethodDef tables_methods[] = {
    {"fixpoint", (PyCFunction)(void (*)(void))fixpoint, METH_FASTCALL,
     "fixpoint(lhs, flat, lens, holds) -> (holds, complete): the symbols derived to hold (see the module source)."},
    {"layout", (PyCFunction)(void (*)(void))layout, METH_FASTCALL,
     "layout(n_terminals, lhs, flat, lens, n_symbols) -> the parser's per-position arrays (see the module source)."},
    {"build", (PyCFunction)(void (*)(void))build, METH_FASTCALL,
     "build(terminal_names, lhs, rhs, start) -> the tables of rules given by name (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef tables_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._tables",
    "The Earley parser's static tables from integer rules (pda/kernels/tables.py).", -1, tables_methods,
};

PyMODINIT_FUNC PyInit__tables(void)
{
    return PyModule_Create(&tables_module);
}

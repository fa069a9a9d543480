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
 * Every index read from the inputs is checked first (ValueError); the loops run without the GIL. A
 * table past int32 CSR pointers (or out of memory) is MemoryError.
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
    else {
        int64_t m = n_symbols - t, P = out.n_pos;
        result = Py_BuildValue("(y#y#y#y#y#y#y#y#y#y#y#y#)",
                               (const char *)out.rule_start, (Py_ssize_t)((n_rules + 1) * 8),
                               (const char *)out.run_end, (Py_ssize_t)(P * 8),
                               (const char *)out.next_sym, (Py_ssize_t)(P * 4),
                               (const char *)out.lhs_of, (Py_ssize_t)(P * 4),
                               (const char *)out.is_end, (Py_ssize_t)P,
                               (const char *)out.penultimate, (Py_ssize_t)P,
                               (const char *)out.step_ptr, (Py_ssize_t)((P + 1) * 4),
                               (const char *)out.step_to, (Py_ssize_t)(out.n_step * 4),
                               (const char *)out.starts_ptr, (Py_ssize_t)((m + 1) * 4),
                               (const char *)out.starts, (Py_ssize_t)(out.n_starts * 4),
                               (const char *)out.closure_ptr, (Py_ssize_t)((m + 1) * 4),
                               (const char *)out.closure, (Py_ssize_t)(out.n_closure * 4));
    }
    layout_free(&out);
release:
    PyBuffer_Release(&lv);
    PyBuffer_Release(&fv);
    PyBuffer_Release(&nv);
    return result;
}

static PyMethodDef tables_methods[] = {
    {"fixpoint", (PyCFunction)(void (*)(void))fixpoint, METH_FASTCALL,
     "fixpoint(lhs, flat, lens, holds) -> (holds, complete): the symbols derived to hold (see the module source)."},
    {"layout", (PyCFunction)(void (*)(void))layout, METH_FASTCALL,
     "layout(n_terminals, lhs, flat, lens, n_symbols) -> the parser's per-position arrays (see the module source)."},
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

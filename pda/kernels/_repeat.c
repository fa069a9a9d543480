/* pda.kernels._repeat: a counted repeat of a small DFA written out copy by copy, in one pass.
 *
 * Written against the plain Python C API and the buffer protocol, like _partition.c;
 * pda/kernels/repeat.py is the Python side and documents the interface.
 *
 * extend(prefix, prefix_accept, body, body_accept, lo, hi, out, out_accept) -> bool
 *     prefix: int32 [p, k], body: int32 [m, k], C-contiguous partial DFAs over the same k
 *     columns (-1: no transition), state 0 their start; prefix_accept uint8 [p], body_accept
 *     uint8 [m]. The body's start is never entered again (no entry of `body` is 0).
 *     lo >= 0, hi >= lo or -1 (unbounded). copies = hi, or max(lo, 1) when unbounded.
 *     out: writable int32 [p + copies (m - 1), k] (just [p, k] when copies is 0), out_accept
 *     writable uint8 of as many rows. Writes prefix · body{lo,hi} exactly as
 *     `pda.regex.compose.concat(prefix, repeat(body, lo, hi))` lays it out: the prefix's
 *     states first, then copy j of the body's states 1..m-1 (state s at p + j (m - 1) + s - 1);
 *     the prefix's accepting states read copy 0's start edges, and every copy's accepting
 *     states read the next copy's (the last copy's, when unbounded, its own again). An
 *     accepting state of the prefix accepts when lo is 0, one of copy j when j + 1 >= lo.
 *     Returns False (out then holds garbage) where the composition does not apply: the body's
 *     start accepts, or an accepting state of the body (or, with copies >= 1, of the prefix)
 *     reads a byte class that the body's start reads. Checks every input (ValueError) and
 *     writes without the GIL: O((p + copies m) k).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buffer_format.h"

/* A C-contiguous int32 table of `rows` x `cols` (cols < 0: any), writable if asked. */
static int get_table(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t rows, Py_ssize_t cols,
                     const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_ND | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0))
        < 0)
        return -1;
    if (!is_int32_format(view->format, view->itemsize) || view->ndim != 2 || (rows >= 0 && view->shape[0] != rows)
        || (cols >= 0 && view->shape[1] != cols) || view->shape[0] < 1) {
        PyErr_Format(PyExc_ValueError, "%s must be a 2-dimensional int32 table of the right shape", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A C-contiguous one-byte array of `n` entries, writable if asked. */
static int get_flags(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t n, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->itemsize != 1 || view->len != n) {
        PyErr_Format(PyExc_ValueError, "%s must be a one-byte array with one entry per state", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Whether some accepting state of `t` reads a column in `opens` (the n_open columns the body's start reads). */
static int finals_read(const int32_t *t, const unsigned char *accept, int64_t rows, int64_t k, const int64_t *opens,
                       int64_t n_open)
{
    for (int64_t q = 0; q < rows; q++)
        if (accept[q])
            for (int64_t i = 0; i < n_open; i++)
                if (t[q * k + opens[i]] >= 0)
                    return 1;
    return 0;
}

/* The work of `extend` on checked inputs; 0 where the composition does not apply, else 1. */
static int write_repeat(const int32_t *prefix, const unsigned char *prefix_accept, int64_t p, const int32_t *body,
                        const unsigned char *body_accept, int64_t m, int64_t k, int64_t lo, int64_t hi,
                        int64_t copies, int64_t *opens, int32_t *out, unsigned char *out_accept)
{
    int64_t n_open = 0, c, s, j, q, i;
    for (c = 0; c < k; c++)
        if (body[c] >= 0)
            opens[n_open++] = c;
    if (body_accept[0] || finals_read(body, body_accept, m, k, opens, n_open))
        return 0;
    if (copies && finals_read(prefix, prefix_accept, p, k, opens, n_open))
        return 0;
    memcpy(out, prefix, (size_t)(p * k) * sizeof(int32_t));
    for (q = 0; q < p; q++)
        out_accept[q] = prefix_accept[q] && (copies == 0 || lo == 0);
    if (!copies)
        return 1;
    /* body state s >= 1 of copy j is p + j (m - 1) + s - 1 */
    for (q = 0; q < p; q++)
        if (prefix_accept[q])
            for (i = 0; i < n_open; i++)
                out[q * k + opens[i]] = (int32_t)(p + body[opens[i]] - 1);
    for (j = 0; j < copies; j++) {
        int64_t base = p + j * (m - 1) - 1; /* + s: the row of body state s in copy j */
        int64_t next = j + 1 < copies ? base + (m - 1) : (hi < 0 ? base : -1); /* where finals read on */
        unsigned char accepts = j + 1 >= lo;
        for (s = 1; s < m; s++) {
            const int32_t *row = body + s * k;
            int32_t *to = out + (base + s) * k;
            for (c = 0; c < k; c++)
                to[c] = row[c] >= 0 ? (int32_t)(base + row[c]) : -1;
            out_accept[base + s] = body_accept[s] && accepts;
            if (body_accept[s] && next >= 0)
                for (i = 0; i < n_open; i++)
                    to[opens[i]] = (int32_t)(next + body[opens[i]]);
        }
    }
    return 1;
}

static PyObject *extend(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer pv, pav, bv, bav, ov, oav;
    int64_t p, m, k, lo, hi, copies, n, i;
    int failed = 0, applies = 0;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "extend(prefix, prefix_accept, body, body_accept, lo, hi, out, out_accept) "
                                         "takes 8 arguments");
        return NULL;
    }
    lo = PyLong_AsLongLong(args[4]);
    hi = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    if (lo < 0 || (hi >= 0 && hi < lo) || hi < -1 || lo >= INT32_MAX || hi >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the counts must be 0 <= lo <= hi, or hi -1 (unbounded)");
        return NULL;
    }
    copies = hi >= 0 ? hi : (lo > 1 ? lo : 1);
    if (get_table(args[0], &pv, 0, -1, -1, "prefix") < 0)
        return NULL;
    p = pv.shape[0];
    k = pv.shape[1];
    if (get_table(args[2], &bv, 0, -1, k, "body") < 0) {
        PyBuffer_Release(&pv);
        return NULL;
    }
    m = bv.shape[0];
    n = p + copies * (m - 1);
    if (n >= INT32_MAX || n * k >= PY_SSIZE_T_MAX / 4) {
        PyBuffer_Release(&pv);
        PyBuffer_Release(&bv);
        PyErr_SetString(PyExc_ValueError, "the repeat has too many states");
        return NULL;
    }
    if (get_flags(args[1], &pav, 0, p, "prefix_accept") < 0) {
        PyBuffer_Release(&pv); PyBuffer_Release(&bv);
        return NULL;
    }
    if (get_flags(args[3], &bav, 0, m, "body_accept") < 0) {
        PyBuffer_Release(&pv); PyBuffer_Release(&bv); PyBuffer_Release(&pav);
        return NULL;
    }
    if (get_table(args[6], &ov, 1, n, k, "out") < 0) {
        PyBuffer_Release(&pv); PyBuffer_Release(&bv); PyBuffer_Release(&pav); PyBuffer_Release(&bav);
        return NULL;
    }
    if (get_flags(args[7], &oav, 1, n, "out_accept") < 0) {
        PyBuffer_Release(&pv); PyBuffer_Release(&bv); PyBuffer_Release(&pav); PyBuffer_Release(&bav);
        PyBuffer_Release(&ov);
        return NULL;
    }
    const int32_t *prefix = pv.buf, *body = bv.buf;
    for (i = 0; !failed && i < p * k; i++)
        if (prefix[i] < -1 || prefix[i] >= p) {
            PyErr_Format(PyExc_ValueError, "prefix holds %d, not a state or -1", (int)prefix[i]);
            failed = 1;
        }
    for (i = 0; !failed && i < m * k; i++)
        if (body[i] < -1 || body[i] == 0 || body[i] >= m) {
            PyErr_Format(PyExc_ValueError, "body holds %d, not a state but its start, or -1", (int)body[i]);
            failed = 1;
        }
    int64_t *opens = failed ? NULL : PyMem_Malloc((size_t)k * sizeof(int64_t));
    if (!failed && !opens) {
        PyErr_NoMemory();
        failed = 1;
    }
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS
        applies = write_repeat(prefix, pav.buf, p, body, bav.buf, m, k, lo, hi, copies, opens, ov.buf, oav.buf);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(opens);
    PyBuffer_Release(&pv); PyBuffer_Release(&bv); PyBuffer_Release(&pav); PyBuffer_Release(&bav);
    PyBuffer_Release(&ov); PyBuffer_Release(&oav);
    if (failed)
        return NULL;
    return PyBool_FromLong(applies);
}

static PyMethodDef repeat_methods[] = {
    {"extend", (PyCFunction)(void (*)(void))extend, METH_FASTCALL,
     "extend(prefix, prefix_accept, body, body_accept, lo, hi, out, out_accept) -> bool: prefix · body{lo,hi} "
     "(see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef repeat_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._repeat",
    "A counted repeat of a small DFA written out copy by copy (pda/kernels/repeat.py).", -1, repeat_methods,
};

PyMODINIT_FUNC PyInit__repeat(void)
{
    return PyModule_Create(&repeat_module);
}

/* pda._rows: write one token-mask row into a caller's packed int32 bitmask in one call (and compare two masks).
 *
 * The per-step serving path ends by writing a row: a copy of a memoised mask (a
 * shared mask, or one extended by a few token ids: pda.kernels._compose.ExtendedMask),
 * or, for a finite-set state, zeros and then a few precomputed words. In numpy that is
 * three to five calls, each creating a view (~0.8 us a step); here it is one
 * (~0.2 us). `pda/rows.py` holds the numpy versions with the same semantics and
 * falls back to them when this module was not built.
 *
 * Semantics (shared with pda/rows.py): the destination is row `row` of a
 * C-contiguous 2-D int32 buffer; words past its width are dropped, words past the
 * source are zero. Any other layout raises BitmaskLayoutError (a TypeError), so the
 * caller can take its general path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "kernels/buffer_format.h"
#include "kernels/extended_mask.h"

static PyObject *BitmaskLayoutError;
static PyTypeObject *ExtendedMaskType; /* pda.kernels._compose.ExtendedMask */

/* Acquire `obj` as a writable bitmask and point `*dst` at row `row`; -1 with an exception set on failure. */
static int open_row(PyObject *obj, Py_ssize_t row, Py_buffer *view, int32_t **dst, Py_ssize_t *width)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_SetString(BitmaskLayoutError, "bitmask is not a writable C-contiguous buffer");
        return -1;
    }
    if (view->ndim != 2 || !is_int32_format(view->format, view->itemsize)) {
        PyErr_Format(BitmaskLayoutError, "bitmask must be a 2-D int32 array, got %d-D format '%s'",
                     view->ndim, view->format ? view->format : "?");
        PyBuffer_Release(view);
        return -1;
    }
    if (row < 0 || row >= view->shape[0]) {
        PyErr_Format(PyExc_IndexError, "row %zd is outside a bitmask of %zd rows", row, view->shape[0]);
        PyBuffer_Release(view);
        return -1;
    }
    *width = view->shape[1];
    *dst = (int32_t *)view->buf + row * view->shape[1];
    return 0;
}

/* Acquire a read-only 1-D source array whose items are `itemsize` bytes. */
static int open_source(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s must have %zd-byte items, got %zd", what, itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int as_index(PyObject *obj, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(obj);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

PyDoc_STRVAR(copy_row_doc,
"copy_row(bitmask, row, mask)\n--\n\n"
"Copy int32 `mask` (or an ExtendedMask: its base, then its ids' bits) into row `row` of `bitmask`:\n"
"truncated to the row's width, zero past its end.");

/* dst[:width] = the words of `mask` (an int32 buffer), zero past them. */
static int copy_words(int32_t *dst, Py_ssize_t width, PyObject *mask, const char *what)
{
    Py_buffer src;
    if (open_source(mask, &src, 4, what) < 0)
        return -1;
    Py_ssize_t n = src.len / 4 < width ? src.len / 4 : width;
    memcpy(dst, src.buf, (size_t)n * 4);
    memset(dst + n, 0, (size_t)(width - n) * 4);
    PyBuffer_Release(&src);
    return 0;
}

static PyObject *copy_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer out;
    int32_t *dst;
    Py_ssize_t row, width;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "copy_row(bitmask, row, mask) takes 3 arguments");
        return NULL;
    }
    if (as_index(args[1], &row) < 0 || open_row(args[0], row, &out, &dst, &width) < 0)
        return NULL;
    int failed;
    if (Py_IS_TYPE(args[2], ExtendedMaskType)) {
        const ExtendedMaskObject *mask = (const ExtendedMaskObject *)args[2];
        if (mask->base == Py_None) {
            memset(dst, 0, (size_t)width * 4);
            failed = 0;
        } else {
            failed = copy_words(dst, width, mask->base, "an extended mask's base") < 0;
        }
        for (Py_ssize_t i = 0; !failed && i < Py_SIZE(mask); i++)
            if (mask->ids[i] >> 5 < width)
                dst[mask->ids[i] >> 5] |= (int32_t)(1u << (mask->ids[i] & 31));
    } else {
        failed = copy_words(dst, width, args[2], "mask") < 0;
    }
    PyBuffer_Release(&out);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(scatter_row_doc,
"scatter_row(bitmask, row, words, bits, lo, hi)\n--\n\n"
"Zero row `row` of `bitmask`, then set word words[i] to bits[i] for lo <= i < hi\n"
"(int64 `words`, int32 `bits`); words past the row's width are dropped.");

static PyObject *scatter_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer out, words_buf, bits_buf;
    int32_t *dst;
    Py_ssize_t row, lo, hi, width, i;
    PyObject *result = NULL;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "scatter_row(bitmask, row, words, bits, lo, hi) takes 6 arguments");
        return NULL;
    }
    if (as_index(args[1], &row) < 0 || as_index(args[4], &lo) < 0 || as_index(args[5], &hi) < 0)
        return NULL;
    if (open_row(args[0], row, &out, &dst, &width) < 0)
        return NULL;
    if (open_source(args[2], &words_buf, 8, "words") < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    if (open_source(args[3], &bits_buf, 4, "bits") < 0) {
        PyBuffer_Release(&words_buf);
        PyBuffer_Release(&out);
        return NULL;
    }
    if (lo < 0 || hi < lo || hi > words_buf.len / 8 || hi > bits_buf.len / 4) {
        PyErr_Format(PyExc_IndexError, "range %zd:%zd is outside the %zd packed words", lo, hi, words_buf.len / 8);
        goto done;
    }
    {
        const int64_t *words = (const int64_t *)words_buf.buf;
        const int32_t *bits = (const int32_t *)bits_buf.buf;
        memset(dst, 0, (size_t)width * 4);
        for (i = lo; i < hi; i++) {
            if (words[i] >= 0 && words[i] < width)
                dst[words[i]] = bits[i];
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&bits_buf);
    PyBuffer_Release(&words_buf);
    PyBuffer_Release(&out);
    return result;
}

PyDoc_STRVAR(same_words_doc,
"same_words(a, b)\n--\n\n"
"Whether two int32 masks hold the same words (one memcmp; no copy of either).");

static PyObject *same_words(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer a, b;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "same_words(a, b) takes 2 arguments");
        return NULL;
    }
    if (open_source(args[0], &a, 4, "a") < 0)
        return NULL;
    if (open_source(args[1], &b, 4, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    int same = a.len == b.len && memcmp(a.buf, b.buf, (size_t)a.len) == 0;
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    return PyBool_FromLong(same);
}

static PyMethodDef rows_methods[] = {
    {"copy_row", (PyCFunction)(void (*)(void))copy_row, METH_FASTCALL, copy_row_doc},
    {"scatter_row", (PyCFunction)(void (*)(void))scatter_row, METH_FASTCALL, scatter_row_doc},
    {"same_words", (PyCFunction)(void (*)(void))same_words, METH_FASTCALL, same_words_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rows_module = {
    PyModuleDef_HEAD_INIT, "pda._rows", "Write one token-mask row into a packed int32 bitmask.", -1, rows_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rows(void)
{
    PyObject *compose = PyImport_ImportModule("pda.kernels._compose");
    if (compose == NULL)
        return NULL;
    ExtendedMaskType = (PyTypeObject *)PyObject_GetAttrString(compose, "ExtendedMask"); /* kept: the module lives on */
    Py_DECREF(compose);
    if (ExtendedMaskType == NULL)
        return NULL;
    if (!PyType_Check(ExtendedMaskType)) {
        PyErr_SetString(PyExc_ImportError, "pda.kernels._compose.ExtendedMask is not a type");
        return NULL;
    }
    PyObject *module = PyModule_Create(&rows_module);
    if (module == NULL)
        return NULL;
    BitmaskLayoutError = PyErr_NewExceptionWithDoc(
        "pda._rows.BitmaskLayoutError", "The bitmask is not a C-contiguous 2-D int32 buffer.", PyExc_TypeError, NULL);
    if (BitmaskLayoutError == NULL || PyModule_AddObjectRef(module, "BitmaskLayoutError", BitmaskLayoutError) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

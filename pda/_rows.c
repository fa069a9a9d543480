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
 *
 * `write_rows` writes a whole batch's rows in one call: every source is checked and its
 * buffer acquired first (a row appearing twice is refused), then the rows are written,
 * from `threads` threads (started for the call, joined before it returns; each takes a
 * contiguous share of the rows) with the GIL released meanwhile.
 *
 * The GIL: the helper threads never touch Python objects, so it is released only to let
 * the caller's other Python threads run during a threaded (long) write. A one-row or
 * single-thread write keeps it: its copy (~0.3 us a Qwen2 row) is shorter than the wait
 * to take the lock back from a thread that took it meanwhile (measured: copy_row
 * releasing it made 8 warm rows filled by a 2-thread pool 1.05-1.4x slower).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "kernels/buffer_format.h"
#include "kernels/extended_mask.h"

/* A `write_rows` batch of at most this many rows needs no allocation. */
#define SMALL_BATCH 64
/* `write_rows` starts at most this many threads (the caller's among them). */
#define MAX_ROW_THREADS 64
#define MAX_ROW_THREADS_TEXT "64"

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


/* One row of a `write_rows` batch, its sources' buffers held: a copy (`src`, `n` words, then `ids`) or, when
 * `words` is set, a scatter (zero the row, then dst[words[i]] = bits[i] for lo <= i < hi). */
typedef struct {
    int32_t *dst;
    const int32_t *src;
    Py_ssize_t n;
    const int32_t *ids;
    Py_ssize_t n_ids;
    const int64_t *words;
    const int32_t *bits;
    Py_ssize_t lo, hi;
    Py_ssize_t row;
} RowJob;

static void run_job(const RowJob *job, Py_ssize_t width)
{
    int32_t *dst = job->dst;
    if (job->words != NULL) {
        memset(dst, 0, (size_t)width * 4);
        for (Py_ssize_t i = job->lo; i < job->hi; i++)
            if (job->words[i] >= 0 && job->words[i] < width)
                dst[job->words[i]] = job->bits[i];
        return;
    }
    Py_ssize_t n = job->n < width ? job->n : width;
    if (n)
        memcpy(dst, job->src, (size_t)n * 4);
    memset(dst + n, 0, (size_t)(width - n) * 4);
    for (Py_ssize_t i = 0; i < job->n_ids; i++)
        if (job->ids[i] >> 5 < width)
            dst[job->ids[i] >> 5] |= (int32_t)(1u << (job->ids[i] & 31));
}

/* The jobs one thread writes: jobs[lo:hi]. */
typedef struct {
    const RowJob *jobs;
    Py_ssize_t lo, hi, width;
} RowShare;

static void *run_share(void *arg)
{
    const RowShare *share = (const RowShare *)arg;
    for (Py_ssize_t i = share->lo; i < share->hi; i++)
        run_job(&share->jobs[i], share->width);
    return NULL;
}

/* Write every job, split in `threads` contiguous shares (the caller's thread takes the first; a thread that cannot
 * be started leaves its share to the caller's). Touches no Python object, so it may run without the GIL; the rows
 * are distinct, so no two threads write the same words. */
static void run_jobs(const RowJob *jobs, Py_ssize_t n_jobs, Py_ssize_t width, int threads)
{
    RowShare shares[MAX_ROW_THREADS];
    pthread_t ids[MAX_ROW_THREADS];
    int started[MAX_ROW_THREADS] = {0};
    for (int t = 0; t < threads; t++) {
        shares[t] = (RowShare){jobs, n_jobs * t / threads, n_jobs * (t + 1) / threads, width};
        if (t > 0)
            started[t] = pthread_create(&ids[t], NULL, run_share, &shares[t]) == 0;
    }
    run_share(&shares[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(ids[t], NULL);
        else
            run_share(&shares[t]);
    }
}

/* Check `source` and fill `job` from it, its buffers appended to `held` (*n_held of them); -1 with an exception set. */
static int open_job(PyObject *source, RowJob *job, Py_buffer *held, Py_ssize_t *n_held)
{
    if (Py_IS_TYPE(source, ExtendedMaskType)) {
        const ExtendedMaskObject *mask = (const ExtendedMaskObject *)source;
        job->ids = mask->ids;
        job->n_ids = Py_SIZE(mask);
        if (mask->base == Py_None)
            return 0;
        source = mask->base;
    } else if (PyTuple_CheckExact(source)) {
        if (PyTuple_GET_SIZE(source) != 4 || as_index(PyTuple_GET_ITEM(source, 2), &job->lo) < 0
                || as_index(PyTuple_GET_ITEM(source, 3), &job->hi) < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a scatter source is (words, bits, lo, hi)");
            return -1;
        }
        if (open_source(PyTuple_GET_ITEM(source, 0), &held[*n_held], 8, "words") < 0)
            return -1;
        Py_buffer *words = &held[(*n_held)++];
        if (open_source(PyTuple_GET_ITEM(source, 1), &held[*n_held], 4, "bits") < 0)
            return -1;
        Py_buffer *bits = &held[(*n_held)++];
        if (job->lo < 0 || job->hi < job->lo || job->hi > words->len / 8 || job->hi > bits->len / 4) {
            PyErr_Format(PyExc_IndexError, "range %zd:%zd is outside the %zd packed words",
                         job->lo, job->hi, words->len / 8);
            return -1;
        }
        job->words = (const int64_t *)words->buf;
        job->bits = (const int32_t *)bits->buf;
        return 0;
    }
    if (open_source(source, &held[*n_held], 4, "mask") < 0)
        return -1;
    job->src = (const int32_t *)held[*n_held].buf;
    job->n = held[*n_held].len / 4;
    (*n_held)++;
    return 0;
}

PyDoc_STRVAR(copy_row_doc,
"copy_row(bitmask, row, source)\n--\n\n"
"Write `source` into row `row` of `bitmask`: an int32 mask truncated to the row's width, zero past its end;\n"
"an ExtendedMask as its base so, then its ids' bits; a (words, bits, lo, hi) tuple (int64 `words`, int32 `bits`)\n"
"as a zero row with word words[i] set to bits[i] for lo <= i < hi (words past the row's width dropped).");

static PyObject *copy_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer out, held[2];
    Py_ssize_t row, width, n_held = 0;
    RowJob job = {0};
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "copy_row(bitmask, row, source) takes 3 arguments");
        return NULL;
    }
    if (as_index(args[1], &row) < 0 || open_row(args[0], row, &out, &job.dst, &width) < 0)
        return NULL;
    int failed = open_job(args[2], &job, held, &n_held) < 0;
    if (!failed)
        run_job(&job, width); /* under the GIL: see the top of the file */
    for (Py_ssize_t i = 0; i < n_held; i++)
        PyBuffer_Release(&held[i]);
    PyBuffer_Release(&out);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(write_rows_doc,
"write_rows(bitmask, rows, sources, threads)\n--\n\n"
"Write sources[i] into row rows[i] of `bitmask` for every i whose source is not None: an int32 mask or an\n"
"ExtendedMask or a (words, bits, lo, hi) tuple as copy_row writes them. Everything is\n"
"checked before any row is written; the rows are then written from `threads` threads (at most\n"
MAX_ROW_THREADS_TEXT ", each a contiguous share of the rows; the GIL released when more than one). `rows` and\n"
"`sources` are lists of equal length; ValueError when a row appears twice.");

static PyObject *write_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer out;
    Py_ssize_t threads;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "write_rows(bitmask, rows, sources, threads) takes 4 arguments");
        return NULL;
    }
    PyObject *rows = args[1], *sources = args[2];
    if (!PyList_CheckExact(rows) || !PyList_CheckExact(sources) || PyList_GET_SIZE(rows) != PyList_GET_SIZE(sources)) {
        PyErr_SetString(PyExc_TypeError, "write_rows: rows and sources must be lists of equal length");
        return NULL;
    }
    if (as_index(args[3], &threads) < 0)
        return NULL;
    /* The sources' references, held while the GIL is released (the caller's list could change meanwhile). */
    PyObject *kept = PyList_AsTuple(sources);
    if (kept == NULL)
        return NULL;
    if (threads < 1 || threads > MAX_ROW_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 to %d, got %zd", MAX_ROW_THREADS, threads);
        Py_DECREF(kept);
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_SetString(BitmaskLayoutError, "bitmask is not a writable C-contiguous buffer");
        Py_DECREF(kept);
        return NULL;
    }
    if (out.ndim != 2 || !is_int32_format(out.format, out.itemsize)) {
        PyErr_Format(BitmaskLayoutError, "bitmask must be a 2-D int32 array, got %d-D format '%s'",
                     out.ndim, out.format ? out.format : "?");
        PyBuffer_Release(&out);
        Py_DECREF(kept);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows), n_rows = out.shape[0], width = out.shape[1], n_jobs = 0, n_held = 0;
    /* A batch of up to SMALL_BATCH rows (and SMALL_BATCH * 64 bitmask rows) is held on the stack. */
    RowJob small_jobs[SMALL_BATCH];
    Py_buffer small_held[2 * SMALL_BATCH];
    unsigned char small_seen[SMALL_BATCH * 64];
    int small = n <= SMALL_BATCH, small_rows = n_rows <= SMALL_BATCH * 64;
    RowJob *jobs = small ? small_jobs : PyMem_Malloc((size_t)n * sizeof(RowJob));
    Py_buffer *held = small ? small_held : PyMem_Malloc(2 * (size_t)n * sizeof(Py_buffer));
    unsigned char *seen = small_rows ? small_seen : PyMem_Malloc((size_t)n_rows);
    if (seen != NULL)
        memset(seen, 0, (size_t)n_rows);
    PyObject *result = NULL;
    if (jobs == NULL || held == NULL || seen == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *source = PyTuple_GET_ITEM(kept, i);
        RowJob *job = &jobs[n_jobs];
        memset(job, 0, sizeof(RowJob));
        if (as_index(PyList_GET_ITEM(rows, i), &job->row) < 0)
            goto done;
        if (job->row < 0 || job->row >= n_rows) {
            PyErr_Format(PyExc_IndexError, "row %zd is outside a bitmask of %zd rows", job->row, n_rows);
            goto done;
        }
        if (seen[job->row]) {
            PyErr_Format(PyExc_ValueError, "row %zd appears twice in one batch", job->row);
            goto done;
        }
        seen[job->row] = 1;
        if (source == Py_None)
            continue;
        job->dst = (int32_t *)out.buf + job->row * width;
        if (open_job(source, job, held, &n_held) < 0)
            goto done;
        n_jobs++;
    }
    /* Every buffer stays acquired (and every ExtendedMask referenced by `kept`) until the rows are written. */
    if (n_jobs < threads)
        threads = n_jobs ? n_jobs : 1;
    if (threads > 1) {
        Py_BEGIN_ALLOW_THREADS
        run_jobs(jobs, n_jobs, width, (int)threads);
        Py_END_ALLOW_THREADS
    } else {
        run_jobs(jobs, n_jobs, width, 1);
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (Py_ssize_t i = 0; i < n_held; i++)
        PyBuffer_Release(&held[i]);
    if (!small_rows)
        PyMem_Free(seen);
    if (!small) {
        PyMem_Free(held);
        PyMem_Free(jobs);
    }
    PyBuffer_Release(&out);
    Py_DECREF(kept);
    return result;
}

static PyMethodDef rows_methods[] = {
    {"write_rows", (PyCFunction)(void (*)(void))write_rows, METH_FASTCALL, write_rows_doc},
    {"copy_row", (PyCFunction)(void (*)(void))copy_row, METH_FASTCALL, copy_row_doc},
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
    if (BitmaskLayoutError == NULL || PyModule_AddObjectRef(module, "BitmaskLayoutError", BitmaskLayoutError) < 0
            || PyModule_AddIntConstant(module, "MAX_ROW_THREADS", MAX_ROW_THREADS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

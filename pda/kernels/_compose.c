/* pda.kernels._compose: a mask composed from its base and boundary groups, and fingerprinted, in one call.
 *
 * Written against the plain Python C API and the buffer protocol, like _walk.c;
 * pda/kernels/compose.py is the Python side and documents the interface.
 *
 * compose(acc, base, node, groups, ignore, after_boundary) -> int
 *     acc: a writable, C-contiguous int32 buffer (the mask being composed); base: None or an
 *     int32 buffer of acc's length, copied into acc first (None: acc is zeroed).
 *     From (node, groups), for each group: after = node.probe(group.terminals) when
 *     group.terminals & node.allowed, else node; None skips the group. Then
 *     live = after.allowed | ignore and sub = group.after[live], or, when the group has
 *     no entry for live, after_boundary(group, live) (which walks and records it).
 *     sub.tokens (int32 token ids, or None) are set in acc, else sub.inside (an int32
 *     buffer of acc's length, or None) is ORed in; then (after, sub.groups) is composed
 *     the same way (second boundaries: a token that crosses several).
 *     Terminal sets are Python ints of any size. Groups are taken from a stack, so
 *     their order differs from a recursion's; an OR does not depend on it.
 *     Returns fingerprint(acc) of the composed mask.
 *
 * fingerprint(mask) -> int
 *     mask: a C-contiguous int32 buffer. A 64-bit hash of all its words (equal masks,
 *     equal fingerprints): the key under which pda.masks stores equal masks once.
 *
 * Every object read is checked (a missing attribute or a buffer of another format
 * raises, naming it) and every reference taken is released on every path. The
 * kernel calls back into Python (probes, misses), so it holds the GIL throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buffer_format.h"

static PyObject *s_allowed, *s_probe, *s_terminals, *s_after, *s_inside, *s_tokens, *s_groups;

/* acc |= mask (an int32 buffer of acc's length; `what` names it in the error), or acc = mask when `copy`. */
static int or_into(int32_t *acc, Py_ssize_t n, PyObject *mask, const char *what, int copy)
{
    Py_buffer view;
    if (PyObject_GetBuffer(mask, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (!is_int32_format(view.format, view.itemsize) || view.len != n * 4) {
        PyErr_Format(PyExc_ValueError, "%s is not %zd int32 words", what, n);
        PyBuffer_Release(&view);
        return -1;
    }
    const int32_t *src = (const int32_t *)view.buf;
    if (copy)
        memmove(acc, src, (size_t)n * 4); /* base may be acc itself */
    else
        for (Py_ssize_t i = 0; i < n; i++)
            acc[i] |= src[i];
    PyBuffer_Release(&view);
    return 0;
}

/* acc's bits of the int32 token ids in `tokens` (each below n * 32). */
static int set_tokens(int32_t *acc, Py_ssize_t n, PyObject *tokens)
{
    Py_buffer view;
    if (PyObject_GetBuffer(tokens, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (!is_int32_format(view.format, view.itemsize)) {
        PyErr_SetString(PyExc_ValueError, "a classification's tokens are not int32 ids");
        PyBuffer_Release(&view);
        return -1;
    }
    const int32_t *ids = (const int32_t *)view.buf;
    for (Py_ssize_t i = 0; i < view.len / 4; i++) {
        if (ids[i] < 0 || ids[i] >= n * 32) {
            PyErr_Format(PyExc_ValueError, "a classification's token %d is outside the mask", ids[i]);
            PyBuffer_Release(&view);
            return -1;
        }
        acc[ids[i] >> 5] |= (int32_t)(1u << (ids[i] & 31));
    }
    PyBuffer_Release(&view);
    return 0;
}

/* A growable stack of (node, groups) pairs, each holding a reference. */
typedef struct {
    PyObject **items; /* node, groups, node, groups, ... */
    Py_ssize_t n, cap;
} Stack;

static int push(Stack *s, PyObject *node, PyObject *groups)
{
    if (s->n + 2 > s->cap) {
        Py_ssize_t cap = s->cap ? 2 * s->cap : 32;
        PyObject **items = PyMem_Realloc(s->items, (size_t)cap * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->items = items;
        s->cap = cap;
    }
    Py_INCREF(node);
    Py_INCREF(groups);
    s->items[s->n++] = node;
    s->items[s->n++] = groups;
    return 0;
}

static void clear(Stack *s)
{
    for (Py_ssize_t i = 0; i < s->n; i++)
        Py_DECREF(s->items[i]);
    PyMem_Free(s->items);
}

/* The node after group's terminals from `at` (a new reference), Py_None's when it cannot take them, NULL on error. */
static PyObject *node_after(PyObject *at, PyObject *terminals)
{
    PyObject *allowed = PyObject_GetAttr(at, s_allowed);
    if (allowed == NULL)
        return NULL;
    PyObject *both = PyNumber_And(terminals, allowed);
    Py_DECREF(allowed);
    if (both == NULL)
        return NULL;
    int meets = PyObject_IsTrue(both);
    Py_DECREF(both);
    if (meets < 0)
        return NULL;
    if (!meets) {
        Py_INCREF(at);
        return at;
    }
    return PyObject_CallMethodOneArg(at, s_probe, terminals);
}

/* One group from `at`: OR its suffixes' inside tokens into acc and push what they cross next. */
static int compose_group(int32_t *acc, Py_ssize_t n, PyObject *at, PyObject *group, PyObject *ignore,
                         PyObject *after_boundary, Stack *stack)
{
    int rc = -1;
    PyObject *terminals = NULL, *after = NULL, *allowed = NULL, *live = NULL, *memo = NULL, *sub = NULL;
    PyObject *tokens = NULL, *inside = NULL, *groups = NULL;
    if ((terminals = PyObject_GetAttr(group, s_terminals)) == NULL)
        goto done;
    if ((after = node_after(at, terminals)) == NULL)
        goto done;
    if (after == Py_None) {
        rc = 0;
        goto done;
    }
    if ((allowed = PyObject_GetAttr(after, s_allowed)) == NULL || (live = PyNumber_Or(allowed, ignore)) == NULL)
        goto done;
    if ((memo = PyObject_GetAttr(group, s_after)) == NULL)
        goto done;
    if (!PyDict_Check(memo)) {
        PyErr_SetString(PyExc_TypeError, "a boundary group's `after` is not a dict");
        goto done;
    }
    sub = PyDict_GetItemWithError(memo, live); /* borrowed */
    if (sub != NULL)
        Py_INCREF(sub);
    else if (PyErr_Occurred() || (sub = PyObject_CallFunctionObjArgs(after_boundary, group, live, NULL)) == NULL)
        goto done;
    if ((tokens = PyObject_GetAttr(sub, s_tokens)) == NULL)
        goto done;
    if (tokens != Py_None) {
        if (set_tokens(acc, n, tokens) < 0)
            goto done;
    } else if ((inside = PyObject_GetAttr(sub, s_inside)) == NULL || (inside != Py_None && or_into(acc, n, inside, "a classification's inside mask", 0) < 0)) {
        goto done;
    }
    if ((groups = PyObject_GetAttr(sub, s_groups)) == NULL)
        goto done;
    if (!PyTuple_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "a classification's `groups` is not a tuple");
        goto done;
    }
    if (PyTuple_GET_SIZE(groups) && push(stack, after, groups) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(terminals);
    Py_XDECREF(after);
    Py_XDECREF(allowed);
    Py_XDECREF(live);
    Py_XDECREF(memo);
    Py_XDECREF(sub);
    Py_XDECREF(tokens);
    Py_XDECREF(inside);
    Py_XDECREF(groups);
    return rc;
}

/* One step of a lane: a bijection of h for each word, and of the word for each h (so any one word changed
 * changes the lane). */
static inline uint64_t mix(uint64_t h, uint64_t word)
{
    return (h ^ word) * 0x9E3779B97F4A7C15ull;
}

#define LANES 8

/* The 64-bit hash of n words. */
static uint64_t hash_words(const uint32_t *words, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    /* Independent lanes of two words each, so the multiplications overlap. */
    uint64_t lane[LANES];
    for (int k = 0; k < LANES; k++)
        lane[k] = (uint64_t)k + 1;
    for (; i + 2 * LANES <= n; i += 2 * LANES)
        for (int k = 0; k < LANES; k++)
            lane[k] = mix(lane[k], (uint64_t)words[i + 2 * k] | (uint64_t)words[i + 2 * k + 1] << 32);
    uint64_t h = (uint64_t)n;
    for (; i < n; i++)
        h = mix(h, words[i]);
    for (int k = 0; k < LANES; k++) {
        h = mix(h, lane[k]);
        h ^= h >> 29;
    }
    return h;
}

static PyObject *compose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "compose(acc, base, node, groups, ignore, after_boundary)");
        return NULL;
    }
    PyObject *base = args[1], *node = args[2], *groups = args[3], *ignore = args[4], *after_boundary = args[5];
    if (!PyTuple_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "groups must be a tuple");
        return NULL;
    }
    if (!PyLong_Check(ignore) || !PyCallable_Check(after_boundary)) {
        PyErr_SetString(PyExc_TypeError, "ignore must be an int and after_boundary callable");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (!is_int32_format(view.format, view.itemsize)) {
        PyErr_SetString(PyExc_ValueError, "acc must be an int32 buffer");
        PyBuffer_Release(&view);
        return NULL;
    }
    int32_t *acc = (int32_t *)view.buf;
    Py_ssize_t n = view.len / 4;
    int failed = 0;
    if (base == Py_None)
        memset(acc, 0, (size_t)n * 4);
    else
        failed = or_into(acc, n, base, "base", 1) < 0;
    Stack stack = {NULL, 0, 0};
    failed = failed || push(&stack, node, groups) < 0;
    while (!failed && stack.n) {
        PyObject *gs = stack.items[--stack.n], *at = stack.items[--stack.n]; /* references moved here */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(gs) && !failed; i++)
            failed = compose_group(acc, n, at, PyTuple_GET_ITEM(gs, i), ignore, after_boundary, &stack) < 0;
        Py_DECREF(at);
        Py_DECREF(gs);
    }
    clear(&stack);
    uint64_t h = failed ? 0 : hash_words((const uint32_t *)acc, n);
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *fingerprint(PyObject *self, PyObject *mask)
{
    Py_buffer view;
    if (PyObject_GetBuffer(mask, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (!is_int32_format(view.format, view.itemsize)) {
        PyErr_SetString(PyExc_ValueError, "fingerprint takes an int32 buffer");
        PyBuffer_Release(&view);
        return NULL;
    }
    uint64_t h = hash_words((const uint32_t *)view.buf, view.len / 4);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(h);
}

static PyMethodDef compose_methods[] = {
    {"fingerprint", (PyCFunction)fingerprint, METH_O, "A 64-bit hash of an int32 mask's words."},
    {"compose", (PyCFunction)(void (*)(void))compose, METH_FASTCALL,
     "acc = base with the suffix classifications of boundary groups reached from a parser node ORed in; "
     "its fingerprint."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef compose_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._compose", NULL, -1, compose_methods,
};

PyMODINIT_FUNC PyInit__compose(void)
{
    if (!(s_allowed = PyUnicode_InternFromString("allowed")) || !(s_probe = PyUnicode_InternFromString("probe"))
        || !(s_terminals = PyUnicode_InternFromString("terminals")) || !(s_after = PyUnicode_InternFromString("after"))
        || !(s_inside = PyUnicode_InternFromString("inside")) || !(s_tokens = PyUnicode_InternFromString("tokens"))
        || !(s_groups = PyUnicode_InternFromString("groups")))
        return NULL;
    return PyModule_Create(&compose_module);
}

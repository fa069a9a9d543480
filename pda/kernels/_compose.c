/* pda.kernels._compose: the token index's classification objects, and a step mask composed from them in one call.
 *
 * Written against the plain Python C API and the buffer protocol, like _walk.c;
 * pda/kernels/compose.py is the Python side and documents the interface.
 *
 * Types (none is tracked by the garbage collector: see the invariants):
 *   Classification(inside=None, groups=(), tokens=None): the token index's classification from a lexer
 *     state: `inside` an int32 mask or None, `tokens` int32 ids or None, `groups` a tuple of BoundaryGroup.
 *   BoundaryGroup(terminals=None, nodes=None, key=None): `terminals` an int, `nodes` int64 trie nodes,
 *     `key` their bytes (nodes.tobytes() when not given), `after` a new dict (live set -> Classification).
 *     Called without arguments, both make an object whose fields are then set (the walk kernel's way).
 *   ExtendedMask(base, ids): a shared int32 mask (or None: none) extended by a few int32 token ids
 *     (pda/kernels/extended_mask.h); an ExtendedMask base is flattened into its base and ids.
 *
 * compose(acc, root, node, ignore, after_boundary, sparse_max) -> mask or int
 *     acc: a writable, C-contiguous int32 buffer; root: the Classification at the state, whose
 *     inside is None or an int32 buffer of acc's length that is not acc: copied into acc (None: acc
 *     zeroed) when the mask's words are first needed, never when only a few ids are added (see Acc);
 *     its tokens (int32 ids, or None) are set in acc first, as a group's are. From (node, root.groups), for each group: after =
 *     node.probe(group.terminals) when group.terminals & node.allowed, else node; None skips the
 *     group. Then live = after.allowed | ignore and sub = group.after[live], or, when the group
 *     has no entry for live, after_boundary(group, live) (which walks and records it).
 *     sub.tokens (int32 token ids, or None) are set in acc, else sub.inside (an int32 buffer of
 *     acc's length, or None) is ORed in; then (after, sub.groups) is composed the same way
 *     (second boundaries: a token that crosses several). Groups are taken from a stack, so
 *     their order differs from a recursion's; an OR does not depend on it.
 *     Returns the mask by what was added to root.inside: root.inside itself (None included)
 *     when nothing; an ExtendedMask(root.inside, ids) when at most sparse_max tokens; else
 *     fingerprint(acc), acc holding the mask.
 *
 * fingerprint(mask) -> int
 *     mask: a C-contiguous int32 buffer. A 64-bit hash of all its words (equal masks,
 *     equal fingerprints): the key under which pda.masks stores equal dense masks once.
 *
 * Invariants:
 * - Classifications, groups and extended masks hold arrays, ints, bytes, tuples of each other and
 *   dicts of classifications, and the index never makes a cycle of them (a group's `after` holds the
 *   classifications of walks made after it, whose groups are new objects). So the garbage collector
 *   need not see them: none is tracked, nor then are their groups' tuples and `after` dicts. A first
 *   document of a JSON Schema makes tens of thousands, which every collection of the old generations
 *   read when they were tracked. A cycle made by hand through them is never freed (nothing crashes).
 * - A classification keeps the array compose last read from it (its inside or its tokens: `read`, a reference to
 *   the array with its items' address and count), so one read again (most are: a root at each node at its state,
 *   a suffix at each node after its boundary) asks for its buffer once, not per composition: a numpy array's
 *   request builds and compares its format each time, a quarter of compose's own time on the 31 schemas' first
 *   documents. `read` answers for a field only while the field holds that same array (the reference keeps it
 *   alive, so no other object can take its address), and is kept only for an exporter with nothing to release
 *   (no bf_releasebuffer: numpy arrays, bytes), for which that reference is all a held export would be; any other
 *   (array.array, memoryview) is asked per composition. An array a field let go of lives on until the next read.
 * - Every object read is checked (a missing field, a wrong type or a buffer of another format
 *   raises, naming it) and every reference taken is released on every path. compose calls back
 *   into Python (probes, misses), so it holds the GIL throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_format.h"
#include "extended_mask.h"
#include "sort_ids.h"

/* A classification's int32 array as compose last read it (see the invariants): `of` is the array (a reference),
 * `items` and `n` its int32 items. */
typedef struct {
    PyObject *of;
    const int32_t *items;
    Py_ssize_t n;
} Ints;

typedef struct {
    PyObject_HEAD
    PyObject *inside, *tokens, *groups;
    Ints read; /* compose's: the array of inside or tokens it last read, made by read_ints */
} ClassificationObject;

typedef struct {
    PyObject_HEAD
    PyObject *terminals, *nodes, *key, *after;
} BoundaryGroupObject;

static PyTypeObject ClassificationType, BoundaryGroupType, ExtendedMaskType;
static PyObject *s_allowed, *s_probe, *s_tobytes;

/* ---------------------------------------------------------------- Classification */

static PyObject *Classification_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"inside", "groups", "tokens", NULL};
    PyObject *inside = Py_None, *groups = NULL, *tokens = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:Classification", names, &inside, &groups, &tokens))
        return NULL;
    ClassificationObject *self = (ClassificationObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->groups = groups == NULL ? PyTuple_New(0) : PySequence_Tuple(groups);
    if (self->groups == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->inside = Py_NewRef(inside);
    self->tokens = Py_NewRef(tokens);
    return (PyObject *)self;
}

static void Classification_dealloc(ClassificationObject *self)
{
    Py_XDECREF(self->inside);
    Py_XDECREF(self->tokens);
    Py_XDECREF(self->groups);
    Py_XDECREF(self->read.of);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* *total += the bytes of `obj`'s buffer (None: none). */
static int add_buffer_bytes(PyObject *obj, Py_ssize_t *total)
{
    Py_buffer view;
    if (obj == NULL || obj == Py_None)
        return 0;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0)
        return -1;
    *total += view.len;
    PyBuffer_Release(&view);
    return 0;
}

static PyObject *Classification_nbytes(ClassificationObject *self, PyObject *unused)
{
    Py_ssize_t total = 0;
    if (add_buffer_bytes(self->tokens != NULL && self->tokens != Py_None ? self->tokens : self->inside, &total) < 0)
        return NULL;
    if (self->groups != NULL && PyTuple_Check(self->groups)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->groups); i++) {
            PyObject *group = PyTuple_GET_ITEM(self->groups, i);
            if (Py_IS_TYPE(group, &BoundaryGroupType)
                && add_buffer_bytes(((BoundaryGroupObject *)group)->nodes, &total) < 0)
                return NULL;
        }
    }
    return PyLong_FromSsize_t(total);
}

static PyMethodDef Classification_methods[] = {
    {"nbytes", (PyCFunction)Classification_nbytes, METH_NOARGS,
     "The bytes of its arrays: the allowed tokens (ids or mask) and the groups' nodes."},
    {NULL}};

static PyMemberDef Classification_members[] = {
    {"inside", T_OBJECT, offsetof(ClassificationObject, inside), 0,
     "The tokens allowed outright as a packed int32 mask, or None."},
    {"tokens", T_OBJECT, offsetof(ClassificationObject, tokens), 0,
     "The tokens allowed outright as int32 ids ascending (a sparse walk's few), or None."},
    {"groups", T_OBJECT, offsetof(ClassificationObject, groups), 0, "The boundary groups (a tuple)."},
    {NULL}};

static PyTypeObject ClassificationType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._compose.Classification",
    .tp_basicsize = sizeof(ClassificationObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Classification(inside=None, groups=(), tokens=None): tokens allowed outright and the boundary groups.",
    .tp_new = Classification_new,
    .tp_dealloc = (destructor)Classification_dealloc,
    .tp_methods = Classification_methods,
    .tp_members = Classification_members,
};

/* ---------------------------------------------------------------- BoundaryGroup */

static PyObject *BoundaryGroup_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"terminals", "nodes", "key", NULL};
    PyObject *terminals = Py_None, *nodes = Py_None, *key = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:BoundaryGroup", names, &terminals, &nodes, &key))
        return NULL;
    BoundaryGroupObject *self = (BoundaryGroupObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->terminals = Py_NewRef(terminals);
    self->nodes = Py_NewRef(nodes);
    if (key == Py_None && nodes != Py_None)
        self->key = PyObject_CallMethodNoArgs(nodes, s_tobytes);
    else
        self->key = Py_NewRef(key);
    if (self->key == NULL || (self->after = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void BoundaryGroup_dealloc(BoundaryGroupObject *self)
{
    Py_XDECREF(self->terminals);
    Py_XDECREF(self->nodes);
    Py_XDECREF(self->key);
    Py_XDECREF(self->after);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef BoundaryGroup_members[] = {
    {"terminals", T_OBJECT, offsetof(BoundaryGroupObject, terminals), 0,
     "The terminal set the lexeme ended as (an int bitmask)."},
    {"nodes", T_OBJECT, offsetof(BoundaryGroupObject, nodes), 0, "The trie nodes where it ended (int64)."},
    {"key", T_OBJECT, offsetof(BoundaryGroupObject, key), 0,
     "The nodes' bytes: groups ending at the same nodes share their suffix walks."},
    {"after", T_OBJECT, offsetof(BoundaryGroupObject, after), 0,
     "The suffixes' classification per live set after the boundary (a dict)."},
    {NULL}};

static PyTypeObject BoundaryGroupType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._compose.BoundaryGroup",
    .tp_basicsize = sizeof(BoundaryGroupObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "BoundaryGroup(terminals=None, nodes=None, key=None): tokens whose lexeme ended as `terminals` at "
              "trie nodes `nodes`.",
    .tp_new = BoundaryGroup_new,
    .tp_dealloc = (destructor)BoundaryGroup_dealloc,
    .tp_members = BoundaryGroup_members,
};

/* ---------------------------------------------------------------- ExtendedMask */

/* A new extended mask over `base` (a new reference is taken) with room for n ids. */
static ExtendedMaskObject *new_extended(PyObject *base, Py_ssize_t n)
{
    ExtendedMaskObject *self = PyObject_NewVar(ExtendedMaskObject, &ExtendedMaskType, n);
    if (self != NULL)
        self->base = Py_NewRef(base);
    return self;
}

/* Sorts n non-negative ids below `limit` ascending (sort_ids.h, through a scratch buffer made here when the sort
 * needs one). -1 with MemoryError set. */
static int sort_in_place(int32_t *ids, Py_ssize_t n, int64_t limit)
{
    uint32_t *tmp = NULL;
    if (n > SORT_IDS_INSERTION_MAX && (tmp = PyMem_Malloc((size_t)n * sizeof(uint32_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    sort_ids((uint32_t *)ids, n, tmp, limit);
    PyMem_Free(tmp);
    return 0;
}

/* Whether `obj` is None or a C-contiguous int32 buffer (a TypeError naming `what` if not). */
static int check_mask(PyObject *obj, const char *what)
{
    Py_buffer view;
    if (obj == Py_None)
        return 0;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    int good = is_int32_format(view.format, view.itemsize);
    PyBuffer_Release(&view);
    if (!good) {
        PyErr_Format(PyExc_TypeError, "%s must be None or an int32 mask", what);
        return -1;
    }
    return 0;
}

static PyObject *ExtendedMask_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = {"base", "ids", NULL};
    PyObject *base, *ids_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:ExtendedMask", names, &base, &ids_obj))
        return NULL;
    Py_ssize_t inherited = 0;
    const int32_t *more = NULL;
    if (Py_IS_TYPE(base, &ExtendedMaskType)) { /* flattened: its base, its ids with these */
        inherited = Py_SIZE(base);
        more = ((ExtendedMaskObject *)base)->ids;
        base = ((ExtendedMaskObject *)base)->base;
    } else if (check_mask(base, "an extended mask's base") < 0) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(ids_obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (!is_int32_format(view.format, view.itemsize)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "an extended mask's ids must be int32 token ids");
        return NULL;
    }
    Py_ssize_t n = inherited + view.len / 4;
    int32_t *all = PyMem_Malloc((size_t)(n + 1) * sizeof(int32_t));
    if (all == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    if (inherited)
        memcpy(all, more, (size_t)inherited * sizeof(int32_t));
    memcpy(all + inherited, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    int64_t limit = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (all[i] < 0) {
            PyMem_Free(all);
            PyErr_Format(PyExc_ValueError, "token id %d is negative", all[i]);
            return NULL;
        }
        if (all[i] >= limit)
            limit = (int64_t)all[i] + 1;
    }
    if (sort_in_place(all, n, limit) < 0) {
        PyMem_Free(all);
        return NULL;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (kept == 0 || all[kept - 1] != all[i])
            all[kept++] = all[i];
    ExtendedMaskObject *self = new_extended(base, kept);
    if (self != NULL)
        memcpy(self->ids, all, (size_t)kept * sizeof(int32_t));
    PyMem_Free(all);
    return (PyObject *)self;
}

static void ExtendedMask_dealloc(ExtendedMaskObject *self)
{
    Py_XDECREF(self->base);
    PyObject_Free(self);
}

static PyObject *ExtendedMask_ids(ExtendedMaskObject *self, void *closure)
{
    return PyBytes_FromStringAndSize((const char *)self->ids, Py_SIZE(self) * (Py_ssize_t)sizeof(int32_t));
}

static PyObject *ExtendedMask_nbytes(ExtendedMaskObject *self, void *closure)
{
    return PyLong_FromSsize_t(Py_TYPE(self)->tp_basicsize + Py_SIZE(self) * (Py_ssize_t)sizeof(int32_t));
}

static PyObject *ExtendedMask_repr(ExtendedMaskObject *self)
{
    return PyUnicode_FromFormat("ExtendedMask(%R, %zd ids)", self->base == Py_None ? Py_None : (PyObject *)Py_TYPE(self->base),
                                Py_SIZE(self));
}

static PyMemberDef ExtendedMask_members[] = {
    {"base", T_OBJECT, offsetof(ExtendedMaskObject, base), READONLY, "The shared int32 mask extended, or None."},
    {NULL}};

static PyGetSetDef ExtendedMask_getset[] = {
    {"ids", (getter)ExtendedMask_ids, NULL, "The token ids added, ascending, as bytes of native int32.", NULL},
    {"nbytes", (getter)ExtendedMask_nbytes, NULL, "The object's own bytes (its base not counted).", NULL},
    {NULL}};

static PyTypeObject ExtendedMaskType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._compose.ExtendedMask",
    .tp_basicsize = offsetof(ExtendedMaskObject, ids),
    .tp_itemsize = sizeof(int32_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ExtendedMask(base, ids): the int32 mask `base` (None: none) with the int32 token ids `ids` set.",
    .tp_new = ExtendedMask_new,
    .tp_dealloc = (destructor)ExtendedMask_dealloc,
    .tp_repr = (reprfunc)ExtendedMask_repr,
    .tp_members = ExtendedMask_members,
    .tp_getset = ExtendedMask_getset,
};

/* ---------------------------------------------------------------- compose */

/* A classification's int32 array (its inside mask or its tokens) as compose reads it: `items`, `n` of them, and
 * `view`, the buffer to release when read_ints had to take one (view.obj not NULL). */
typedef struct {
    const int32_t *items;
    Py_ssize_t n;
    Py_buffer view;
} Span;

/* The items of `array`, the field `owner` holds as its inside or tokens, into *span: 1 (no error set) when it is
 * not a C-contiguous int32 buffer, -1 on an error (span_release is then a no-op). Read from the owner's `read` when it was read from this array
 * (one buffer request per classification, not per composition: a numpy array's request builds and compares its
 * format each time); kept there when its exporter has nothing to release (see the invariants), else taken for
 * this composition only (span_release gives it back). */
static int read_ints(ClassificationObject *owner, PyObject *array, Span *span)
{
    span->view.obj = NULL;
    if (owner->read.of == array) {
        span->items = owner->read.items;
        span->n = owner->read.n;
        return 0;
    }
    if (PyObject_GetBuffer(array, &span->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        span->view.obj = NULL;
        return -1;
    }
    if (!is_int32_format(span->view.format, span->view.itemsize)) {
        PyBuffer_Release(&span->view);
        span->view.obj = NULL;
        return 1;
    }
    span->items = (const int32_t *)span->view.buf;
    span->n = span->view.len / 4;
    PyObject *exporter = span->view.obj;
    if (exporter == array && Py_TYPE(array)->tp_as_buffer->bf_releasebuffer == NULL) {
        Py_XSETREF(owner->read.of, Py_NewRef(array));
        owner->read.items = span->items;
        owner->read.n = span->n;
        PyBuffer_Release(&span->view); /* only a reference to drop: `read` holds one */
        span->view.obj = NULL;
    }
    return 0;
}

static void span_release(Span *span)
{
    if (span->view.obj != NULL)
        PyBuffer_Release(&span->view);
}

/* The mask being composed: its words, and the token ids set in it that its root's inside did not have, in the
 * order set, while they are at most `max` and only ids were set (a suffix's inside mask ORed in makes `ored`:
 * then what was added is read off the words at the end).
 * The words are made only when needed (`ready`): until an inside mask is ORed in or more than `max` ids are
 * noted, the ids not in the root's inside (`base`, NULL: none) are noted in `added` as they come, repeats
 * included, and the words are never written: most compositions add a few ids (an ExtendedMask), and copying
 * the root's 19 KB inside for each was most of a miss's memory traffic. make_ready then writes the words and
 * notes those ids again as set_tokens would have.
 * `added` has room for `max` ids, `tmp` (a sort's scratch) as many: no more are ever noted (a repeat past `max`
 * makes the words, which drop it; past `max` distinct ones the mask is dense and its ids are not kept), and
 * `max` is at most the mask's tokens, which any result of more than those has too. */
typedef struct {
    int32_t *words;
    Py_ssize_t n;
    int32_t *added, *tmp;
    Py_ssize_t n_added, max;
    int ored, overflow;
    const uint32_t *base;
    int ready;
} Acc;

/* The words made: the root's inside (zeros without one) with the ids noted so far set, those that were new noted
 * again in order, repeats dropped, as set_tokens notes them (at most `max`, else overflow). */
static void make_ready(Acc *acc)
{
    if (acc->base != NULL)
        memcpy(acc->words, acc->base, (size_t)acc->n * 4);
    else
        memset(acc->words, 0, (size_t)acc->n * 4);
    acc->ready = 1;
    Py_ssize_t noted = acc->n_added;
    acc->n_added = 0;
    for (Py_ssize_t i = 0; i < noted; i++) {
        int32_t t = acc->added[i];
        int32_t bit = (int32_t)(1u << (t & 31));
        if (acc->words[t >> 5] & bit)
            continue;
        acc->words[t >> 5] |= bit;
        if (acc->n_added == acc->max) {
            acc->overflow = 1;
            continue;
        }
        acc->added[acc->n_added++] = t;
    }
}

/* acc |= a mask of acc's length. */
static void or_into(Acc *acc, const int32_t *src)
{
    if (!acc->ready)
        make_ready(acc);
    for (Py_ssize_t i = 0; i < acc->n; i++)
        acc->words[i] |= src[i];
    acc->ored = 1;
}

/* acc's bits of the n int32 token ids `ids`, the new ones noted in `added`; -1 (ValueError) if one is outside the
 * mask. Two loops, before the words are made and after, each on locals (a store to the words or the ids could
 * otherwise be an int of acc's, reread for every id). */
static int set_tokens(Acc *acc, const int32_t *ids, Py_ssize_t n)
{
    const uint64_t limit = (uint64_t)acc->n * 32;
    int32_t *added = acc->added;
    Py_ssize_t i = 0, noted = acc->n_added, max = acc->max;
    if (!acc->ready) {
        const uint32_t *base = acc->base;
        for (; i < n; i++) {
            int32_t t = ids[i];
            if ((uint64_t)(uint32_t)t >= limit)
                break;
            if (base != NULL && base[t >> 5] >> (t & 31) & 1u)
                continue;
            if (noted == max) /* repeats may make these fewer: counted exactly on the words */
                break;
            added[noted++] = t;
        }
        acc->n_added = noted;
        if (i < n && (uint64_t)(uint32_t)ids[i] < limit) { /* past `max`; an id outside stops the loop below */
            make_ready(acc);
            noted = acc->n_added;
        }
    }
    int32_t *words = acc->words;
    int counting = !acc->ored && !acc->overflow;
    for (; i < n; i++) {
        int32_t t = ids[i];
        if ((uint64_t)(uint32_t)t >= limit) {
            PyErr_Format(PyExc_ValueError, "a classification's token %d is outside the mask", t);
            acc->n_added = noted;
            return -1;
        }
        int32_t bit = (int32_t)(1u << (t & 31));
        if (words[t >> 5] & bit)
            continue;
        words[t >> 5] |= bit;
        if (!counting)
            continue;
        if (noted == max) { /* past `max`: the mask will be dense, its ids are not needed */
            acc->overflow = 1;
            counting = 0;
            continue;
        }
        added[noted++] = t;
    }
    acc->n_added = noted;
    return 0;
}

/* The ids of `tokens`, the field c holds, set in acc. */
static int add_tokens(Acc *acc, ClassificationObject *c, PyObject *tokens)
{
    Span span;
    int rc = read_ints(c, tokens, &span);
    if (rc == 1)
        PyErr_SetString(PyExc_ValueError, "a classification's tokens are not int32 ids");
    else if (rc == 0)
        rc = set_tokens(acc, span.items, span.n);
    span_release(&span);
    return rc == 0 ? 0 : -1;
}

/* A classification's inside tokens into acc: its `tokens` set, else its `inside` ORed in. */
static int add_inside(Acc *acc, ClassificationObject *c)
{
    if (c->tokens != NULL && c->tokens != Py_None)
        return add_tokens(acc, c, c->tokens);
    if (c->inside == NULL || c->inside == Py_None)
        return 0;
    Span span;
    int rc = read_ints(c, c->inside, &span);
    if (rc == 1 || (rc == 0 && span.n != acc->n)) {
        PyErr_Format(PyExc_ValueError, "a classification's inside mask is not %zd int32 words", acc->n);
        rc = -1;
    } else if (rc == 0) {
        or_into(acc, span.items);
    }
    span_release(&span);
    return rc;
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

/* The node after group's terminals from `at`, whose terminals are `allowed` (a new reference), Py_None's when it
 * cannot take them, NULL on error. */
static PyObject *node_after(PyObject *at, PyObject *allowed, PyObject *terminals)
{
    PyObject *both = PyNumber_And(terminals, allowed);
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

/* One group from `at` (whose terminals are `allowed`): OR its suffixes' inside tokens into acc and push what they
 * cross next. `ignore` is NULL when it is 0 (every grammar without ignored terminals: the JSON Schemas'): the live
 * set is then the node's own int, not a new one. */
static int compose_group(Acc *acc, PyObject *at, PyObject *at_allowed, PyObject *item, PyObject *ignore,
                         PyObject *after_boundary, Stack *stack)
{
    if (!Py_IS_TYPE(item, &BoundaryGroupType)) {
        PyErr_Format(PyExc_TypeError, "a classification's groups hold a %.100s, not a BoundaryGroup",
                     Py_TYPE(item)->tp_name);
        return -1;
    }
    BoundaryGroupObject *group = (BoundaryGroupObject *)item;
    if (group->terminals == NULL || group->after == NULL || !PyDict_Check(group->after)) {
        PyErr_SetString(PyExc_TypeError, "a boundary group's `terminals` is unset or its `after` is not a dict");
        return -1;
    }
    int rc = -1;
    PyObject *after = NULL, *allowed = NULL, *live = NULL, *found = NULL;
    if ((after = node_after(at, at_allowed, group->terminals)) == NULL)
        goto done;
    if (after == Py_None) {
        rc = 0;
        goto done;
    }
    if ((allowed = PyObject_GetAttr(after, s_allowed)) == NULL
        || (live = ignore == NULL ? Py_NewRef(allowed) : PyNumber_Or(allowed, ignore)) == NULL)
        goto done;
    found = PyDict_GetItemWithError(group->after, live); /* borrowed */
    if (found != NULL)
        Py_INCREF(found);
    else if (PyErr_Occurred() || (found = PyObject_CallFunctionObjArgs(after_boundary, item, live, NULL)) == NULL)
        goto done;
    if (!Py_IS_TYPE(found, &ClassificationType)) {
        PyErr_Format(PyExc_TypeError, "a suffix classification is a %.100s, not a Classification",
                     Py_TYPE(found)->tp_name);
        goto done;
    }
    ClassificationObject *sub = (ClassificationObject *)found;
    if (add_inside(acc, sub) < 0)
        goto done;
    if (sub->groups == NULL || !PyTuple_Check(sub->groups)) {
        PyErr_SetString(PyExc_TypeError, "a classification's `groups` is not a tuple");
        goto done;
    }
    if (PyTuple_GET_SIZE(sub->groups) && push(stack, after, sub->groups) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(after);
    Py_XDECREF(allowed);
    Py_XDECREF(live);
    Py_XDECREF(found);
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

/* The bits set in x. */
static inline int popcount32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (int)((((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}

/* Up to this many ascending runs of noted ids are merged (sort_noted); more are sorted as any ids are. */
#define MERGE_RUNS_MAX 64

/* Sorts the n noted ids ascending through `tmp` (room for n; `limit` one past the largest id, for sort_ids). They
 * come in ascending runs, one per classification's tokens (a walk gives them ascending) less those the root had:
 * merged pairwise, ceil(log2(runs)) passes over them (3.7 classifications a composition on the 31 schemas), where
 * sort_ids (pda/kernels/sort_ids.h) takes 8 merge passes or 3 radix passes over ~100-300 ids, ~10% of compose's
 * own time. */
static void sort_noted(uint32_t *ids, Py_ssize_t n, uint32_t *tmp, int64_t limit)
{
    Py_ssize_t starts[MERGE_RUNS_MAX + 1];
    int runs = 1;
    starts[0] = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (ids[i] >= ids[i - 1])
            continue;
        if (runs == MERGE_RUNS_MAX) {
            sort_ids(ids, n, tmp, limit);
            return;
        }
        starts[runs++] = i;
    }
    uint32_t *from = ids, *to = tmp;
    while (runs > 1) {
        starts[runs] = n;
        int merged = 0;
        for (int r = 0; r < runs; r += 2) {
            Py_ssize_t lo = starts[r], mid = starts[r + 1], hi = r + 2 <= runs ? starts[r + 2] : n;
            merge_ids(from, to, lo, mid, hi);
            starts[merged++] = lo;
        }
        runs = merged;
        uint32_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != ids)
        memcpy(ids, from, (size_t)n * sizeof(uint32_t));
}

/* The token ids `acc` has that `base` (NULL: zeros) has not, ascending, into acc->added: at most acc->max of
 * them, else acc->overflow. Words that are equal (most) are passed over a block at a time. */
static void added_from_words(Acc *acc, const uint32_t *base)
{
    const uint32_t *words = (const uint32_t *)acc->words;
    static const uint32_t zeros[64];
    acc->n_added = 0;
    for (Py_ssize_t lo = 0; lo < acc->n; lo += 64) {
        Py_ssize_t hi = lo + 64 < acc->n ? lo + 64 : acc->n;
        if (memcmp(words + lo, base ? base + lo : zeros, (size_t)(hi - lo) * 4) == 0)
            continue;
        for (Py_ssize_t i = lo; i < hi; i++) {
            uint32_t bits = words[i] ^ (base ? base[i] : 0u);
            if (!bits)
                continue;
            if (acc->n_added + popcount32(bits) > acc->max) {
                acc->overflow = 1;
                return;
            }
            for (; bits; bits &= bits - 1)
                acc->added[acc->n_added++] = (int32_t)(i * 32 + __builtin_ctz(bits));
        }
    }
}

/* The composed mask by what it adds to `base` (NULL: zeros; base_obj is the object or None), as compose returns
 * it: from the ids noted while composing, or, where an inside mask was ORed in, read off the words. */
static PyObject *result_of(Acc *acc, const uint32_t *base, PyObject *base_obj)
{
    if (!acc->ready) { /* only ids, none in base, at most max with repeats: sorted, repeats dropped */
        if (acc->n_added == 0)
            return Py_NewRef(base_obj);
        sort_noted((uint32_t *)acc->added, acc->n_added, (uint32_t *)acc->tmp, (int64_t)acc->n * 32);
        Py_ssize_t kept = 0;
        for (Py_ssize_t i = 0; i < acc->n_added; i++)
            if (kept == 0 || acc->added[kept - 1] != acc->added[i])
                acc->added[kept++] = acc->added[i];
        ExtendedMaskObject *mask = new_extended(base_obj, kept);
        if (mask != NULL)
            memcpy(mask->ids, acc->added, (size_t)kept * sizeof(int32_t));
        return (PyObject *)mask;
    }
    if (acc->ored && !acc->overflow)
        added_from_words(acc, base);
    if (acc->overflow)
        return PyLong_FromUnsignedLongLong(hash_words((const uint32_t *)acc->words, acc->n));
    if (acc->n_added == 0)
        return Py_NewRef(base_obj);
    ExtendedMaskObject *mask = new_extended(base_obj, acc->n_added);
    if (mask == NULL)
        return NULL;
    memcpy(mask->ids, acc->added, (size_t)acc->n_added * sizeof(int32_t));
    if (!acc->ored) /* noted in the order set: groups' ids interleave */
        sort_noted((uint32_t *)mask->ids, acc->n_added, (uint32_t *)acc->tmp, (int64_t)acc->n * 32);
    return (PyObject *)mask;
}

/* Up to this many ids (a mask's sparse bound; Qwen2's is 296) are noted on the C stack, more in memory made per
 * call. */
#define STACK_IDS 1024

static PyObject *compose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "compose(acc, root, node, ignore, after_boundary, sparse_max)");
        return NULL;
    }
    PyObject *node = args[2], *ignore = args[3], *after_boundary = args[4];
    if (!Py_IS_TYPE(args[1], &ClassificationType)) {
        PyErr_Format(PyExc_TypeError, "root must be a Classification, not %.100s", Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    ClassificationObject *root = (ClassificationObject *)args[1];
    PyObject *groups = root->groups;
    if (groups == NULL || !PyTuple_Check(groups)) {
        PyErr_SetString(PyExc_TypeError, "the root's `groups` is not a tuple");
        return NULL;
    }
    if (!PyLong_Check(ignore) || !PyCallable_Check(after_boundary)) {
        PyErr_SetString(PyExc_TypeError, "ignore must be an int and after_boundary callable");
        return NULL;
    }
    Py_ssize_t sparse_max = PyLong_AsSsize_t(args[5]);
    if (sparse_max == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_IsTrue(ignore) == 0) /* an int: never -1 */
        ignore = NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    /* Held to the end: a callback that changed the root's field leaves its words (`base`) alive. */
    PyObject *base_obj = Py_NewRef(root->inside == NULL ? Py_None : root->inside);
    Py_ssize_t n = view.len / 4, max = sparse_max < 0 ? 0 : sparse_max < n * 32 ? sparse_max : n * 32;
    int32_t stack_ids[2 * STACK_IDS], *ids = max <= STACK_IDS ? stack_ids : PyMem_Malloc((size_t)(2 * max) * 4);
    Acc acc = {(int32_t *)view.buf, n, ids, ids + max, 0, max, 0, 0, NULL, 0};
    Span base_span = {NULL, 0, {0}};
    PyObject *result = NULL;
    if (ids == NULL) {
        PyErr_NoMemory();
        goto release;
    }
    if (!is_int32_format(view.format, view.itemsize)) {
        PyErr_SetString(PyExc_ValueError, "acc must be an int32 buffer");
        goto release;
    }
    if (base_obj != Py_None) {
        int rc = read_ints(root, base_obj, &base_span);
        if (rc < 0)
            goto release;
        if (rc == 1 || base_span.n != n) {
            PyErr_Format(PyExc_ValueError, "the root's inside mask is not %zd int32 words", n);
            goto release;
        }
        if ((const void *)base_span.items == view.buf) {
            PyErr_SetString(PyExc_ValueError, "acc must not be the root's inside mask");
            goto release;
        }
        acc.base = (const uint32_t *)base_span.items; /* the words are made when first needed (see Acc) */
    }
    int failed = root->tokens != NULL && root->tokens != Py_None && add_tokens(&acc, root, root->tokens) < 0;
    Stack stack = {NULL, 0, 0};
    failed = failed || push(&stack, node, groups) < 0;
    while (!failed && stack.n) {
        PyObject *gs = stack.items[--stack.n], *at = stack.items[--stack.n]; /* references moved here */
        PyObject *allowed = PyObject_GetAttr(at, s_allowed);
        failed = allowed == NULL;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(gs) && !failed; i++)
            failed = compose_group(&acc, at, allowed, PyTuple_GET_ITEM(gs, i), ignore, after_boundary, &stack) < 0;
        Py_XDECREF(allowed);
        Py_DECREF(at);
        Py_DECREF(gs);
    }
    clear(&stack);
    if (!failed)
        result = result_of(&acc, acc.base, base_obj);
release:
    if (ids != stack_ids)
        PyMem_Free(ids);
    span_release(&base_span);
    Py_DECREF(base_obj);
    PyBuffer_Release(&view);
    return result;
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
     "The step mask at a lexer state: its root classification's inside tokens with the suffix classifications of "
     "the boundary groups reached from a parser node ORed in; by what they add (see pda/kernels/compose.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef compose_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._compose", NULL, -1, compose_methods,
};

PyMODINIT_FUNC PyInit__compose(void)
{
    if (!(s_allowed = PyUnicode_InternFromString("allowed")) || !(s_probe = PyUnicode_InternFromString("probe"))
        || !(s_tobytes = PyUnicode_InternFromString("tobytes")))
        return NULL;
    if (PyType_Ready(&ClassificationType) < 0 || PyType_Ready(&BoundaryGroupType) < 0
        || PyType_Ready(&ExtendedMaskType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&compose_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Classification", (PyObject *)&ClassificationType) < 0
        || PyModule_AddObjectRef(m, "BoundaryGroup", (PyObject *)&BoundaryGroupType) < 0
        || PyModule_AddObjectRef(m, "ExtendedMask", (PyObject *)&ExtendedMaskType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

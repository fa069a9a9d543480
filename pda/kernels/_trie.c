/* pda.kernels._trie: the trie of a list of byte strings, in preorder, in one pass.
 *
 * Written against the plain Python C API, like _walk.c; pda/kernels/trie.py is the Python
 * side and documents the interface.
 *
 * build(strings) -> (order, parent, byte, depth, end, end_node, child_ptr, child_ids)
 *     strings: a sequence of bytes objects, in any order, duplicates and b"" allowed.
 *     order: int64 [n], the strings' positions sorted by their bytes (ties by position).
 *     The trie's nodes are numbered in preorder with children by byte, root 0: the k-th
 *     string in sorted order creates the nodes for its bytes past the prefix it shares
 *     with the one before it, so every subtree is an id range.
 *     parent, depth, end: int32 [m] (the root's parent is 0; end[v] is one past the last
 *     node of v's subtree); byte: uint8 [m] (0 at the root);
 *     end_node: int32 [n], the node where the k-th sorted string ends (a duplicate at its
 *     twin's, b"" at the root);
 *     child_ptr: int64 [m + 1] and child_ids: int64 [m - 1], the children of p in id order
 *     at child_ids[child_ptr[p]:child_ptr[p + 1]].
 *     All are returned as bytes objects.
 *
 * literal(data) -> (k, byte_class, trans)
 *     The chain DFA of one non-empty byte string of n bytes (`pda.regex.dfa.literal_dfa`): the k
 *     distinct bytes it uses are classes 0..k-1 in byte order, every other byte class k (k < 256;
 *     when all 256 bytes are used, k = 256 and no byte reads it). byte_class: int32 [256];
 *     trans: int32 [n + 2, k + 1], state i reading data[i]'s class to i + 1, every other entry
 *     dead (n + 1). Both returned as bytes objects (native int32).
 *
 * Method (build): the strings' pointers are sorted by a radix sort (skipped when they come sorted),
 * then one pass keeps the current string's path (the node at each depth): a string
 * closes the subtrees of the previous path below their common prefix and opens its own.
 * Time about linear in the total bytes (the radix sort reads each string's bytes once, up to
 * where its bucket drops below 32 strings), memory O(total bytes). The strings are held
 * through a tuple for the duration of the call, so the work runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *data;
    int64_t len;
    int64_t pos;
} Str;

static int compare_str(const void *a, const void *b)
{
    const Str *x = a, *y = b;
    int64_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, (size_t)n) : 0;
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sort a[0:n], which share their first d bytes, stably by bytes: most-significant-byte radix
 * sort (strings that end at d first, then by byte d), insertion sort below 32 strings. The
 * largest bucket is sorted by the loop, the others by recursion, so the recursion is at most
 * log2(n) deep whatever the strings' lengths. `tmp` holds at least n entries. */
static void radix_sort(Str *a, int64_t n, int64_t d, Str *tmp)
{
    int64_t count[257], start[258];
    while (n >= 32) {
        int64_t i, b;
        memset(count, 0, sizeof count);
        for (i = 0; i < n; i++)
            count[a[i].len == d ? 0 : 1 + a[i].data[d]]++;
        start[0] = 0;
        for (b = 0; b < 257; b++)
            start[b + 1] = start[b] + count[b];
        int64_t fill[257];
        memcpy(fill, start, sizeof fill);
        for (i = 0; i < n; i++)
            tmp[fill[a[i].len == d ? 0 : 1 + a[i].data[d]]++] = a[i];
        memcpy(a, tmp, (size_t)n * sizeof(Str));
        int64_t largest = 1;
        for (b = 2; b < 257; b++)
            if (count[b] > count[largest])
                largest = b;
        for (b = 1; b < 257; b++) /* bucket 0 (ended at d) is all equal strings, already in position order */
            if (b != largest && count[b] > 1)
                radix_sort(a + start[b], count[b], d + 1, tmp);
        if (count[largest] <= 1)
            return;
        a += start[largest];
        n = count[largest];
        d++;
    }
    for (int64_t i = 1; i < n; i++) {
        Str x = a[i];
        int64_t j = i;
        while (j > 0 && compare_str(&a[j - 1], &x) > 0) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

typedef struct {
    int64_t *order;
    int32_t *parent, *depth, *end, *end_node;
    uint8_t *byte;
    int64_t *child_ptr, *child_ids;
    int64_t m;
} Trie;

/* Sort `strs` and fill `t` (arrays sized for 1 + total bytes nodes); -1 on memory failure. */
static int build_run(Str *strs, int64_t n, int64_t max_len, Trie *t)
{
    int64_t k, d, v, m = 1;
    int sorted = 1;
    for (k = 1; k < n && sorted; k++)
        sorted = compare_str(&strs[k - 1], &strs[k]) < 0;
    if (!sorted) {
        Str *tmp = malloc(((size_t)n + 1) * sizeof(Str));
        if (tmp == NULL)
            return -1;
        radix_sort(strs, n, 0, tmp);
        free(tmp);
    }
    int32_t *path = malloc(((size_t)max_len + 1) * sizeof(int32_t));
    if (path == NULL)
        return -1;
    path[0] = 0;
    t->parent[0] = t->depth[0] = 0;
    t->byte[0] = 0;
    int64_t prev_len = 0;
    const unsigned char *prev = NULL;
    for (k = 0; k < n; k++) {
        const Str *s = &strs[k];
        int64_t lcp = 0, limit = s->len < prev_len ? s->len : prev_len;
        while (lcp < limit && s->data[lcp] == prev[lcp])
            lcp++;
        for (d = prev_len; d > lcp; d--) /* the previous path's nodes below the shared prefix are done */
            t->end[path[d]] = (int32_t)m;
        for (d = lcp; d < s->len; d++) {
            t->parent[m] = path[d];
            t->byte[m] = s->data[d];
            t->depth[m] = (int32_t)(d + 1);
            path[d + 1] = (int32_t)m++;
        }
        t->end_node[k] = path[s->len];
        t->order[k] = s->pos;
        prev = s->data;
        prev_len = s->len;
    }
    for (d = prev_len; d >= 0; d--)
        t->end[path[d]] = (int32_t)m;
    free(path);
    t->m = m;
    /* children by parent, in id order (a counting sort) */
    memset(t->child_ptr, 0, ((size_t)m + 1) * sizeof(int64_t));
    for (v = 1; v < m; v++)
        t->child_ptr[t->parent[v] + 1]++;
    for (v = 0; v < m; v++)
        t->child_ptr[v + 1] += t->child_ptr[v];
    int64_t *fill = malloc(((size_t)m + 1) * sizeof(int64_t));
    if (fill == NULL)
        return -1;
    memcpy(fill, t->child_ptr, ((size_t)m + 1) * sizeof(int64_t));
    for (v = 1; v < m; v++)
        t->child_ids[fill[t->parent[v]]++] = v;
    free(fill);
    return 0;
}

static PyObject *build(PyObject *self, PyObject *arg)
{
    PyObject *tuple = PySequence_Tuple(arg), *result = NULL;
    if (tuple == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple), k;
    Str *strs = malloc(((size_t)n + 1) * sizeof(Str));
    if (strs == NULL) {
        Py_DECREF(tuple);
        return PyErr_NoMemory();
    }
    int64_t total = 0, max_len = 0;
    for (k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "strings[%zd] is %.100s, not bytes", k, Py_TYPE(item)->tp_name);
            goto done;
        }
        strs[k].data = (const unsigned char *)PyBytes_AS_STRING(item);
        strs[k].len = PyBytes_GET_SIZE(item);
        strs[k].pos = k;
        total += strs[k].len;
        if (strs[k].len > max_len)
            max_len = strs[k].len;
    }
    if (total >= INT32_MAX || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the strings hold more than 2**31 - 2 bytes: too many trie nodes");
        goto done;
    }
    size_t cap = (size_t)total + 1;
    Trie t = {0};
    t.order = malloc(((size_t)n + 1) * sizeof(int64_t));
    t.end_node = malloc(((size_t)n + 1) * sizeof(int32_t));
    t.parent = malloc(cap * sizeof(int32_t));
    t.depth = malloc(cap * sizeof(int32_t));
    t.end = malloc(cap * sizeof(int32_t));
    t.byte = malloc(cap);
    t.child_ptr = malloc((cap + 1) * sizeof(int64_t));
    t.child_ids = malloc(cap * sizeof(int64_t));
    int status = -1;
    if (t.order && t.end_node && t.parent && t.depth && t.end && t.byte && t.child_ptr && t.child_ids) {
        Py_BEGIN_ALLOW_THREADS
        status = build_run(strs, n, max_len, &t);
        Py_END_ALLOW_THREADS
    }
    if (status < 0)
        PyErr_NoMemory();
    else
        result = Py_BuildValue(
            "(y#y#y#y#y#y#y#y#)",
            (const char *)t.order, (Py_ssize_t)(n * 8), (const char *)t.parent, (Py_ssize_t)(t.m * 4),
            (const char *)t.byte, (Py_ssize_t)t.m, (const char *)t.depth, (Py_ssize_t)(t.m * 4),
            (const char *)t.end, (Py_ssize_t)(t.m * 4), (const char *)t.end_node, (Py_ssize_t)(n * 4),
            (const char *)t.child_ptr, (Py_ssize_t)((t.m + 1) * 8), (const char *)t.child_ids,
            (Py_ssize_t)((t.m - 1) * 8));
    free(t.order); free(t.end_node); free(t.parent); free(t.depth); free(t.end); free(t.byte);
    free(t.child_ptr); free(t.child_ids);
done:
    free(strs);
    Py_DECREF(tuple);
    return result;
}

/* literal(data): see the header. A JSON Schema has hundreds of key literals; in Python these
 * tables took ~4 us of a key's ~11 us. */
static PyObject *literal(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyBytes_Check(arg) || PyBytes_GET_SIZE(arg) == 0) {
        PyErr_SetString(PyExc_TypeError, "literal(data): data must be non-empty bytes");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    if (n >= INT32_MAX - 2) {
        PyErr_SetString(PyExc_ValueError, "literal(data): data too long for int32 states");
        return NULL;
    }
    unsigned char used[256] = {0};
    for (Py_ssize_t i = 0; i < n; i++)
        used[data[i]] = 1;
    int32_t classes[256];
    int32_t k = 0;
    for (int b = 0; b < 256; b++)
        if (used[b])
            classes[b] = k++;
    for (int b = 0; b < 256; b++)
        if (!used[b])
            classes[b] = k < 256 ? k : 255; /* k == 256: every byte is used, this line never runs */
    Py_ssize_t width = (Py_ssize_t)k + 1;
    if ((n + 2) > PY_SSIZE_T_MAX / width / 4) {
        PyErr_SetString(PyExc_ValueError, "literal(data): table too large");
        return NULL;
    }
    PyObject *trans = PyBytes_FromStringAndSize(NULL, (n + 2) * width * 4);
    if (!trans)
        return NULL;
    int32_t *t = (int32_t *)PyBytes_AS_STRING(trans);
    int32_t dead = (int32_t)(n + 1);
    for (Py_ssize_t i = 0; i < (n + 2) * width; i++)
        t[i] = dead;
    for (Py_ssize_t i = 0; i < n; i++)
        t[i * width + classes[data[i]]] = (int32_t)(i + 1);
    PyObject *result = Py_BuildValue("(iy#O)", (int)k, (const char *)classes, (Py_ssize_t)sizeof(classes), trans);
    Py_DECREF(trans);
    return result;
}

static PyMethodDef trie_methods[] = {
    {"build", build, METH_O,
     "build(strings) -> (order, parent, byte, depth, end, end_node, child_ptr, child_ids) as bytes (see the source)."},
    {"literal", literal, METH_O, "literal(data) -> (k, byte_class, trans) as bytes (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef trie_module = {
    PyModuleDef_HEAD_INIT, "pda.kernels._trie",
    "The preorder trie of a list of byte strings (pda/kernels/trie.py).", -1, trie_methods,
};

PyMODINIT_FUNC PyInit__trie(void)
{
    return PyModule_Create(&trie_module);
}

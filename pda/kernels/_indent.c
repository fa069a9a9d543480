/* pda.kernels._indent: an indenter state's probe over a parser lexeme, compiled.
 *
 * Written against the plain Python C API, like the other kernels; pda/kernels/indent.py is
 * the Python side and documents the interface, and pda.parser.indent subclasses both types
 * (`Indenter`, `IndentedNode`), whose Python `_step(terminals, probe=True)` is the oracle the
 * tests compare `probe` to.
 *
 * Invariants:
 * - Every field is a Python object reference or NULL (an unset field reads as None); both
 *   types are collected by the garbage collector and visit every field.
 * - `probe` gives what `_step(terminals & allowed, probe=True)` gives: it runs only the parser
 *   lexeme's path (no terminal of `special`) here and calls back into Python for the others,
 *   and for a state whose `allowed` needs the newline rules (depth 0, the parser can take a
 *   newline). It holds the GIL (it calls Python).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *special, *brackets, *opens, *not_parser_only, *in_brackets, *newline, *continuation, *line_mode;
} TablesObject;

typedef struct {
    PyObject_HEAD
    PyObject *indenter, *earley, *stack, *depth, *line_start, *mode, *may_end, *continued, *allowed;
    PyObject *next, *accepting, *cache;
    PyObject *weakreflist;
} StateObject;

static PyTypeObject TablesType;
static PyTypeObject StateType;
static PyObject *s_probe, *s_allowed, *s_step, *s_allowed_method, *kw_probe;

/* ---------------------------------------------------------------- IndenterTables */

#define TABLES_FIELDS(X) \
    X(special) X(brackets) X(opens) X(not_parser_only) X(in_brackets) X(newline) X(continuation) X(line_mode)

static int Tables_traverse(TablesObject *t, visitproc visit, void *arg)
{
#define VISIT(f) Py_VISIT(t->f);
    TABLES_FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int Tables_clear(TablesObject *t)
{
#define CLEAR(f) Py_CLEAR(t->f);
    TABLES_FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void Tables_dealloc(TablesObject *t)
{
    PyObject_GC_UnTrack(t);
    Tables_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMemberDef Tables_members[] = {
#define MEMBER(f) {#f, T_OBJECT, offsetof(TablesObject, f), 0, NULL},
    TABLES_FIELDS(MEMBER)
#undef MEMBER
    {NULL}};

static PyTypeObject TablesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._indent.IndenterTables",
    .tp_basicsize = sizeof(TablesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The bit sets an indenter state's probe reads (attributes, set by the subclass).",
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)Tables_traverse,
    .tp_clear = (inquiry)Tables_clear,
    .tp_dealloc = (destructor)Tables_dealloc,
    .tp_members = Tables_members,
};

/* ---------------------------------------------------------------- IndentedState */

#define STATE_FIELDS(X) \
    X(indenter) X(earley) X(stack) X(depth) X(line_start) X(mode) X(may_end) X(continued) X(allowed) \
    X(next) X(accepting) X(cache)

static int State_traverse(StateObject *x, visitproc visit, void *arg)
{
#define VISIT(f) Py_VISIT(x->f);
    STATE_FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int State_clear(StateObject *x)
{
#define CLEAR(f) Py_CLEAR(x->f);
    STATE_FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void State_dealloc(StateObject *x)
{
    PyObject_GC_UnTrack(x);
    if (x->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)x);
    Py_TRASHCAN_BEGIN(x, State_dealloc)
    State_clear(x);
    Py_TYPE(x)->tp_free((PyObject *)x);
    Py_TRASHCAN_END
}

/* Whether a & b is not 0: 1, 0, or -1 with an exception. */
static int meets(PyObject *a, PyObject *b)
{
    PyObject *both = PyNumber_And(a, b);
    int is;
    if (!both)
        return -1;
    is = PyObject_IsTrue(both);
    Py_DECREF(both);
    return is;
}

/* (a & b) | c, a new reference. */
static PyObject *and_or(PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *both = PyNumber_And(a, b), *result;
    if (!both)
        return NULL;
    result = PyNumber_Or(both, c);
    Py_DECREF(both);
    return result;
}

/* The allowed set of y, a state after a parser lexeme (mode line_mode, nothing continued). */
static PyObject *allowed_after_lexeme(StateObject *y, TablesObject *t)
{
    PyObject *earley_allowed;
    PyObject *result = NULL;
    long depth = PyLong_AsLong(y->depth);
    int newline;
    if (depth == -1 && PyErr_Occurred())
        return NULL;
    if (!(earley_allowed = PyObject_GetAttr(y->earley, s_allowed)))
        return NULL;
    if (depth > 0)
        result = and_or(earley_allowed, t->not_parser_only, t->in_brackets);
    else if ((newline = meets(earley_allowed, t->newline)) == 0)
        result = and_or(earley_allowed, t->not_parser_only, t->continuation);
    else if (newline > 0) /* the newline rules read the stack: Python's `_allowed` */
        result = PyObject_CallMethodNoArgs((PyObject *)y, s_allowed_method);
    Py_DECREF(earley_allowed);
    return result;
}

/* A new state of x's type after a parser lexeme: Earley node `earley`, bracket depth `depth`. */
static PyObject *state_after_lexeme(StateObject *x, TablesObject *t, PyObject *earley, PyObject *depth)
{
    PyTypeObject *type = Py_TYPE(x);
    StateObject *y = (StateObject *)type->tp_alloc(type, 0);
    if (!y)
        return NULL;
    Py_INCREF(x->indenter);
    y->indenter = x->indenter;
    Py_INCREF(earley);
    y->earley = earley;
    Py_INCREF(x->stack);
    y->stack = x->stack;
    Py_INCREF(depth);
    y->depth = depth;
    Py_INCREF(Py_False);
    y->line_start = Py_False;
    Py_INCREF(t->line_mode);
    y->mode = t->line_mode;
    Py_INCREF(Py_False);
    y->may_end = Py_False;
    Py_INCREF(Py_False);
    y->continued = Py_False;
    if (!(y->allowed = allowed_after_lexeme(y, t))) {
        Py_DECREF(y);
        return NULL;
    }
    return (PyObject *)y;
}

/* The parser lexeme's path of `probe`: `masked` has no special terminal. */
static PyObject *probe_parser_lexeme(StateObject *x, TablesObject *t, PyObject *masked)
{
    PyObject *earley, *depth, *result;
    int bracket, opens;
    if (!(earley = PyObject_CallMethodOneArg(x->earley, s_probe, masked)))
        return NULL;
    if (earley == Py_None)
        return earley;
    if ((bracket = meets(masked, t->brackets)) < 0) {
        Py_DECREF(earley);
        return NULL;
    }
    if (!bracket) {
        Py_INCREF(x->depth);
        depth = x->depth;
    } else {
        long d = PyLong_AsLong(x->depth);
        if ((d == -1 && PyErr_Occurred()) || (opens = meets(masked, t->opens)) < 0) {
            Py_DECREF(earley);
            return NULL;
        }
        d += opens ? 1 : -1;
        if (d < 0) {
            Py_DECREF(earley);
            Py_RETURN_NONE;
        }
        if (!(depth = PyLong_FromLong(d))) {
            Py_DECREF(earley);
            return NULL;
        }
    }
    result = state_after_lexeme(x, t, earley, depth);
    Py_DECREF(earley);
    Py_DECREF(depth);
    return result;
}

static PyObject *State_probe(StateObject *x, PyObject *terminals)
{
    TablesObject *t = (TablesObject *)x->indenter;
    PyObject *masked, *result;
    int is;
    if (!PyLong_Check(terminals)) {
        PyErr_SetString(PyExc_TypeError, "terminals must be an int bitmask");
        return NULL;
    }
    if (!t || !PyObject_TypeCheck((PyObject *)t, &TablesType) || !x->earley || !x->stack || !x->depth
        || !x->allowed) {
        PyErr_SetString(PyExc_TypeError, "an indenter state without its indenter, parser node, stack, depth or allowed set");
        return NULL;
    }
#define CHECK(f) || !t->f
    if (0 TABLES_FIELDS(CHECK)) {
        PyErr_SetString(PyExc_TypeError, "the indenter's tables are not all set");
        return NULL;
    }
#undef CHECK
    if (!(masked = PyNumber_And(terminals, x->allowed)))
        return NULL;
    if ((is = PyObject_IsTrue(masked)) <= 0) {
        Py_DECREF(masked);
        if (is < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (x->next && x->next != Py_None) { /* advance's memo */
        if (!PyDict_Check(x->next)) {
            Py_DECREF(masked);
            PyErr_SetString(PyExc_TypeError, "an indenter state's `_next` is not a dict");
            return NULL;
        }
        if ((result = PyDict_GetItemWithError(x->next, masked)) || PyErr_Occurred()) {
            Py_XINCREF(result);
            Py_DECREF(masked);
            return result;
        }
    }
    if ((is = meets(masked, t->special)) != 0) {
        PyObject *args[] = {(PyObject *)x, masked, Py_True};
        result = is < 0 ? NULL : PyObject_VectorcallMethod(s_step, args, 2, kw_probe);
    } else {
        result = probe_parser_lexeme(x, t, masked);
    }
    Py_DECREF(masked);
    return result;
}

static PyMemberDef State_members[] = {
#define MEMBER(f) {#f, T_OBJECT, offsetof(StateObject, f), 0, NULL},
    MEMBER(indenter) MEMBER(earley) MEMBER(stack) MEMBER(depth) MEMBER(line_start) MEMBER(mode) MEMBER(may_end)
    MEMBER(continued) MEMBER(allowed)
#undef MEMBER
    {"_next", T_OBJECT, offsetof(StateObject, next), 0, NULL},
    {"_accepting", T_OBJECT, offsetof(StateObject, accepting), 0, NULL},
    {"_cache", T_OBJECT, offsetof(StateObject, cache), 0, NULL},
    {NULL}};

static PyMethodDef State_methods[] = {
    {"probe", (PyCFunction)State_probe, METH_O,
     "The state after a lexeme that matched `terminals`, memoised and interned nowhere: for masks."},
    {NULL}};

static PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pda.kernels._indent.IndentedState",
    .tp_basicsize = sizeof(StateObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An indenter state's fields (an unset one reads None) and its probe.",
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)State_traverse,
    .tp_clear = (inquiry)State_clear,
    .tp_dealloc = (destructor)State_dealloc,
    .tp_weaklistoffset = offsetof(StateObject, weakreflist),
    .tp_members = State_members,
    .tp_methods = State_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pda.kernels._indent", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__indent(void)
{
    PyObject *m;
    if (!(s_probe = PyUnicode_InternFromString("probe")) || !(s_allowed = PyUnicode_InternFromString("allowed"))
        || !(s_step = PyUnicode_InternFromString("_step"))
        || !(s_allowed_method = PyUnicode_InternFromString("_allowed"))
        || !(kw_probe = Py_BuildValue("(s)", "probe")))
        return NULL;
    if (PyType_Ready(&TablesType) < 0 || PyType_Ready(&StateType) < 0 || !(m = PyModule_Create(&module)))
        return NULL;
    if (PyModule_AddObjectRef(m, "IndenterTables", (PyObject *)&TablesType) < 0
        || PyModule_AddObjectRef(m, "IndentedState", (PyObject *)&StateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* A Python int bit set as little-endian 64-bit words, shared by pda/kernels/_earley.c (a node's allowed
 * terminals) and pda/kernels/_scan.c (a view's candidate and allowed sets). Include after <Python.h>. */
#ifndef PDA_INT_WORDS_H
#define PDA_INT_WORDS_H

#include <stdint.h>

/* A non-negative int below 2 ** (64 words) into `words` words; 0, or -1 with an exception (OverflowError: too
 * big, or a negative int). */
static int int_to_words(PyObject *v, uint64_t *out, Py_ssize_t words)
{
    unsigned char stack[512], *bytes = (size_t)words * 8 <= sizeof(stack) ? stack : PyMem_Malloc((size_t)words * 8);
    int ok;
    if (!bytes) {
        PyErr_NoMemory();
        return -1;
    }
#if PY_VERSION_HEX >= 0x030D0000
    ok = _PyLong_AsByteArray((PyLongObject *)v, bytes, (size_t)words * 8, 1, 0, 1);
#else
    ok = _PyLong_AsByteArray((PyLongObject *)v, bytes, (size_t)words * 8, 1, 0);
#endif
    if (ok == 0)
        for (Py_ssize_t w = 0; w < words; w++) {
            uint64_t x = 0;
            for (int b = 7; b >= 0; b--)
                x = x << 8 | bytes[8 * w + b];
            out[w] = x;
        }
    if (bytes != stack)
        PyMem_Free(bytes);
    return ok < 0 ? -1 : 0;
}

#endif

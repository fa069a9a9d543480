/* The layout of pda.kernels._compose.ExtendedMask (pda/kernels/_compose.c makes them; pda/_rows.c writes them
 * into rows): a shared int32 mask extended by a few token ids. Include after <Python.h>. */
#ifndef PDA_EXTENDED_MASK_H
#define PDA_EXTENDED_MASK_H

#include <stdint.h>

/* `base`: a C-contiguous int32 buffer (the shared mask) or Py_None (no words); Py_SIZE(self) token ids in
 * `ids`, ascending and distinct, each in [0, 2**31). The mask is base's words (zero past them) with the ids' bits
 * set; a writer writes as many of its words as its row holds. */
typedef struct {
    PyObject_VAR_HEAD
    PyObject *base;
    int32_t ids[];
} ExtendedMaskObject;

#endif

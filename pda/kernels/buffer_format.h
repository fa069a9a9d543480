/* Buffer format codes as the compiled modules read them (pda/_rows.c, pda/kernels/_compose.c,
 * pda/kernels/_product.c, pda/kernels/_walk.c): one reading of the byte-order prefix for all of them.
 * Include after <Python.h>. */
#ifndef PDA_BUFFER_FORMAT_H
#define PDA_BUFFER_FORMAT_H

/* The format past a native byte-order prefix ('@', '=', and '<' on a little-endian machine); any other
 * prefix ('>', '!') is left in place, so no plain code matches it. */
static inline const char *native_code(const char *format)
{
    if (*format == '@' || *format == '=')
        return format + 1;
#if PY_LITTLE_ENDIAN
    if (*format == '<')
        return format + 1;
#endif
    return format;
}

/* 1 if a buffer format names a native 4-byte signed integer ("i", "l" where long is 4 bytes). */
static inline int is_int32_format(const char *format, Py_ssize_t itemsize)
{
    if (format == NULL || itemsize != 4)
        return 0;
    format = native_code(format);
    return (format[0] == 'i' || format[0] == 'l') && format[1] == '\0';
}

#endif

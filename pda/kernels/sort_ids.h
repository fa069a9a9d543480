/* Sorting token ids ascending, shared by pda/kernels/_walk.c (a sparse walk's inside tokens) and
 * pda/kernels/_compose.c (the ids a composed mask adds). Include after <Python.h>. */
#ifndef PDA_SORT_IDS_H
#define PDA_SORT_IDS_H

#include <stdint.h>
#include <string.h>

/* Up to this many ids are sorted by insertion (a sparse walk's p50 is 3 tokens). */
#define SORT_IDS_INSERTION_MAX 32
/* Up to this many, by a bottom-up merge sort; more, by radix. Timed on ids below 128256 (a 128k vocabulary),
 * random or in a few ascending runs: the merge sort wins below ~300 ids (a radix pass pays for its 256 counts
 * three times), the radix sort above (3 passes against log2(n)); a mask's sparse bound is 250 there. */
#define SORT_IDS_MERGE_MAX 256

/* Merges the ascending runs from[lo:mid] and from[mid:hi] into to[lo:hi]. */
static inline void merge_ids(const uint32_t *from, uint32_t *to, Py_ssize_t lo, Py_ssize_t mid, Py_ssize_t hi)
{
    Py_ssize_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        to[k++] = from[i] <= from[j] ? from[i++] : from[j++];
    while (i < mid)
        to[k++] = from[i++];
    while (j < hi)
        to[k++] = from[j++];
}

/* Sorts the n ids ascending in place through `tmp` (room for n); `limit` is one past the largest id (the radix
 * sort passes over the bytes it needs). qsort's call per comparison cost more than the comparisons. */
static void sort_ids(uint32_t *ids, Py_ssize_t n, uint32_t *tmp, int64_t limit)
{
    if (n <= SORT_IDS_INSERTION_MAX) {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint32_t v = ids[i];
            Py_ssize_t j = i;
            for (; j > 0 && ids[j - 1] > v; j--)
                ids[j] = ids[j - 1];
            ids[j] = v;
        }
        return;
    }
    uint32_t *from = ids, *to = tmp;
    if (n <= SORT_IDS_MERGE_MAX) {
        for (Py_ssize_t width = 1; width < n; width *= 2) {
            for (Py_ssize_t lo = 0; lo < n; lo += 2 * width) {
                Py_ssize_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
                merge_ids(from, to, lo, mid, hi);
            }
            uint32_t *swap = from;
            from = to;
            to = swap;
        }
    } else {
        for (int shift = 0; shift < 32 && (limit - 1) >> shift > 0; shift += 8) {
            Py_ssize_t count[257] = {0};
            for (Py_ssize_t i = 0; i < n; i++)
                count[((from[i] >> shift) & 0xFF) + 1]++;
            for (int d = 0; d < 256; d++)
                count[d + 1] += count[d];
            for (Py_ssize_t i = 0; i < n; i++)
                to[count[(from[i] >> shift) & 0xFF]++] = from[i];
            uint32_t *swap = from;
            from = to;
            to = swap;
        }
    }
    if (from != ids)
        memcpy(ids, from, (size_t)n * sizeof(uint32_t));
}

#endif

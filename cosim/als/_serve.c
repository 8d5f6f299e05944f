/* The compiled master-worker loop of cosim.als.runtime (LoopRun.advance), chunk serves only.
 *
 * One call serves requests in serve order while every one of them is a plain chunk: it stops
 * before a request whose serve tick reaches `until`, when `stop_at` chunks have been handed
 * out, when the chunk table block is full, and before a request that needs the Python loop (a
 * removed rank's, or one served with nothing left in the step). The arithmetic is the Python
 * loop's, operation for operation: integer ticks, the flop of a chunk as the difference of two
 * float64 prefix sums, its duration as round-half-even(flop * ticks_per_flop) (nearbyint in the
 * default rounding mode; built with -ffp-contract=off so nothing is fused). Requests are kept in
 * a 4-ary heap of one-word keys ((arrival - base) << bits | rank), bits the width of the
 * largest rank: the order of the Python heap's packed keys (arrival << 20 | rank). Keys are
 * unique, so the pop order does not depend on the heap's layout. When an arrival would not fit
 * the word the base moves up to the earliest arrival; if it still does not fit, that one chunk
 * goes back to the Python loop. Chunk sizes come from
 * `fixed` (a technique that answers every request alike) or from calling the planner's `next`.
 * State goes in and out through Python objects and buffers; see LoopRun._advance_compiled.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

typedef uint64_t Key;

/* The top was replaced: move the hole at the root down along the smallest children to a
 * leaf, then back up to where the new top belongs (Floyd's bottom-up sift: a new request
 * usually belongs near the bottom). 4-ary: half the depth of a binary heap, and a node's
 * children share a cache line. */
static void sift_down(Key *h, Py_ssize_t n, Py_ssize_t i)
{
    Key x = h[i];
    Py_ssize_t start = i;
    for (;;) {
        Py_ssize_t c = 4 * i + 1;
        if (c + 3 < n) { /* branch-free smallest of four */
            Py_ssize_t a = c + (h[c + 1] < h[c]);
            Py_ssize_t b = c + 2 + (h[c + 3] < h[c + 2]);
            Py_ssize_t less = -(Py_ssize_t)(h[b] < h[a]);
            c = a ^ ((a ^ b) & less);
        } else if (c < n) {
            for (Py_ssize_t k = c + 1; k < n; k++)
                if (h[k] < h[c])
                    c = k;
        } else {
            break;
        }
        h[i] = h[c];
        i = c;
    }
    while (i > start) {
        Py_ssize_t parent = (i - 1) / 4;
        if (x >= h[parent])
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = x;
}

/* Binary-heap order for the way back: Python's heapq needs it (the keys map monotonically to
 * the Python keys, so a binary heap of these is one of those). */
static void binary_heapify(Key *h, Py_ssize_t n)
{
    for (Py_ssize_t j = n / 2; j-- > 0;) {
        Py_ssize_t i = j;
        Key x = h[i];
        for (;;) {
            Py_ssize_t c = 2 * i + 1;
            if (c >= n)
                break;
            if (c + 1 < n && h[c + 1] < h[c])
                c++;
            if (x <= h[c])
                break;
            h[i] = h[c];
            i = c;
        }
        h[i] = x;
    }
}

/* x rounded to the nearest integer, ties to even, as Python's round(): adding and removing
 * 2^52 makes the FPU round at the units place in its default mode (x >= 0 here; from 2^52 on
 * every double is an integer already). Faster than a libm call on baseline x86-64. */
static inline double round_even(double x)
{
    return x < 0x1p52 ? (x + 0x1p52) - 0x1p52 : x;
}

enum { STOPPED = 0, SPECIAL = 1, FULL = 2, EMPTY = 3, WIDE = 4 };

#define SHIFT 20
#define MASK ((1LL << SHIFT) - 1)

static int get_buffer(PyObject *o, Py_buffer *b, const char *fmt, Py_ssize_t min_len,
                      int writable, const char *name)
{
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                                     (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    /* int64 is 'q' or 'l' (numpy on LP64), float64 'd'; native order only */
    const char *f = b->format ? b->format : "";
    if (*f == '@' || *f == '=')
        f++;
    int kind_ok = fmt[0] == 'd' ? strcmp(f, "d") == 0 : (strcmp(f, "q") == 0 || strcmp(f, "l") == 0);
    if (b->itemsize != 8 || !kind_ok || b->len / 8 < min_len) {
        PyErr_Format(PyExc_ValueError, "_serve: %s must be a contiguous %s buffer of >= %zd "
                     "items", name, fmt, min_len);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* A Python heap key (arrival << SHIFT) | rank as its two parts; the arrival may need more
 * than 43 bits, so a key may not fit a long long. */
static int split_key(PyObject *k, int64_t *t, int64_t *r)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
    if (!overflow) {
        if (v == -1 && PyErr_Occurred())
            return -1;
        *t = v >> SHIFT;
        *r = v & MASK;
        return 0;
    }
    PyObject *d = PyLong_FromLongLong(1LL << SHIFT);
    PyObject *qr = d ? PyNumber_Divmod(k, d) : NULL;
    Py_XDECREF(d);
    if (qr == NULL)
        return -1;
    *t = PyLong_AsLongLong(PyTuple_GET_ITEM(qr, 0));
    *r = PyLong_AsLongLong(PyTuple_GET_ITEM(qr, 1));
    Py_DECREF(qr);
    return PyErr_Occurred() ? -1 : 0;
}

/* serve(heap, until, stop_at, state, n, min_chunk, overhead, fixed, next, step,
 *       prefix, req, asg, tpf, removed_at, finish, block, pos)
 *   heap: list of packed keys (arrival << 20 | rank), replaced in place
 *   state: list [mfree, remaining, n_chunks, served], updated in place
 *   fixed: raw chunk size of every request, or 0 to call next(rank, remaining)
 *   prefix: float64 prefix sums (n + 1); req, asg, removed_at: int64 per rank; tpf: float64
 *   ticks per flop per rank; finish: list, per rank end of its last chunk, updated in place
 *   block: int64 (7, cap), columns rank, first, size, t_assign, t_start, t_end, step, or None
 *   pos: rows of block already filled
 * returns (status, pos)
 */
static PyObject *serve(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 18) {
        PyErr_SetString(PyExc_TypeError, "_serve.serve takes 18 arguments");
        return NULL;
    }
    PyObject *heap_list = args[0], *state = args[3], *next = args[8], *finish_list = args[15];
    PyObject *block_obj = args[16];
    if (!PyList_CheckExact(heap_list) || !PyList_CheckExact(state) ||
        PyList_GET_SIZE(state) != 4 || !PyList_CheckExact(finish_list)) {
        PyErr_SetString(PyExc_TypeError, "_serve.serve: heap, state and finish are lists");
        return NULL;
    }
    long long until = PyLong_AsLongLong(args[1]);
    long long stop_at = PyLong_AsLongLong(args[2]);
    long long n = PyLong_AsLongLong(args[4]);
    long long mc = PyLong_AsLongLong(args[5]);
    long long ovh = PyLong_AsLongLong(args[6]);
    long long fixed = PyLong_AsLongLong(args[7]);
    long long step = PyLong_AsLongLong(args[9]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[17]);
    long long mfree = PyLong_AsLongLong(PyList_GET_ITEM(state, 0));
    long long remaining = PyLong_AsLongLong(PyList_GET_ITEM(state, 1));
    long long n_chunks = PyLong_AsLongLong(PyList_GET_ITEM(state, 2));
    long long served = PyLong_AsLongLong(PyList_GET_ITEM(state, 3));
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t p = PyList_GET_SIZE(finish_list);

    Py_buffer bpref, breq, basg, btpf, brem, bblk;
    int have_blk = block_obj != Py_None;
    PyObject *result = NULL;
    Py_ssize_t hn = PyList_GET_SIZE(heap_list);
    Key *heap = NULL, rmask = 0, span = 0;
    int64_t *ht = NULL, *hr = NULL, base = 0;
    int bits = 1;
    int64_t *finish = NULL;
    unsigned char *dirty = NULL;
    const double *pref, *tpf;
    const int64_t *req, *asg, *removed_at;
    int64_t *rows;
    Py_ssize_t cap;
    int status = EMPTY, failed = 0;
    if (get_buffer(args[10], &bpref, "d", n + 1, 0, "prefix") < 0)
        return NULL;
    if (get_buffer(args[11], &breq, "q", p, 0, "req") < 0)
        goto fail_pref;
    if (get_buffer(args[12], &basg, "q", p, 0, "asg") < 0)
        goto fail_req;
    if (get_buffer(args[13], &btpf, "d", p, 0, "tpf") < 0)
        goto fail_asg;
    if (get_buffer(args[14], &brem, "q", p, 0, "removed_at") < 0)
        goto fail_tpf;
    if (have_blk && get_buffer(block_obj, &bblk, "q", 0, 1, "block") < 0)
        goto fail_rem;
    pref = bpref.buf;
    tpf = btpf.buf;
    req = breq.buf;
    asg = basg.buf;
    removed_at = brem.buf;
    rows = have_blk ? (int64_t *)bblk.buf : NULL;
    cap = have_blk ? bblk.len / (7 * 8) : 0;
    heap = PyMem_Malloc(sizeof(Key) * (hn ? hn : 1));
    ht = PyMem_Malloc(sizeof(int64_t) * (hn ? hn : 1));
    hr = PyMem_Malloc(sizeof(int64_t) * (hn ? hn : 1));
    finish = PyMem_Malloc(sizeof(int64_t) * (p ? p : 1));
    dirty = PyMem_Calloc(p ? p : 1, 1);
    if (heap == NULL || ht == NULL || hr == NULL || finish == NULL || dirty == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < hn; i++) {
        if (split_key(PyList_GET_ITEM(heap_list, i), &ht[i], &hr[i]) < 0)
            goto done;
        if (hr[i] < 0 || hr[i] >= p) {
            PyErr_SetString(PyExc_ValueError, "_serve: heap key names an unknown rank");
            goto done;
        }
        if (i == 0 || ht[i] < base)
            base = ht[i];
    }
    while (bits < 62 && (1LL << bits) < p)
        bits++;
    rmask = ((Key)1 << bits) - 1;
    span = (Key)1 << (63 - bits); /* arrivals in [base, base + span) fit a key */
    for (Py_ssize_t i = 0; i < hn; i++) {
        if ((Key)(ht[i] - base) >= span) { /* pending arrivals wider apart than a key holds: */
            result = Py_BuildValue("(in)", WIDE, pos); /* one chunk in Python, nothing here */
            goto done;
        }
        heap[i] = (Key)(ht[i] - base) << bits | (Key)hr[i];
    }
    for (Py_ssize_t i = hn / 4 + 1; i-- > 0;)
        sift_down(heap, hn, i);
    for (Py_ssize_t i = 0; i < p; i++) {
        finish[i] = PyLong_AsLongLong(PyList_GET_ITEM(finish_list, i));
    }
    if (PyErr_Occurred())
        goto done;

    while (hn > 0) {
        int64_t t = base + (int64_t)(heap[0] >> bits), rank = (int64_t)(heap[0] & rmask);
        int64_t s = t > mfree ? t : mfree;
        if (s >= until || n_chunks >= stop_at) {
            status = STOPPED;
            break;
        }
        if (s >= removed_at[rank] || remaining == 0) {
            status = SPECIAL;
            break;
        }
        if (have_blk && pos >= cap) {
            status = FULL;
            break;
        }
        long long size;
        if (fixed > 0) {
            size = fixed;
        } else {
            PyObject *a[2];
            a[0] = PyLong_FromLongLong(rank);
            a[1] = PyLong_FromLongLong(remaining);
            PyObject *res = NULL;
            if (a[0] != NULL && a[1] != NULL)
                res = PyObject_Vectorcall(next, a, 2, NULL);
            Py_XDECREF(a[0]);
            Py_XDECREF(a[1]);
            if (res == NULL) {
                failed = 1;
                break;
            }
            int overflow = 0;
            size = PyLong_AsLongLongAndOverflow(res, &overflow);
            Py_DECREF(res);
            if (overflow > 0)
                size = remaining; /* clamped to remaining below, as in Python */
            else if (overflow < 0)
                size = mc;
            else if (size == -1 && PyErr_Occurred()) {
                failed = 1;
                break;
            }
        }
        if (size < mc)
            size = mc;
        if (size > remaining)
            size = remaining;
        /* the request this chunk's end sends must fit a key: move the base to the earliest
         * arrival (the top's), else leave the chunk to the Python loop */
        int64_t ends = s + ovh + asg[rank] +
                       (int64_t)round_even((pref[n - remaining + size] - pref[n - remaining]) *
                                           tpf[rank]);
        int64_t arrival = ends + req[rank];
        if ((Key)(arrival - base) >= span) {
            if ((Key)(arrival - t) >= span) {
                status = WIDE;
                break;
            }
            Key shift = (Key)(t - base) << bits;
            for (Py_ssize_t i = 0; i < hn; i++)
                heap[i] -= shift;
            base = t;
        }
        served = s;
        int64_t first = n - remaining;
        remaining -= size;
        mfree = s + ovh;
        int64_t a_tick = mfree + asg[rank];
        int64_t end = ends;
        finish[rank] = end;
        dirty[rank] = 1;
        n_chunks++;
        if (have_blk) {
            int64_t *col = rows + pos++;
            col[0] = rank;
            col[cap] = first;
            col[2 * cap] = size;
            col[3 * cap] = mfree;
            col[4 * cap] = a_tick;
            col[5 * cap] = end;
            col[6 * cap] = step;
        }
        heap[0] = (Key)(arrival - base) << bits | (Key)rank;
        sift_down(heap, hn, 0);
    }

    /* write the state back (also after a failed planner call: what was served stays served) */
    {
        PyObject *vals[4] = {PyLong_FromLongLong(mfree), PyLong_FromLongLong(remaining),
                             PyLong_FromLongLong(n_chunks), PyLong_FromLongLong(served)};
        for (int i = 0; i < 4; i++) {
            if (vals[i] == NULL) {
                for (int j = 0; j < 4; j++)
                    Py_XDECREF(vals[j]);
                goto done;
            }
        }
        for (int i = 0; i < 4; i++)
            PyList_SetItem(state, i, vals[i]); /* steals */
    }
    for (Py_ssize_t i = 0; i < p; i++) {
        if (!dirty[i])
            continue;
        PyObject *v = PyLong_FromLongLong(finish[i]);
        if (v == NULL)
            goto done;
        PyList_SetItem(finish_list, i, v);
    }
    binary_heapify(heap, hn);
    {
        PyObject *shift = PyLong_FromLong(SHIFT);
        if (shift == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < hn; i++) {
            PyObject *key;
            int64_t kt = base + (int64_t)(heap[i] >> bits);
            int64_t kr = (int64_t)(heap[i] & rmask);
            if (kt < (1LL << (62 - SHIFT))) {
                key = PyLong_FromLongLong((kt << SHIFT) | kr);
            } else {
                PyObject *tt = PyLong_FromLongLong(kt);
                PyObject *k = tt ? PyNumber_Lshift(tt, shift) : NULL;
                Py_XDECREF(tt);
                PyObject *rr = k ? PyLong_FromLongLong(kr) : NULL;
                key = rr ? PyNumber_Or(k, rr) : NULL;
                Py_XDECREF(k);
                Py_XDECREF(rr);
            }
            if (key == NULL) {
                Py_DECREF(shift);
                goto done;
            }
            PyList_SetItem(heap_list, i, key);
        }
        Py_DECREF(shift);
    }
    if (!failed)
        result = Py_BuildValue("(in)", status, pos);

done:
    PyMem_Free(heap);
    PyMem_Free(ht);
    PyMem_Free(hr);
    PyMem_Free(finish);
    PyMem_Free(dirty);
    if (have_blk)
        PyBuffer_Release(&bblk);
fail_rem:
    PyBuffer_Release(&brem);
fail_tpf:
    PyBuffer_Release(&btpf);
fail_asg:
    PyBuffer_Release(&basg);
fail_req:
    PyBuffer_Release(&breq);
fail_pref:
    PyBuffer_Release(&bpref);
    return result;
}

static PyMethodDef methods[] = {
    {"serve", (PyCFunction)(void (*)(void))serve, METH_FASTCALL,
     "Serve plain chunk requests of a LoopRun (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_serve",
    "The compiled master-worker loop of cosim.als.runtime (chunk serves only).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__serve(void)
{
    return PyModule_Create(&module);
}

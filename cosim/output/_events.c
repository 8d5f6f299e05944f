/* The compiled event loop of cosim.output.otf2_writer: buffered events into libotf2, and
 * the archive's files made ahead of it.
 *
 * write(events, start, writer, attributes, functions, kinds) -> (next, rc)
 *
 * Writes events[start:] in order through libotf2's event writer calls, whose addresses the
 * caller takes from the library it loaded (ctypes), so that this module needs neither OTF2's
 * headers nor linking: `writer` and `attributes` are the addresses of an OTF2_EvtWriter and
 * an OTF2_AttributeList; `functions` the addresses of OTF2_EvtWriter_Enter, _Leave, _MpiSend,
 * _MpiRecv, OTF2_AttributeList_AddUint64 and OTF2_EvtWriter_Metric; `kinds` the six kind
 * markers of the buffered tuples in that order (enter, leave, send, recv, enter with
 * attributes, metric; compared by identity). The tuples are the `make_*` functions' of
 * otf2_writer. It stops at the first event of another kind (the package's own records) or a
 * metric of more than MAX_MEMBERS members, which the caller writes, and at the first non-zero
 * libotf2 return code: `next` is that event's index (len(events) when all were written),
 * `rc` the code (0 unless a call failed). A value that is not an integer >= 0 (an int, or
 * another integer type such as numpy's, as ctypes takes them in the Python loop) or is past
 * 64 bits raises TypeError or OverflowError. 32-bit arguments take the low 32 bits of the value, as
 * the ctypes calls of the Python loop do (the `make_*` functions check them < 2**32).
 *
 * create_files(paths) -> int
 *
 * Creates each of `paths` (bytes) as an empty file if it does not exist (mode 0666 less the
 * umask, as libotf2 does; an existing file is left as it is: no truncation), with the
 * interpreter lock released throughout, and returns how many could be opened. The writer runs
 * it on a thread ahead of libotf2, whose POSIX substrate creates two files per location: on a
 * slow file system creating them costs more than the whole trace's events, and here it
 * overlaps with building them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>
#endif

#define MAX_MEMBERS 64

/* the OTF2 1.x-3.x C signatures: OTF2_ErrorCode is an int-sized enum, OTF2_TimeStamp and
 * the message length uint64_t, references, ranks and tags uint32_t, OTF2_Type uint8_t, an
 * OTF2_MetricValue an 8-byte union */
typedef int (*region_fn)(void *, void *, uint64_t, uint32_t);
typedef int (*message_fn)(void *, void *, uint64_t, uint32_t, uint32_t, uint32_t, uint64_t);
typedef int (*add_u64_fn)(void *, uint32_t, uint64_t);
typedef int (*metric_fn)(void *, void *, uint64_t, uint32_t, uint8_t, const uint8_t *,
                         const uint64_t *);

/* item i of tuple t as uint64 into *out: an int, or an integer of another type (numpy's:
 * what ctypes' c_uint64 takes in the Python loop); -1 with an exception set when it is none,
 * or negative, or past 64 bits */
static int u64_at(PyObject *t, Py_ssize_t i, uint64_t *out)
{
    PyObject *o = PyTuple_GET_ITEM(t, i);
    if (PyLong_Check(o)) {
        *out = PyLong_AsUnsignedLongLong(o);
    } else {
        PyObject *index = PyNumber_Index(o);
        if (!index) return -1;
        *out = PyLong_AsUnsignedLongLong(index);
        Py_DECREF(index);
    }
    return (*out == (uint64_t)-1 && PyErr_Occurred()) ? -1 : 0;
}

/* `var` of `type` (uint64_t, or narrower: the low bits) from item i of tuple `tup`, or
 * return NULL */
#define TAKE(var, type, tup, i)                           \
    do {                                                  \
        uint64_t taken_;                                  \
        if (u64_at((tup), (i), &taken_) < 0) return NULL; \
        (var) = (type)taken_;                             \
    } while (0)

static PyObject *write_events(PyObject *self, PyObject *args)
{
    PyObject *events, *fns, *kinds;
    Py_ssize_t start;
    unsigned long long writer_addr, attrs_addr;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nKKO!O!", &PyList_Type, &events, &start, &writer_addr,
                          &attrs_addr, &PyTuple_Type, &fns, &PyTuple_Type, &kinds))
        return NULL;
    if (PyTuple_GET_SIZE(fns) != 6 || PyTuple_GET_SIZE(kinds) != 6) {
        PyErr_SetString(PyExc_ValueError, "six functions and six kinds expected");
        return NULL;
    }
    void *fp[6];
    for (int i = 0; i < 6; i++) {
        unsigned long long a = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(fns, i));
        if (PyErr_Occurred()) return NULL;
        if (!a) {
            PyErr_SetString(PyExc_ValueError, "a null function address");
            return NULL;
        }
        fp[i] = (void *)(uintptr_t)a;
    }
    region_fn enter = (region_fn)fp[0], leave = (region_fn)fp[1];
    message_fn send = (message_fn)fp[2], recv = (message_fn)fp[3];
    add_u64_fn add_u64 = (add_u64_fn)fp[4];
    metric_fn metric = (metric_fn)fp[5];
    PyObject *k_enter = PyTuple_GET_ITEM(kinds, 0), *k_leave = PyTuple_GET_ITEM(kinds, 1),
             *k_send = PyTuple_GET_ITEM(kinds, 2), *k_recv = PyTuple_GET_ITEM(kinds, 3),
             *k_attrs = PyTuple_GET_ITEM(kinds, 4), *k_metric = PyTuple_GET_ITEM(kinds, 5);
    void *w = (void *)(uintptr_t)writer_addr, *al = (void *)(uintptr_t)attrs_addr;
    Py_ssize_t n = PyList_GET_SIZE(events), i = start < 0 ? 0 : start;
    int rc = 0;
    for (; i < n; i++) {
        PyObject *ev = PyList_GET_ITEM(events, i);
        if (!PyTuple_Check(ev) || PyTuple_GET_SIZE(ev) < 2) break;  /* the caller's to write */
        Py_ssize_t size = PyTuple_GET_SIZE(ev);
        PyObject *kind = PyTuple_GET_ITEM(ev, 1);
        uint64_t t;
        TAKE(t, uint64_t, ev, 0);
        if ((kind == k_enter || kind == k_leave) && size == 3) {
            uint32_t region;
            TAKE(region, uint32_t, ev, 2);
            rc = (kind == k_enter ? enter : leave)(w, NULL, t, region);
        } else if ((kind == k_send || kind == k_recv) && size == 6) {
            uint32_t peer, comm, tag;
            uint64_t length;
            TAKE(peer, uint32_t, ev, 2);
            TAKE(comm, uint32_t, ev, 3);
            TAKE(tag, uint32_t, ev, 4);
            TAKE(length, uint64_t, ev, 5);
            rc = (kind == k_send ? send : recv)(w, NULL, t, peer, comm, tag, length);
        } else if (kind == k_attrs && size >= 3 && size % 2 == 1) {
            uint32_t region;
            TAKE(region, uint32_t, ev, 2);
            for (Py_ssize_t j = 3; j < size; j += 2) {
                uint32_t attr;
                uint64_t value;
                TAKE(attr, uint32_t, ev, j);
                TAKE(value, uint64_t, ev, j + 1);
                rc |= add_u64(al, attr, value);
            }
            /* as the Python loop: the codes or-ed, the Enter written whatever they were;
             * libotf2 empties the list when it writes the event: reusable */
            rc |= enter(w, al, t, region);
        } else if (kind == k_metric && size == 5) {
            PyObject *types = PyTuple_GET_ITEM(ev, 3), *words = PyTuple_GET_ITEM(ev, 4);
            if (!PyTuple_Check(types) || !PyTuple_Check(words)) break;
            Py_ssize_t m = PyTuple_GET_SIZE(types);
            if (m > MAX_MEMBERS || PyTuple_GET_SIZE(words) != m) break;
            uint8_t type_ids[MAX_MEMBERS];
            uint64_t values[MAX_MEMBERS];
            uint32_t ref;
            TAKE(ref, uint32_t, ev, 2);
            for (Py_ssize_t j = 0; j < m; j++) {
                TAKE(type_ids[j], uint8_t, types, j);
                TAKE(values[j], uint64_t, words, j);
            }
            rc = metric(w, NULL, t, ref, (uint8_t)m, type_ids, values);
        } else {
            break;  /* another kind: the caller's to write */
        }
        if (rc) break;
    }
    return Py_BuildValue("(ni)", i, rc);
}

static PyObject *create_files(PyObject *self, PyObject *paths)
{
    (void)self;
    if (!PyList_Check(paths)) {
        PyErr_SetString(PyExc_TypeError, "a list of bytes paths expected");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(paths), opened = 0;
    char **copies = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    if (!copies) return PyErr_NoMemory();
    Py_ssize_t k = 0;
    for (; k < n; k++) {  /* copied first: the list may change once the lock is released */
        PyObject *p = PyList_GET_ITEM(paths, k);
        if (!PyBytes_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "a list of bytes paths expected");
            break;
        }
        size_t len = (size_t)PyBytes_GET_SIZE(p);
        copies[k] = malloc(len + 1);
        if (!copies[k]) {
            PyErr_NoMemory();
            break;
        }
        memcpy(copies[k], PyBytes_AS_STRING(p), len + 1);
    }
    if (k == n) {
#ifndef _WIN32
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int fd = open(copies[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
            if (fd >= 0) {
                close(fd);
                opened++;
            }
        }
        Py_END_ALLOW_THREADS
#endif
    }
    for (Py_ssize_t i = 0; i < n; i++) free(copies[i]);
    PyMem_Free(copies);
    if (k < n) return NULL;
    return PyLong_FromSsize_t(opened);
}

static PyMethodDef methods[] = {
    {"write", write_events, METH_VARARGS,
     "write(events, start, writer, attributes, functions, kinds) -> (next, rc): see the "
     "module source."},
    {"create_files", create_files, METH_O,
     "create_files(paths) -> int: see the module source."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_events",
                                    "The compiled event loop of the OTF2 writer.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__events(void) { return PyModule_Create(&module); }

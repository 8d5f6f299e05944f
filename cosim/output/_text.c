/* The compiled row formatter of cosim.output.textrows: delimited text rows from columns.
 *
 * rows(columns, n, sep) -> str: row i is the i-th text of every column joined by `sep`, then
 * "\n". A column is a list of n str (written as they are), or a tuple (kind, values, blank,
 * blank_text): `values` n int64 (a buffer), kind 0 writes them as exact decimal seconds of
 * ticks (cosim.core.clock.format_ticks: no trailing zeros, no point for whole seconds, a
 * sign for negatives), kind 1 as integers; `blank` None or n bytes (a buffer), a non-zero
 * byte writing `blank_text` instead. The rows are those `textrows._rows_python` makes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define TICKS_PER_SECOND 1000000000ULL

typedef struct { char *p; Py_ssize_t n, cap; } Buf;

static int reserve(Buf *b, Py_ssize_t more)
{
    if (b->n + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more) cap *= 2;
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* the decimal digits of u at d (room for 20), returns their count */
static int digits(char *d, uint64_t u)
{
    char tmp[20];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    for (int i = 0; i < k; i++) d[i] = tmp[k - 1 - i];
    return k;
}

static Py_ssize_t put_int(char *d, int64_t v)
{
    if (v < 0) {
        d[0] = '-';
        return 1 + digits(d + 1, (uint64_t)0 - (uint64_t)v);
    }
    return digits(d, (uint64_t)v);
}

static Py_ssize_t put_ticks(char *d, int64_t v)
{
    Py_ssize_t k = 0;
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        d[k++] = '-';
        u = (uint64_t)0 - u;
    }
    uint64_t whole = u / TICKS_PER_SECOND, frac = u % TICKS_PER_SECOND;
    k += digits(d + k, whole);
    if (frac) {
        d[k++] = '.';
        for (int i = 8; i >= 0; i--) {
            d[k + i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        k += 9;
        while (d[k - 1] == '0') k--;
    }
    return k;
}

typedef struct {
    int kind; /* -1 text, 0 ticks, 1 ints */
    PyObject *list;
    Py_buffer values, blank;
    int has_values, has_blank;
    const char *blank_text;
    Py_ssize_t blank_len;
} Col;

static PyObject *rows(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *columns;
    Py_ssize_t n;
    const char *sep;
    Py_ssize_t sep_len;
    if (!PyArg_ParseTuple(args, "Ons#", &columns, &n, &sep, &sep_len)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "n must be >= 0");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(columns, "columns must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    Col *cols = PyMem_Calloc((size_t)(m ? m : 1), sizeof(Col));
    Buf out = {0};
    PyObject *result = NULL;
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < m; c++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, c);
        Col *col = &cols[c];
        if (PyList_Check(o)) {
            if (PyList_GET_SIZE(o) != n) {
                PyErr_Format(PyExc_ValueError, "column %zd: %zd texts for %zd rows", c,
                             PyList_GET_SIZE(o), n);
                goto done;
            }
            col->kind = -1;
            col->list = o;
            continue;
        }
        PyObject *vals, *blank, *text;
        if (!PyTuple_Check(o)) {
            PyErr_Format(PyExc_TypeError, "column %zd: a list of str or a tuple", c);
            goto done;
        }
        if (!PyArg_ParseTuple(o, "iOOO", &col->kind, &vals, &blank, &text)) goto done;
        if (col->kind != 0 && col->kind != 1) {
            PyErr_Format(PyExc_ValueError, "column %zd: unknown kind %d", c, col->kind);
            goto done;
        }
        if (PyObject_GetBuffer(vals, &col->values, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto done;
        col->has_values = 1;
        const char *f = col->values.format ? col->values.format : "";
        if (*f == '<' || *f == '=' || *f == '@') f++;
        if (col->values.itemsize != 8 || (strcmp(f, "q") && strcmp(f, "l"))
            || col->values.len % 8 || col->values.len / 8 != n) {
            PyErr_Format(PyExc_ValueError, "column %zd: %zd native int64 values expected", c,
                         n);
            goto done;
        }
        if (blank != Py_None) {
            if (PyObject_GetBuffer(blank, &col->blank, PyBUF_C_CONTIGUOUS) < 0) goto done;
            col->has_blank = 1;
            if (col->blank.itemsize != 1 || col->blank.len != n) {
                PyErr_Format(PyExc_ValueError, "column %zd: %zd blank flags expected", c, n);
                goto done;
            }
        }
        col->blank_text = PyUnicode_AsUTF8AndSize(text, &col->blank_len);
        if (!col->blank_text) goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t c = 0; c < m; c++) {
            Col *col = &cols[c];
            if (c) {
                if (reserve(&out, sep_len) < 0) goto done;
                memcpy(out.p + out.n, sep, (size_t)sep_len);
                out.n += sep_len;
            }
            const char *s = NULL;
            Py_ssize_t len = 0;
            if (col->kind < 0) {
                PyObject *t = PyList_GET_ITEM(col->list, i);
                if (!PyUnicode_Check(t)) {
                    PyErr_Format(PyExc_TypeError, "column %zd, row %zd: not a str", c, i);
                    goto done;
                }
                s = PyUnicode_AsUTF8AndSize(t, &len);
                if (!s) goto done;
            } else if (col->has_blank && ((const char *)col->blank.buf)[i]) {
                s = col->blank_text;
                len = col->blank_len;
            }
            if (s) {
                if (reserve(&out, len) < 0) goto done;
                memcpy(out.p + out.n, s, (size_t)len);
                out.n += len;
                continue;
            }
            if (reserve(&out, 32) < 0) goto done;
            int64_t v = ((const int64_t *)col->values.buf)[i];
            out.n += col->kind == 0 ? put_ticks(out.p + out.n, v) : put_int(out.p + out.n, v);
        }
        if (reserve(&out, 1) < 0) goto done;
        out.p[out.n++] = '\n';
    }
    result = PyUnicode_DecodeUTF8(out.p ? out.p : "", out.n, "strict");
done:
    for (Py_ssize_t c = 0; cols && c < m; c++) {
        if (cols[c].has_values) PyBuffer_Release(&cols[c].values);
        if (cols[c].has_blank) PyBuffer_Release(&cols[c].blank);
    }
    PyMem_Free(cols);
    PyMem_Free(out.p);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS, "rows(columns, n, sep) -> str (cosim.output.textrows)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_text",
                                    "The compiled row formatter (cosim.output.textrows).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__text(void) { return PyModule_Create(&module); }

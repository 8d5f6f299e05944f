/* The compiled maker of cosim.core.records: instances of a slotted class made in bulk.
 *
 * make(cls, slots, columns, constants, n) -> list: n new instances of `cls` (allocated as
 * object.__new__(cls) does, no __init__ run: a class object.__new__ refuses, abstract or
 * built on another base's layout, is refused the same way); field j of instance i is
 * columns[j][i] when columns[j] is a list (of exactly n items), constants[j] when it is None.
 * `slots` holds one member descriptor per field (the class's own or a base's slot, an object
 * slot), `columns` and `constants` as many entries. The instances are those
 * `records.slot_maker`'s generated function makes, which is its reference and the fallback
 * where this is not built. Nothing here trusts a column to keep its length while objects are
 * allocated (a collection may run code), and the list being filled is not tracked by the
 * collector until it is whole.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#endif

#ifndef Py_T_OBJECT_EX  /* (the names before Python 3.12) */
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

static PyObject *make(PyObject *self, PyObject *args)
{
    PyObject *cls, *slots, *columns, *constants;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!O!O!O!n", &PyType_Type, &cls, &PyTuple_Type, &slots,
                          &PyTuple_Type, &columns, &PyTuple_Type, &constants, &n))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    Py_ssize_t m = PyTuple_GET_SIZE(slots);
    if (PyTuple_GET_SIZE(columns) != m || PyTuple_GET_SIZE(constants) != m || n < 0) {
        PyErr_SetString(PyExc_ValueError, "make: slots, columns and constants differ in "
                        "length, or n < 0");
        return NULL;
    }
    Py_ssize_t *offset = PyMem_New(Py_ssize_t, m > 0 ? m : 1);
    PyObject **column = PyMem_New(PyObject *, m > 0 ? m : 1);
    if (!offset || !column) {
        PyMem_Free(offset);
        PyMem_Free(column);
        return PyErr_NoMemory();
    }
    PyObject *out = NULL;
    for (Py_ssize_t j = 0; j < m; j++) {
        PyObject *d = PyTuple_GET_ITEM(slots, j);
        if (!PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "make: slot %zd is not a member descriptor", j);
            goto done;
        }
        PyMemberDescrObject *md = (PyMemberDescrObject *)d;
        if (md->d_member->type != Py_T_OBJECT_EX || (md->d_member->flags & Py_READONLY)
            || !PyType_IsSubtype(type, PyDescr_TYPE(md))
            || md->d_member->offset < (Py_ssize_t)sizeof(PyObject)
            || md->d_member->offset + (Py_ssize_t)sizeof(PyObject *) > type->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "make: slot %zd is not a writable object slot "
                         "of %s", j, type->tp_name);
            goto done;
        }
        offset[j] = md->d_member->offset;
        PyObject *c = PyTuple_GET_ITEM(columns, j);
        if (c == Py_None) {
            column[j] = NULL;
        } else if (PyList_Check(c)) {
            if (PyList_GET_SIZE(c) != n) {
                PyErr_Format(PyExc_ValueError, "make: column %zd has %zd items, not %zd", j,
                             PyList_GET_SIZE(c), n);
                goto done;
            }
            column[j] = c;
        } else {
            PyErr_Format(PyExc_TypeError, "make: column %zd is neither a list nor None", j);
            goto done;
        }
    }
    /* what object.__new__(cls) checks (a layout it cannot make, an abstract class), once */
    PyObject *probe = PyObject_CallMethod((PyObject *)&PyBaseObject_Type, "__new__", "O", cls);
    if (!probe)
        goto done;
    Py_DECREF(probe);
    out = PyList_New(n);
    if (!out)
        goto done;
    PyObject_GC_UnTrack(out);  /* (its items are NULL until set) */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = type->tp_alloc(type, 0);
        if (!obj) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, obj);
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *v;
            if (column[j]) {
                if (i >= PyList_GET_SIZE(column[j])) {  /* shrunk by code a collection ran */
                    PyErr_Format(PyExc_RuntimeError, "make: column %zd changed size", j);
                    Py_CLEAR(out);
                    goto done;
                }
                v = PyList_GET_ITEM(column[j], i);
            } else {
                v = PyTuple_GET_ITEM(constants, j);
            }
            PyObject **at = (PyObject **)((char *)obj + offset[j]);
            Py_INCREF(v);
            Py_XSETREF(*at, v);  /* (a slot repeated in `slots`: the last value stays) */
        }
    }
    PyObject_GC_Track(out);
done:
    PyMem_Free(offset);
    PyMem_Free(column);
    return out;
}

static PyMethodDef methods[] = {
    {"make", make, METH_VARARGS,
     "make(cls, slots, columns, constants, n): n instances of a slotted class (module doc)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cosim.core._records",
    "Instances of a slotted class made in bulk (cosim.core.records).", -1, methods,
};

PyMODINIT_FUNC PyInit__records(void)
{
    return PyModule_Create(&module);
}

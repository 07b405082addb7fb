/* kwire.log._walk: the record walk of kwire.log.validator in C (optional speed-up).
 *
 * walk_records(data, pos, end, count) -> (min_ts_delta, max_ts_delta, first_keyless) or None
 *
 * Walks `count` v2 records that must fill data[pos:end] exactly, with the same rules as
 * kwire.log.validator.walk_records (the pure-Python walk, which stays the reference): record
 * length >= 6 and inside the batch, offset deltas 0, 1, 2, ..., key and value lengths >= -1,
 * headers that fit, every record's fields adding up to its length, nothing left over.
 * Returns None whenever anything is off or unusual (so the Python walk, which names the
 * error in Kafka's words, decides); the C walk only ever answers for batches it is sure of.
 * Built by setup.py when a C compiler is there; kwire runs without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Zigzag varint of at most `max_bytes` bytes (5: 32-bit, 10: 64-bit) from buf[*pos],
 * not reading at or past `limit`. 0 on success. */
static int
read_zigzag(const unsigned char *buf, Py_ssize_t limit, Py_ssize_t *pos, int max_bytes, int64_t *out)
{
    uint64_t v = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= limit)
            return -1;
        unsigned char b = buf[p++];
        if (i == max_bytes - 1) {
            /* the last byte may only hold the value's top bits */
            if (max_bytes == 5 && (b & 0x7F) > 0x0F)
                return -1;
            if (max_bytes == 10 && (b & 0x7F) > 0x01)
                return -1;
        }
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
            *pos = p;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

static PyObject *
walk_records(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end, count;
    if (!PyArg_ParseTuple(args, "y*nnn", &view, &pos, &end, &count))
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    int64_t min_d = INT64_MAX, max_d = INT64_MIN;
    Py_ssize_t keyless = -1;
    int ok = 1;
    if (pos < 0 || end > view.len || pos > end || count < 0)
        ok = 0;
    for (Py_ssize_t i = 0; ok && i < count; i++) {
        int64_t length, d, od, kl, vl, hc;
        Py_ssize_t p = pos;
        if (read_zigzag(buf, end, &p, 5, &length) || length < 6 || p + length > end) { ok = 0; break; }
        Py_ssize_t record_end = p + (Py_ssize_t)length;
        p += 1; /* attributes */
        if (read_zigzag(buf, record_end, &p, 10, &d)) { ok = 0; break; }
        if (d > max_d) max_d = d;
        if (d < min_d) min_d = d;
        if (read_zigzag(buf, record_end, &p, 5, &od) || od != (int64_t)i) { ok = 0; break; }
        if (read_zigzag(buf, record_end, &p, 5, &kl)) { ok = 0; break; }
        if (kl >= 0) {
            if (kl > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)kl;
        } else if (kl == -1) {
            if (keyless < 0) keyless = i;
        } else { ok = 0; break; }
        if (read_zigzag(buf, record_end, &p, 5, &vl)) { ok = 0; break; }
        if (vl >= 0) {
            if (vl > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)vl;
        } else if (vl != -1) { ok = 0; break; }
        if (read_zigzag(buf, record_end, &p, 5, &hc) || hc < 0 || hc > record_end - p) { ok = 0; break; }
        for (int64_t h = 0; ok && h < hc; h++) {
            int64_t hk, hv;
            if (read_zigzag(buf, record_end, &p, 5, &hk) || hk < 0 || hk > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)hk;
            if (read_zigzag(buf, record_end, &p, 5, &hv)) { ok = 0; break; }
            if (hv >= 0) {
                if (hv > record_end - p) { ok = 0; break; }
                p += (Py_ssize_t)hv;
            } else if (hv != -1) { ok = 0; break; }
        }
        if (!ok || p != record_end) { ok = 0; break; }
        pos = record_end;
    }
    if (ok && pos != end)
        ok = 0;
    PyBuffer_Release(&view);
    if (!ok)
        Py_RETURN_NONE;
    return Py_BuildValue("(LLn)", (long long)min_d, (long long)max_d, keyless);
}

static PyMethodDef methods[] = {
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(data, pos, end, count) -> (min_ts_delta, max_ts_delta, first_keyless) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kwire.log._walk", "The record walk of kwire.log.validator in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    return PyModule_Create(&module);
}

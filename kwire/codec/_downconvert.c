/* kwire.codec._downconvert: the down-conversion's inner loop of kwire.codec.legacy_records in C
 * (optional speed-up for Fetch v0-3 under Kafka 3.x emulation).
 *
 * plain_batch(payload, count, base_offset, base_timestamp, magic, first_offset) -> bytes or None
 *
 * The records of one uncompressed CreateTime v2 batch (``payload``: the bytes after its 61-byte
 * header) as a message set of format ``magic`` (0 or 1): for each record at or past
 * ``first_offset``, ``offset int64, size int32, crc uint32 (CRC-32 of the rest), magic int8,
 * attributes int8 (0), [timestamp int64 (magic 1): base_timestamp + delta], key bytes, value
 * bytes`` (headers dropped), exactly the bytes kwire.codec.legacy_records._plain_batch makes
 * (the pure-Python walk, which stays the reference a property test holds this to). Returns None
 * whenever a record is not well formed (lengths that do not fit, a varint too long, bytes left
 * over), so the Python path, which names the error, decides. Built by setup.py when a C
 * compiler is there; kwire runs without it. CRC-32 is the IEEE polynomial (zlib's), computed
 * here slice-by-8 so nothing is linked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[t][i] = c;
        }
    }
}

static uint32_t
crc32_update(uint32_t crc, const unsigned char *p, Py_ssize_t n)
{
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF]
            ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF]
            ^ crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* Zigzag varint of at most `max_bytes` bytes (5: int32, 10: int64) from buf[*pos], not reading
 * at or past `limit`. 0 on success. */
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

static void
put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void
put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static PyObject *
plain_batch(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, base_ts, first_offset;
    int magic;
    if (!PyArg_ParseTuple(args, "y*nLLiL", &view, &count, &base_offset, &base_ts, &magic, &first_offset))
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    if (count < 0 || (magic != 0 && magic != 1) || count > n) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    /* each record is at least 7 bytes and becomes at most its key and value plus a fixed head */
    Py_ssize_t head = 12 + 4 + 2 + (magic ? 8 : 0);   /* offset, size, crc, magic, attributes, [ts] */
    Py_ssize_t cap = n + count * (head + 8);
    PyObject *out = PyBytes_FromStringAndSize(NULL, cap);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t w = 0, pos = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; ok && i < count; i++) {
        int64_t length, ts_delta, offset_delta, klen, vlen;
        if (read_zigzag(buf, n, &pos, 5, &length) || length < 0 || length > n - pos) {
            ok = 0;
            break;
        }
        Py_ssize_t end = pos + (Py_ssize_t)length;
        Py_ssize_t p = pos + 1;   /* attributes */
        if (p > end || read_zigzag(buf, end, &p, 10, &ts_delta) || read_zigzag(buf, end, &p, 5, &offset_delta)
            || read_zigzag(buf, end, &p, 5, &klen) || klen < -1 || klen > end - p) {
            ok = 0;
            break;
        }
        Py_ssize_t kpos = p;
        if (klen > 0)
            p += (Py_ssize_t)klen;
        if (read_zigzag(buf, end, &p, 5, &vlen) || vlen < -1 || vlen > end - p) {
            ok = 0;
            break;
        }
        Py_ssize_t vpos = p;
        if (vlen > 0)
            p += (Py_ssize_t)vlen;
        pos = end;   /* headers are dropped */
        int64_t offset = (int64_t)base_offset + offset_delta;
        if (offset < (int64_t)first_offset)
            continue;
        unsigned char *m = o + w;
        unsigned char *body = m + 16;   /* after offset, size, crc */
        unsigned char *q = body;
        *q++ = (unsigned char)magic;
        *q++ = 0;
        if (magic) {
            put_be64(q, (uint64_t)((int64_t)base_ts + ts_delta));
            q += 8;
        }
        put_be32(q, (uint32_t)(int32_t)klen);
        q += 4;
        if (klen > 0) {
            memcpy(q, buf + kpos, (size_t)klen);
            q += klen;
        }
        put_be32(q, (uint32_t)(int32_t)vlen);
        q += 4;
        if (vlen > 0) {
            memcpy(q, buf + vpos, (size_t)vlen);
            q += vlen;
        }
        Py_ssize_t body_len = q - body;
        put_be64(m, (uint64_t)offset);
        put_be32(m + 8, (uint32_t)(body_len + 4));
        put_be32(m + 12, crc32_update(0, body, body_len));
        w += 16 + body_len;
    }
    if (ok && pos != n)
        ok = 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!ok) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, w) < 0)
        return NULL;
    return out;
}

static PyObject *
crc32_py(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned int start = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &start))
        return NULL;
    uint32_t c = crc32_update(start, (const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"plain_batch", plain_batch, METH_VARARGS,
     "plain_batch(payload, count, base_offset, base_timestamp, magic, first_offset) -> bytes | None"},
    {"crc32", crc32_py, METH_VARARGS, "crc32(data[, start]) -> CRC-32 (IEEE), as zlib.crc32"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kwire.codec._downconvert",
    "Message format v0/v1 down-conversion of plain v2 batches in C (kwire.codec.legacy_records).", -1, methods,
};

PyMODINIT_FUNC
PyInit__downconvert(void)
{
    crc_init();
    return PyModule_Create(&module);
}

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
 * The log cleaner's offset map and record walks (kwire.log.cleaner_fast; the pure-Python
 * walk of kwire.log.cleaner with a dict for a map stays the reference they are tested
 * against): a hash table in Python-owned buffers (table, arena of key bytes, state), keys
 * confirmed byte for byte on a hash match, so no collision can lose a record.
 *
 * map_put_batch(table, arena, state, data, pos, end, count, base_offset, last_delta, lo, hi,
 *               max_entries) -> True, False (full) or None
 *     puts the key and offset of every keyed record with offset in [lo, hi), in order.
 * map_retain(table, arena, state, data, pos, end, count, base_offset, last_delta, latest,
 *            tombstone_expired) -> (payload, kept, tombstones_kept, keyless, max_ts_delta,
 *            whole) or None
 *     Kafka's cleaner rule per record (kept when past `latest`, or the map's offset for its
 *     key is not later than it and it is not a tombstone whose horizon passed); `payload`
 *     the kept records' bytes as they were (deltas from the same base offset and timestamp).
 * map_put_batches(table, arena, state, data, pos, end, lo, hi, max_entries)
 *     -> (status, pos, latest, records, bytes)
 *     the map's build over a run of whole plain batches of a chunk (see the function).
 * map_retain_batches(...): the recopy over a run of whole plain batches of a chunk, the kept
 *     batches' bytes (rebuilt with a new CRC-32C where records went) and their index metas.
 * map_put, map_get, map_grow: one key at a time (the Python walk's fallback), and growth
 *     (a bigger table rehashed, a bigger arena, made without the GIL).
 *
 * Both walks read records that must fill data[pos:end] exactly, with offset deltas that
 * increase strictly up to last_delta (a cleaned batch has gaps), answer None whenever
 * anything is off (the Python walk then decides and names the error), and run without the
 * GIL (Py_BEGIN_ALLOW_THREADS): the event loop's thread runs meanwhile.
 *
 * fetch_columns, records_columns: kwire.spark's read path, Fetch answers to Arrow buffers (see
 * the functions; kwire.spark.fetch reads through confluent-kafka without them).
 *
 * Built by setup.py when a C compiler is there; kwire runs without it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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

/* read_zigzag with the produce path's common cases inline: a value of one or two bytes (every
 * length, delta and count below 8,192), where the last-byte rule of read_zigzag cannot apply
 * (max_bytes is 5 or 10); anything longer, or at `limit`, goes to read_zigzag. Same results. */
static inline int
read_zigzag_fast(const unsigned char *buf, Py_ssize_t limit, Py_ssize_t *pos, int max_bytes, int64_t *out)
{
    Py_ssize_t p = *pos;
    if (p + 1 < limit) {
        uint64_t v = buf[p];
        if (v < 0x80) {
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
            *pos = p + 1;
            return 0;
        }
        uint64_t b = buf[p + 1];
        if (b < 0x80) {
            v = (v & 0x7F) | (b << 7);
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
            *pos = p + 2;
            return 0;
        }
    }
    return read_zigzag(buf, limit, pos, max_bytes, out);
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
        if (read_zigzag_fast(buf, end, &p, 5, &length) || length < 6 || p + length > end) { ok = 0; break; }
        Py_ssize_t record_end = p + (Py_ssize_t)length;
        p += 1; /* attributes */
        if (read_zigzag_fast(buf, record_end, &p, 10, &d)) { ok = 0; break; }
        if (d > max_d) max_d = d;
        if (d < min_d) min_d = d;
        if (read_zigzag_fast(buf, record_end, &p, 5, &od) || od != (int64_t)i) { ok = 0; break; }
        if (read_zigzag_fast(buf, record_end, &p, 5, &kl)) { ok = 0; break; }
        if (kl >= 0) {
            if (kl > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)kl;
        } else if (kl == -1) {
            if (keyless < 0) keyless = i;
        } else { ok = 0; break; }
        if (read_zigzag_fast(buf, record_end, &p, 5, &vl)) { ok = 0; break; }
        if (vl >= 0) {
            if (vl > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)vl;
        } else if (vl != -1) { ok = 0; break; }
        if (read_zigzag_fast(buf, record_end, &p, 5, &hc) || hc < 0 || hc > record_end - p) { ok = 0; break; }
        for (int64_t h = 0; ok && h < hc; h++) {
            int64_t hk, hv;
            if (read_zigzag_fast(buf, record_end, &p, 5, &hk) || hk < 0 || hk > record_end - p) { ok = 0; break; }
            p += (Py_ssize_t)hk;
            if (read_zigzag_fast(buf, record_end, &p, 5, &hv)) { ok = 0; break; }
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

/* One record at buf[*pos] (not past `end`): its fields, or -1 when anything is off. */
typedef struct {
    Py_ssize_t start, end;      /* the record's bytes, length varint included */
    int64_t ts_delta, offset_delta;
    Py_ssize_t key_pos;         /* -1: null key */
    int64_t key_len;
    int64_t value_len;          /* -1: null value */
} rec_t;

static int
read_record(const unsigned char *buf, Py_ssize_t end, Py_ssize_t *pos, rec_t *r)
{
    int64_t length, kl, vl, hc;
    Py_ssize_t p = *pos;
    r->start = p;
    if (read_zigzag(buf, end, &p, 5, &length) || length < 6 || length > end - p)
        return -1;
    Py_ssize_t record_end = p + (Py_ssize_t)length;
    p += 1; /* attributes */
    if (read_zigzag(buf, record_end, &p, 10, &r->ts_delta))
        return -1;
    if (read_zigzag(buf, record_end, &p, 5, &r->offset_delta))
        return -1;
    if (read_zigzag(buf, record_end, &p, 5, &kl))
        return -1;
    if (kl >= 0) {
        if (kl > record_end - p)
            return -1;
        r->key_pos = p;
        p += (Py_ssize_t)kl;
    } else if (kl == -1) {
        r->key_pos = -1;
    } else {
        return -1;
    }
    r->key_len = kl;
    if (read_zigzag(buf, record_end, &p, 5, &vl))
        return -1;
    if (vl >= 0) {
        if (vl > record_end - p)
            return -1;
        p += (Py_ssize_t)vl;
    } else if (vl != -1) {
        return -1;
    }
    r->value_len = vl;
    if (read_zigzag(buf, record_end, &p, 5, &hc) || hc < 0 || hc > (record_end - p) / 2)
        return -1;
    for (int64_t h = 0; h < hc; h++) {
        int64_t hk, hv;
        if (read_zigzag(buf, record_end, &p, 5, &hk) || hk < 0 || hk > record_end - p)
            return -1;
        p += (Py_ssize_t)hk;
        if (read_zigzag(buf, record_end, &p, 5, &hv))
            return -1;
        if (hv >= 0) {
            if (hv > record_end - p)
                return -1;
            p += (Py_ssize_t)hv;
        } else if (hv != -1) {
            return -1;
        }
    }
    if (p != record_end)
        return -1;
    r->end = record_end;
    *pos = record_end;
    return 0;
}

/* read_record, for the next record of a batch whose last offset delta is `last_delta`: its
 * offset delta must be above the previous record's (*prev, updated) and at most last_delta.
 * 0, or -1 when the record is odd. */
static int
read_record_in_order(const unsigned char *buf, Py_ssize_t end, Py_ssize_t *pos, int64_t *prev, int64_t last_delta,
                     rec_t *r)
{
    if (read_record(buf, end, pos, r) || r->offset_delta <= *prev || r->offset_delta > last_delta)
        return -1;
    *prev = r->offset_delta;
    return 0;
}

/* --- the cleaner's offset map in C ----------------------------------------------------------
 * Kept in Python-owned buffers so the walks run without the GIL: `table` (a bytearray of
 * slots of 24 bytes: hash (0: empty), offset, key position and length in `arena`), `arena`
 * (a bytearray holding the keys' bytes) and `state` (a bytearray of two int64: entries, arena
 * bytes used). A hash match is confirmed by comparing the key bytes, so two keys are never
 * taken for one. The caller (kwire.log.cleaner_fast.CMap) grows the table and the arena
 * before a call so that a batch always fits. */
typedef struct {
    uint64_t hash;
    int64_t offset;
    uint32_t key_pos;
    uint32_t key_len;
} slot_t;

typedef struct {
    slot_t *slots;
    uint64_t mask;
    char *arena;
    Py_ssize_t arena_cap;
    int64_t *state;    /* [0] entries, [1] arena used */
} cmap_t;

static uint64_t
key_hash(const unsigned char *k, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= k[i];
        h *= 1099511628211ULL;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h ? h : 1;
}

/* The slot of key k: its own, or the empty one where it would go. */
static slot_t *
cmap_find(cmap_t *m, const unsigned char *k, Py_ssize_t n, uint64_t h)
{
    uint64_t i = h & m->mask;
    for (;;) {
        slot_t *s = &m->slots[i];
        if (s->hash == 0)
            return s;
        if (s->hash == h && s->key_len == (uint32_t)n && memcmp(m->arena + s->key_pos, k, (size_t)n) == 0)
            return s;
        i = (i + 1) & m->mask;
    }
}

/* 1 put, 0 full (a new key past max_entries), -1 no room (the caller did not grow). */
static int
cmap_put(cmap_t *m, const unsigned char *k, Py_ssize_t n, int64_t offset, int64_t max_entries)
{
    uint64_t h = key_hash(k, n);
    slot_t *s = cmap_find(m, k, n, h);
    if (s->hash != 0) {
        s->offset = offset;
        return 1;
    }
    if (m->state[0] >= max_entries)
        return 0;
    if (m->state[1] + n > m->arena_cap || (uint64_t)(m->state[0] + 1) * 2 > m->mask + 1 || m->state[1] + n > UINT32_MAX)
        return -1;
    memcpy(m->arena + m->state[1], k, (size_t)n);
    s->hash = h;
    s->offset = offset;
    s->key_pos = (uint32_t)m->state[1];
    s->key_len = (uint32_t)n;
    m->state[0] += 1;
    m->state[1] += n;
    return 1;
}

static int64_t
cmap_get(cmap_t *m, const unsigned char *k, Py_ssize_t n)
{
    slot_t *s = cmap_find(m, k, n, key_hash(k, n));
    return s->hash ? s->offset : -1;
}

/* The keyed records of one batch (`count` of them in buf[pos..end), base offset `base`,
 * last offset delta `last_delta`) put in the map at their offsets in [lo, hi): 1; 0 when the
 * map holds max_entries keys and a new one comes; -2 when its table or arena has no room;
 * -1 when a record is odd or the records do not end at `end`. */
static int
put_records(cmap_t *m, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, int64_t count, int64_t base,
            int64_t last_delta, int64_t lo, int64_t hi, int64_t max_entries)
{
    int64_t prev = -1;
    for (int64_t i = 0; i < count; i++) {
        rec_t r;
        if (read_record_in_order(buf, end, &pos, &prev, last_delta, &r))
            return -1;
        int64_t offset = base + r.offset_delta;
        if (r.key_pos < 0 || offset < lo || offset >= hi)
            continue;
        int rc = cmap_put(m, buf + r.key_pos, (Py_ssize_t)r.key_len, offset, max_entries);
        if (rc <= 0)
            return rc == 0 ? 0 : -2;
    }
    return pos == end ? 1 : -1;
}

/* What retain_records kept of a batch. */
typedef struct {
    Py_ssize_t len;             /* bytes copied to out */
    int64_t kept, keyless, tombstones;
    int64_t max_delta;          /* the largest timestamp delta kept (INT64_MIN: none) */
    int whole;                  /* every record kept */
} retained_t;

/* The records of one batch (as put_records) that the map keeps at `latest` (Kafka's
 * shouldRetainRecord: past the map's end, or the last of its key; a tombstone only while its
 * delete horizon has not passed), their bytes copied to `out` as they were: 0, or -1 when a
 * record is odd or the records do not end at `end`. */
static int
retain_records(cmap_t *m, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, int64_t count, int64_t base,
               int64_t last_delta, int64_t latest, int tombstone_expired, unsigned char *out, retained_t *res)
{
    int64_t prev = -1;
    *res = (retained_t){0, 0, 0, 0, INT64_MIN, 1};
    for (int64_t i = 0; i < count; i++) {
        rec_t r;
        if (read_record_in_order(buf, end, &pos, &prev, last_delta, &r))
            return -1;
        int64_t offset = base + r.offset_delta;
        int keep;
        if (offset > latest) {
            keep = 1;
        } else if (r.key_pos < 0) {
            res->keyless++;
            keep = 0;
        } else {
            int64_t last_of_key = cmap_get(m, buf + r.key_pos, (Py_ssize_t)r.key_len);
            keep = offset >= last_of_key && (r.value_len >= 0 || !tombstone_expired);
        }
        if (keep) {
            memcpy(out + res->len, buf + r.start, (size_t)(r.end - r.start));
            res->len += r.end - r.start;
            res->kept++;
            if (r.value_len < 0)
                res->tombstones++;
            if (r.ts_delta > res->max_delta)
                res->max_delta = r.ts_delta;
        } else {
            res->whole = 0;
        }
    }
    return pos == end ? 0 : -1;
}

/* Views of the three buffers (released by cmap_release). */
static int
cmap_open(cmap_t *m, Py_buffer *t, Py_buffer *a, Py_buffer *st)
{
    if (t->len < (Py_ssize_t)sizeof(slot_t) || st->len < 16 || t->readonly || a->readonly || st->readonly) {
        PyErr_SetString(PyExc_ValueError, "offset map buffers: writable table, arena and state needed");
        return -1;
    }
    uint64_t nslots = (uint64_t)t->len / sizeof(slot_t);
    if (nslots & (nslots - 1)) {
        PyErr_SetString(PyExc_ValueError, "offset map table: a power of two of slots");
        return -1;
    }
    m->slots = (slot_t *)t->buf;
    m->mask = nslots - 1;
    m->arena = (char *)a->buf;
    m->arena_cap = a->len;
    m->state = (int64_t *)st->buf;
    return 0;
}

static PyObject *
map_put_batch(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, view;
    Py_ssize_t pos, end, count;
    long long base_offset, last_delta, lo, hi, max_entries;
    if (!PyArg_ParseTuple(args, "w*w*w*y*nnnLLLLL", &t, &a, &st, &view, &pos, &end, &count, &base_offset,
                          &last_delta, &lo, &hi, &max_entries))
        return NULL;
    cmap_t m;
    int status = 1;   /* 1 ok, 0 full, -1 odd record, -2 no room */
    if (cmap_open(&m, &t, &a, &st)) {
        status = -3;
    } else if (pos < 0 || end > view.len || pos > end || count < 0 || count > end - pos) {
        status = -1;
    } else {
        const unsigned char *buf = (const unsigned char *)view.buf;
        Py_BEGIN_ALLOW_THREADS
        status = put_records(&m, buf, pos, end, count, base_offset, last_delta, lo, hi, max_entries);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&view);
    if (status == -3)
        return NULL;
    if (status == -2) {
        PyErr_SetString(PyExc_RuntimeError, "offset map: no room (grow the table and arena first)");
        return NULL;
    }
    if (status == -1)
        Py_RETURN_NONE;
    return PyBool_FromLong(status);
}

static PyObject *
map_retain(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, view;
    Py_ssize_t pos, end, count;
    long long base_offset, last_delta, latest;
    int tombstone_expired;
    if (!PyArg_ParseTuple(args, "w*w*w*y*nnnLLLp", &t, &a, &st, &view, &pos, &end, &count, &base_offset,
                          &last_delta, &latest, &tombstone_expired))
        return NULL;
    cmap_t m;
    char *out = NULL;
    retained_t res;
    int status = 1;
    if (cmap_open(&m, &t, &a, &st)) {
        status = -3;
    } else if (pos < 0 || end > view.len || pos > end || count < 0 || count > end - pos) {
        status = -1;
    } else if ((out = PyMem_RawMalloc(end - pos > 0 ? (size_t)(end - pos) : 1)) == NULL) {
        status = -4;
    } else {
        const unsigned char *buf = (const unsigned char *)view.buf;
        Py_BEGIN_ALLOW_THREADS
        if (retain_records(&m, buf, pos, end, count, base_offset, last_delta, latest, tombstone_expired,
                           (unsigned char *)out, &res))
            status = -1;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (status == -4) {
        PyErr_NoMemory();
    } else if (status == -1) {
        result = Py_None;
        Py_INCREF(result);
    } else if (status == 1) {
        PyObject *payload = PyBytes_FromStringAndSize(out ? out : "", res.len);
        if (payload != NULL)
            result = Py_BuildValue("(NLLLLO)", payload, (long long)res.kept, (long long)res.tombstones,
                                   (long long)res.keyless, (long long)(res.kept ? res.max_delta : 0),
                                   res.whole ? Py_True : Py_False);
    }
    PyMem_RawFree(out);
    return result;
}

static PyObject *
map_put(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, key;
    long long offset, max_entries;
    if (!PyArg_ParseTuple(args, "w*w*w*y*LL", &t, &a, &st, &key, &offset, &max_entries))
        return NULL;
    cmap_t m;
    int rc = -3;
    if (!cmap_open(&m, &t, &a, &st))
        rc = cmap_put(&m, (const unsigned char *)key.buf, key.len, offset, max_entries);
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&key);
    if (rc == -3)
        return NULL;
    if (rc == -1) {
        PyErr_SetString(PyExc_RuntimeError, "offset map: no room (grow the table and arena first)");
        return NULL;
    }
    return PyBool_FromLong(rc);
}

static PyObject *
map_get(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, key;
    if (!PyArg_ParseTuple(args, "w*w*w*y*", &t, &a, &st, &key))
        return NULL;
    cmap_t m;
    long long got = 0;
    int bad = cmap_open(&m, &t, &a, &st);
    if (!bad)
        got = cmap_get(&m, (const unsigned char *)key.buf, key.len);
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&key);
    if (bad)
        return NULL;
    return PyLong_FromLongLong(got);
}

static int64_t
be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static int32_t
be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* The header of the batch at buf[pos] of a chunk of whole batches ending at `end`. */
typedef struct {
    const unsigned char *h;
    Py_ssize_t size;            /* 12 + the length field */
    int64_t base, last;         /* base offset, base + last offset delta */
    int32_t lod, count;         /* last offset delta, record count */
    int attrs;
} batch_t;

/* 0 with *b filled when a whole batch starts at pos; 1 when the chunk holds no whole batch
 * more (fewer than 61 bytes left, or the batch runs past `end`); -1 when its length field
 * is impossible. */
static int
next_batch(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, batch_t *b)
{
    if (end - pos < 61)
        return 1;
    const unsigned char *h = buf + pos;
    int32_t length = be32(h + 8);
    if (length < 49)
        return -1;
    Py_ssize_t size = 12 + (Py_ssize_t)length;
    if (size > end - pos)
        return 1;
    b->h = h;
    b->size = size;
    b->base = be64(h);
    b->lod = be32(h + 23);
    b->last = b->base + b->lod;
    b->attrs = (h[21] << 8) | h[22];
    b->count = be32(h + 57);
    return 0;
}

/* Whether the chunk paths take the batch: magic 2, uncompressed, neither transactional nor
 * control, a last offset delta and a record count that can be right. */
static int
plain_batch(const batch_t *b)
{
    return b->h[16] == 2 && !(b->attrs & (0x07 | 0x10 | 0x20)) && b->lod >= 0 && b->count >= 0
        && b->count <= b->size - 61;
}

/* The offset map's build over a run of whole batches in data[pos:end] (a chunk read from a
 * segment), plain data batches only (magic 2, uncompressed, neither transactional nor
 * control), with the rules of kwire.log.cleaner.CleanJob._build_offset_map: a batch below
 * `lo` is skipped, a batch from `hi` on ends the map. Returns (status, pos, latest, records,
 * bytes): status 0 the chunk ends (pos: the first batch not whole in it), 1 the batch at
 * pos is for the Python walk (not plain, or odd), 2 the map is full (the pass ends before
 * the batch at pos), 3 the batch at pos starts at or past `hi`, 4 the batch at pos needs
 * more room in the table or arena (grow, call again); latest: the last offset of the last
 * batch put below `hi` (-1: none); records and bytes of the batches put. */
static PyObject *
map_put_batches(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, view;
    Py_ssize_t pos, end;
    long long lo, hi, max_entries;
    if (!PyArg_ParseTuple(args, "w*w*w*y*nnLLL", &t, &a, &st, &view, &pos, &end, &lo, &hi, &max_entries))
        return NULL;
    cmap_t m;
    int status = 0;
    long long latest = -1, records = 0, nbytes = 0;
    if (cmap_open(&m, &t, &a, &st)) {
        status = -3;
    } else if (pos < 0 || end > view.len || pos > end) {
        status = 1;
    } else {
        const unsigned char *buf = (const unsigned char *)view.buf;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            batch_t b;
            int framed = next_batch(buf, pos, end, &b);
            if (framed) {
                status = framed > 0 ? 0 : 1;
                break;
            }
            if (b.last < lo) {
                pos += b.size;
                continue;
            }
            if (b.base >= hi) {
                status = 3;
                break;
            }
            if (!plain_batch(&b)) {
                status = 1;
                break;
            }
            if ((uint64_t)(m.state[0] + b.count) * 2 > m.mask + 1 || m.state[1] + b.size > m.arena_cap) {
                status = 4;
                break;
            }
            int rc = put_records(&m, buf, pos + 61, pos + b.size, b.count, b.base, b.lod, lo, hi, max_entries);
            if (rc < 0 && rc != -2) {   /* an odd record: the Python path looks */
                status = 1;
                break;
            }
            if (rc <= 0) {   /* full (the room was checked above) */
                status = 2;
                break;
            }
            records += b.count;
            nbytes += b.size;
            if (b.last < hi && b.last > latest)
                latest = b.last;
            pos += b.size;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&view);
    if (status == -3)
        return NULL;
    return Py_BuildValue("(inLLL)", status, pos, latest, records, nbytes);
}


/* CRC-32C (Castagnoli), as the batch header's CRC: over attributes .. the batch's end. */
static uint32_t crc32c_table[256];

static void
crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[i] = c;
    }
}

static uint32_t
crc32c_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < n; i++)
        c = crc32c_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
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
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

static int
in_sorted(const int64_t *a, Py_ssize_t n, int64_t v)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == v;
}

/* The recopy over a run of whole plain data batches in data[pos:end] (magic 2, uncompressed,
 * neither transactional nor control), with the rules of CleanJob._filter_batch for them:
 * records kept by the map (see map_retain); a batch that keeps all its records is copied as
 * it was; one that keeps some is rebuilt (same header but for length, record count, max
 * timestamp under CreateTime, CRC; the kept records' bytes as they were); one that keeps
 * none goes. A batch is left to the Python path (status 1) when it is not plain, odd, the
 * last before `first_uncleanable`, the last of an active producer (its last offset is in
 * the sorted int64s `special`), or would keep a tombstone without a delete horizon.
 * The output goes to `out` (room for end - pos bytes) and one (size, last offset, max
 * timestamp) int64 triple per batch written to `metas` (room for (end - pos) / 61 of them).
 * Returns (status, pos, out_len, batches_out, records_read, records_kept, keyless,
 * bytes_read): status 0 the chunk ends, 1 the batch at pos is for the Python path. */
static PyObject *
map_retain_batches(PyObject *self, PyObject *args)
{
    Py_buffer t, a, st, view, special, outb, metab;
    Py_ssize_t pos, end;
    long long latest, now_ms, first_uncleanable;
    if (!PyArg_ParseTuple(args, "w*w*w*y*nnLLLy*w*w*", &t, &a, &st, &view, &pos, &end, &latest, &now_ms,
                          &first_uncleanable, &special, &outb, &metab))
        return NULL;
    cmap_t m;
    int status = 0;
    Py_ssize_t out_len = 0, nmeta = 0;
    long long read = 0, kept_total = 0, keyless = 0, bytes_read = 0;
    if (cmap_open(&m, &t, &a, &st)) {
        status = -3;
    } else if (pos < 0 || end > view.len || pos > end || outb.len < end - pos || metab.len < (end - pos) / 61 * 24
               || special.len % 8) {
        status = 1;
    } else {
        const unsigned char *buf = (const unsigned char *)view.buf;
        unsigned char *out = (unsigned char *)outb.buf;
        int64_t *metas = (int64_t *)metab.buf;
        const int64_t *sp = (const int64_t *)special.buf;
        Py_ssize_t nsp = special.len / 8;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            batch_t b;
            int framed = next_batch(buf, pos, end, &b);
            if (framed) {
                status = framed > 0 ? 0 : 1;
                break;
            }
            if (!plain_batch(&b) || b.last + 1 == first_uncleanable || in_sorted(sp, nsp, b.last)) {
                status = 1;
                break;
            }
            int64_t base_ts = be64(b.h + 27);
            int has_horizon = (b.attrs & 0x40) != 0;
            int tombstone_expired = has_horizon && now_ms >= base_ts;
            retained_t res;
            if (retain_records(&m, buf, pos + 61, pos + b.size, b.count, b.base, b.lod, latest, tombstone_expired,
                               out + out_len + 61, &res) || (res.tombstones && !has_horizon)) {
                status = 1;
                break;
            }
            read += b.count;
            keyless += res.keyless;
            bytes_read += b.size;
            kept_total += res.kept;
            if (res.kept > 0) {
                unsigned char *o = out + out_len;
                int64_t max_ts;
                Py_ssize_t osize;
                if (res.whole) {
                    memcpy(o, b.h, (size_t)b.size);   /* over the payload copy: same bytes */
                    osize = b.size;
                    max_ts = be64(b.h + 35);
                } else {
                    memcpy(o, b.h, 61);
                    osize = 61 + res.len;
                    put_be32(o + 8, (uint32_t)(osize - 12));
                    max_ts = (b.attrs & 0x08) ? be64(b.h + 35) : base_ts + res.max_delta;
                    put_be64(o + 35, (uint64_t)max_ts);
                    put_be32(o + 57, (uint32_t)res.kept);
                    put_be32(o + 17, crc32c_of(o + 21, osize - 21));
                }
                metas[nmeta * 3] = osize;
                metas[nmeta * 3 + 1] = b.last;
                metas[nmeta * 3 + 2] = max_ts;
                nmeta++;
                out_len += osize;
            }
            pos += b.size;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&a);
    PyBuffer_Release(&st);
    PyBuffer_Release(&view);
    PyBuffer_Release(&special);
    PyBuffer_Release(&outb);
    PyBuffer_Release(&metab);
    if (status == -3)
        return NULL;
    return Py_BuildValue("(innnLLLL)", status, pos, out_len, nmeta, read, kept_total, keyless, bytes_read);
}


/* A bigger copy of `old` (a table: entries rehashed into `nbytes` of slots; an arena: its
 * first `used` bytes copied), made and filled without the GIL (a table of a million keys is
 * tens of MB: zeroing it with the GIL held would stall the event loop's thread). */
static PyObject *
map_grow(PyObject *self, PyObject *args)
{
    Py_buffer o;
    Py_ssize_t nbytes, used;
    int is_table;
    if (!PyArg_ParseTuple(args, "y*npn", &o, &nbytes, &is_table, &used))
        return NULL;
    uint64_t nn = (uint64_t)nbytes / sizeof(slot_t);
    if (nbytes < o.len || used < 0 || used > o.len
        || (is_table && (nn == 0 || (nn & (nn - 1)) || nbytes % (Py_ssize_t)sizeof(slot_t)))) {
        PyBuffer_Release(&o);
        PyErr_SetString(PyExc_ValueError, "map_grow: bad size");
        return NULL;
    }
    PyObject *nb = PyByteArray_FromStringAndSize(NULL, nbytes);
    if (nb == NULL) {
        PyBuffer_Release(&o);
        return NULL;
    }
    char *dst = PyByteArray_AS_STRING(nb);
    const char *src = (const char *)o.buf;
    Py_ssize_t olen = o.len;
    Py_BEGIN_ALLOW_THREADS
    if (is_table) {
        memset(dst, 0, (size_t)nbytes);
        const slot_t *os = (const slot_t *)src;
        slot_t *ns = (slot_t *)dst;
        uint64_t on = (uint64_t)olen / sizeof(slot_t), mask = nn - 1;
        for (uint64_t i = 0; i < on; i++) {
            if (os[i].hash == 0)
                continue;
            uint64_t j = os[i].hash & mask;
            while (ns[j].hash != 0)
                j = (j + 1) & mask;
            ns[j] = os[i];
        }
    } else {
        memcpy(dst, src, (size_t)used);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&o);
    return nb;
}

/* ---- kwire.spark's read path: v2 record batches (a Fetch answer) to Arrow columns ----------
 *
 * fetch_columns(data, pos, end, lo, hi) -> (status, pos, next_offset, columns)
 *     walks the whole batches in data[pos:end] (a partition's records of a Fetch response) and
 *     puts every data record with offset in [lo, hi) into Arrow buffers. Control batches are
 *     stepped over (their offsets count, as a consumer's position moves past them). status 0:
 *     the data ends (pos: where a trailing partial batch starts, or end); 1: the batch at pos is
 *     compressed (its records are for records_columns once inflated); 2: the batch at pos
 *     starts at or past hi; -1: the batch at pos is not one this walk takes (not magic 2, or
 *     malformed): the caller reads on another way. next_offset: the offset after the last batch
 *     stepped over (-1: none).
 * records_columns(records, count, base_offset, first_ts, max_ts, attributes, lo, hi)
 *     -> columns or None (malformed): the records of one batch (inflated), the same way.
 * columns: (n, offsets int64, timestamps int64 us, timestamp types int32, key validity bitmap
 *     or None, key offsets int32 (n + 1), key bytes, value validity or None, value offsets,
 *     value bytes), the buffers of Arrow arrays, as bytes.
 * The timestamp of a record is LogAppendTime's max timestamp of its batch, or the batch's
 * first timestamp plus the record's delta (Kafka's DefaultRecordBatch); type 0 CreateTime,
 * 1 LogAppendTime, as Spark's Kafka source reports them. Headers are walked, not kept.
 */
/* A column's buffer: a bytes object made with room for the most the walk can put there (the
 * records' count and bytes, counted before the walk), written in place without the GIL and cut
 * to its length at the end: one copy of each value, no growth. */
typedef struct { PyObject *obj; unsigned char *p; size_t len, cap; } gbuf_t;

static int
gb_reserve(gbuf_t *g, size_t more)
{
    return g->len + more <= g->cap ? 0 : -1;
}

typedef struct {
    Py_ssize_t n;
    gbuf_t off, ts, tt, kvalid, koff, kdata, vvalid, voff, vdata;
    int knull, vnull;   /* any null seen */
} cols_t;

#define COLS_EACH(c, g) gbuf_t *g##_all[] = {&(c)->off, &(c)->ts, &(c)->tt, &(c)->kvalid, &(c)->koff, \
    &(c)->kdata, &(c)->vvalid, &(c)->voff, &(c)->vdata}

/* room for `rows` records holding at most `nbytes` of keys and values together */
static int
cols_init(cols_t *c, Py_ssize_t rows, Py_ssize_t nbytes)
{
    memset(c, 0, sizeof *c);
    Py_ssize_t sizes[] = {8 * rows, 8 * rows, 4 * rows, (rows + 7) / 8, 4 * (rows + 1), nbytes,
                          (rows + 7) / 8, 4 * (rows + 1), nbytes};
    COLS_EACH(c, g);
    for (size_t i = 0; i < sizeof g_all / sizeof g_all[0]; i++) {
        g_all[i]->obj = PyBytes_FromStringAndSize(NULL, sizes[i]);
        if (!g_all[i]->obj)
            return -1;
        g_all[i]->p = (unsigned char *)PyBytes_AS_STRING(g_all[i]->obj);
        g_all[i]->cap = (size_t)sizes[i];
    }
    memset(c->kvalid.p, 0, c->kvalid.cap);
    memset(c->vvalid.p, 0, c->vvalid.cap);
    memset(c->koff.p, 0, 4);
    memset(c->voff.p, 0, 4);
    c->koff.len = c->voff.len = 4;
    return 0;
}

static void
cols_free(cols_t *c)
{
    COLS_EACH(c, g);
    for (size_t i = 0; i < sizeof g_all / sizeof g_all[0]; i++)
        Py_CLEAR(g_all[i]->obj);
}

/* back to the rows of `saved` (a copy of *c taken earlier) */
static void
cols_rollback(cols_t *c, const cols_t *saved)
{
    c->n = saved->n;
    c->knull = saved->knull;
    c->vnull = saved->vnull;
    c->off.len = saved->off.len;
    c->ts.len = saved->ts.len;
    c->tt.len = saved->tt.len;
    c->kvalid.len = saved->kvalid.len;
    c->koff.len = saved->koff.len;
    c->kdata.len = saved->kdata.len;
    c->vvalid.len = saved->vvalid.len;
    c->voff.len = saved->voff.len;
    c->vdata.len = saved->vdata.len;
}

/* one binary value (or null) onto a column's validity, offsets and data */
static int
put_bin(gbuf_t *valid, gbuf_t *offs, gbuf_t *data, int *anynull, Py_ssize_t row,
        const unsigned char *src, int64_t len)
{
    size_t byte = (size_t)(row >> 3);
    if (byte >= valid->cap)
        return -1;
    valid->len = byte + 1;
    if (len >= 0) {
        valid->p[byte] |= (unsigned char)(1u << (row & 7));
        if (data->len + (size_t)len > INT32_MAX || gb_reserve(data, (size_t)len))
            return -1;
        memcpy(data->p + data->len, src, (size_t)len);
        data->len += (size_t)len;
    } else {
        *anynull = 1;
    }
    if (gb_reserve(offs, 4))
        return -1;
    int32_t o = (int32_t)data->len;
    memcpy(offs->p + offs->len, &o, 4);
    offs->len += 4;
    return 0;
}

/* the records of one batch: 0 ok, -1 malformed, -2 more than the room counted for */
static int
decode_records(const unsigned char *buf, Py_ssize_t p, Py_ssize_t end, int64_t count, int64_t base,
               int64_t first_ts, int64_t max_ts, int attrs, int64_t lo, int64_t hi, cols_t *c)
{
    int log_append = (attrs & 0x08) != 0;
    int32_t type = log_append ? 1 : 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t length, d, od, kl, vl, hc;
        if (read_zigzag_fast(buf, end, &p, 5, &length) || length < 6 || length > end - p)
            return -1;
        Py_ssize_t record_end = p + (Py_ssize_t)length;
        p += 1; /* attributes */
        if (read_zigzag_fast(buf, record_end, &p, 10, &d) || read_zigzag_fast(buf, record_end, &p, 5, &od))
            return -1;
        if (read_zigzag_fast(buf, record_end, &p, 5, &kl) || kl < -1 || kl > record_end - p)
            return -1;
        const unsigned char *key = buf + p;
        if (kl > 0)
            p += (Py_ssize_t)kl;
        if (read_zigzag_fast(buf, record_end, &p, 5, &vl) || vl < -1 || vl > record_end - p)
            return -1;
        const unsigned char *value = buf + p;
        if (vl > 0)
            p += (Py_ssize_t)vl;
        if (read_zigzag_fast(buf, record_end, &p, 5, &hc) || hc < 0 || hc > record_end - p)
            return -1;
        for (int64_t h = 0; h < hc; h++) {
            int64_t hk, hv;
            if (read_zigzag_fast(buf, record_end, &p, 5, &hk) || hk < 0 || hk > record_end - p)
                return -1;
            p += (Py_ssize_t)hk;
            if (read_zigzag_fast(buf, record_end, &p, 5, &hv) || hv < -1 || hv > record_end - p)
                return -1;
            if (hv > 0)
                p += (Py_ssize_t)hv;
        }
        if (p != record_end)
            return -1;
        int64_t offset = base + od;
        if (offset < lo || offset >= hi)
            continue;
        int64_t ts = (log_append ? max_ts : first_ts + d) * 1000;
        Py_ssize_t row = c->n;
        if (gb_reserve(&c->off, 8) || gb_reserve(&c->ts, 8) || gb_reserve(&c->tt, 4))
            return -2;
        memcpy(c->off.p + c->off.len, &offset, 8);
        c->off.len += 8;
        memcpy(c->ts.p + c->ts.len, &ts, 8);
        c->ts.len += 8;
        memcpy(c->tt.p + c->tt.len, &type, 4);
        c->tt.len += 4;
        if (put_bin(&c->kvalid, &c->koff, &c->kdata, &c->knull, row, key, kl)
            || put_bin(&c->vvalid, &c->voff, &c->vdata, &c->vnull, row, value, vl))
            return -2;
        c->n++;
    }
    return p == end ? 0 : -1;
}

/* the buffer cut to its length, handed over (NULL on failure, the reference dropped) */
static PyObject *
gb_take(gbuf_t *g)
{
    PyObject *o = g->obj;
    g->obj = NULL;
    if (_PyBytes_Resize(&o, (Py_ssize_t)g->len) < 0)
        return NULL;
    return o;
}

static PyObject *
cols_result(cols_t *c)
{
    if (!c->knull)
        c->kvalid.len = 0;
    if (!c->vnull)
        c->vvalid.len = 0;
    PyObject *parts[9];
    COLS_EACH(c, g);
    for (size_t i = 0; i < 9; i++) {
        parts[i] = gb_take(g_all[i]);
        if (!parts[i]) {
            for (size_t j = 0; j < i; j++)
                Py_DECREF(parts[j]);
            return NULL;
        }
    }
    if (!c->knull) {
        Py_DECREF(parts[3]);
        parts[3] = Py_NewRef(Py_None);
    }
    if (!c->vnull) {
        Py_DECREF(parts[6]);
        parts[6] = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(nNNNNNNNNN)", c->n, parts[0], parts[1], parts[2], parts[3], parts[4], parts[5],
                         parts[6], parts[7], parts[8]);
}

/* the records (data batches) and bytes fetch_columns can put from data[pos:end], counted over
 * the batch headers it will walk */
static Py_ssize_t
count_rows(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, long long hi)
{
    Py_ssize_t rows = 0;
    for (;;) {
        batch_t b;
        if (next_batch(buf, pos, end, &b) || b.h[16] != 2 || b.lod < 0 || b.count < 0 || b.base >= hi)
            return rows;
        if (!(b.attrs & 0x20)) {
            if (b.attrs & 0x07)
                return rows;
            rows += b.count;
        }
        pos += b.size;
    }
}

static PyObject *
fetch_columns(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    long long lo, hi;
    if (!PyArg_ParseTuple(args, "y*nnLL", &view, &pos, &end, &lo, &hi))
        return NULL;
    if (pos < 0 || end > view.len || pos > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "fetch_columns: pos and end must lie inside the data");
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    cols_t c;
    int status = 0, rc = 0;
    long long next = -1;
    if (cols_init(&c, count_rows(buf, pos, end, hi), end - pos)) {
        cols_free(&c);
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        batch_t b;
        int r = next_batch(buf, pos, end, &b);
        if (r == 1) { status = 0; break; }
        if (r < 0 || b.h[16] != 2 || b.lod < 0 || b.count < 0) { status = -1; break; }
        if (b.base >= hi) { status = 2; break; }
        if (!(b.attrs & 0x20)) {            /* control batches hold no data records */
            if (b.attrs & 0x07) { status = 1; break; }
            if (b.last >= lo) {
                cols_t saved = c;   /* the lengths before the batch: a bad batch adds no row */
                rc = decode_records(buf, pos + 61, pos + b.size, b.count, b.base, be64(b.h + 27),
                                    be64(b.h + 35), b.attrs, lo, hi, &c);
                if (rc) {
                    cols_rollback(&c, &saved);
                    status = -1;
                    break;
                }
            }
        }
        next = b.last + 1;
        pos += b.size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    (void)rc;   /* a batch that did not fit the counted room (its count lied) is malformed too */
    PyObject *cols = cols_result(&c);
    cols_free(&c);
    if (!cols)
        return NULL;
    return Py_BuildValue("(inLN)", status, pos, next, cols);
}

static PyObject *
records_columns(PyObject *self, PyObject *args)
{
    Py_buffer view;
    long long count, base, first_ts, max_ts, lo, hi;
    int attrs;
    if (!PyArg_ParseTuple(args, "y*LLLLiLL", &view, &count, &base, &first_ts, &max_ts, &attrs, &lo, &hi))
        return NULL;
    cols_t c;
    int rc;
    if (count < 0 || count > view.len) {   /* a record takes 7 bytes at least */
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    if (cols_init(&c, (Py_ssize_t)count, view.len)) {
        cols_free(&c);
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = decode_records((const unsigned char *)view.buf, 0, view.len, count, base, first_ts, max_ts, attrs,
                        lo, hi, &c);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (rc) {   /* malformed, or more than `count` records' room */
        cols_free(&c);
        Py_RETURN_NONE;
    }
    PyObject *cols = cols_result(&c);
    cols_free(&c);
    return cols;
}

static PyMethodDef methods[] = {
    {"walk_records", walk_records, METH_VARARGS,
     "walk_records(data, pos, end, count) -> (min_ts_delta, max_ts_delta, first_keyless) or None"},
    {"map_put_batch", map_put_batch, METH_VARARGS,
     "map_put_batch(table, arena, state, data, pos, end, count, base_offset, last_delta, lo, hi, max_entries)"
     " -> True, False (full) or None"},
    {"map_retain", map_retain, METH_VARARGS,
     "map_retain(table, arena, state, data, pos, end, count, base_offset, last_delta, latest, tombstone_expired)"},
    {"map_put_batches", map_put_batches, METH_VARARGS,
     "map_put_batches(table, arena, state, data, pos, end, lo, hi, max_entries)"
     " -> (status, pos, latest, records, bytes)"},
    {"map_retain_batches", map_retain_batches, METH_VARARGS,
     "map_retain_batches(table, arena, state, data, pos, end, latest, now_ms, first_uncleanable, special, out, metas)"
     " -> (status, pos, out_len, batches_out, records_read, records_kept, keyless, bytes_read)"},
    {"map_grow", map_grow, METH_VARARGS, "map_grow(old, nbytes, is_table, used) -> bigger bytearray"},
    {"map_put", map_put, METH_VARARGS, "map_put(table, arena, state, key, offset, max_entries) -> bool"},
    {"map_get", map_get, METH_VARARGS, "map_get(table, arena, state, key) -> offset or -1"},
    {"fetch_columns", fetch_columns, METH_VARARGS,
     "fetch_columns(data, pos, end, lo, hi) -> (status, pos, next_offset, columns)"},
    {"records_columns", records_columns, METH_VARARGS,
     "records_columns(records, count, base_offset, first_ts, max_ts, attributes, lo, hi) -> columns or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kwire.log._walk", "The record walk of kwire.log.validator in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    crc32c_init();
    return PyModule_Create(&module);
}

"""kcat adapter (the command-line client; Debian's build links librdkafka 2.0, an old client).

kcat produces lines from stdin and consumes with ``-J`` (one JSON envelope per record). What it
cannot express is raised as Unsupported: per-record CreateTime, a null and an empty field in the same
record, admin operations, consumer-group control, idempotence and transactions.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

from .base import Acked, Client, Got, KafkaOpError, Unsupported

KCAT = shutil.which("kcat") or shutil.which("kafkacat")

_MESSAGES = {  # librdkafka's error strings -> Kafka's error names
    "Message size too large": "MESSAGE_TOO_LARGE",
    "Broker: Message size too large": "MESSAGE_TOO_LARGE",
    "Broker: Unknown topic or partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "Local: Unknown partition": "UNKNOWN_TOPIC_OR_PARTITION",
    "Local: Unknown topic": "UNKNOWN_TOPIC_OR_PARTITION",
    "Local: Message timed out": "REQUEST_TIMED_OUT",
}
_KEY_DELIM = "\t"


def _error_from(stderr: str) -> KafkaOpError:
    for text, name in _MESSAGES.items():
        if text in stderr:
            return KafkaOpError(name, stderr.strip()[-300:])
    return KafkaOpError("KCAT_FAILED", stderr.strip()[-300:])


class KcatClient(Client):
    name = "kcat"
    can_set_timestamp = False
    lacks = {
        "groups": "kcat's -G mode gives no programmatic control of assignment, commits or leaving",
        "idempotence": "kcat has no switch to report an idempotent producer's outcome per record",
        "transactions": "kcat has no transactional producer",
        "admin": "kcat has no admin API (no CreateTopics, DeleteTopics, CreatePartitions, configs, DeleteRecords)",
    }

    def _base(self) -> list[str]:
        return [KCAT, "-b", self.bootstrap]

    # ------------------------------------------------------------ produce
    def produce(self, topic, records, codec="none", *, max_request_size=None, timeout=20.0):
        records = list(records)
        runs: list[tuple[tuple, list]] = []
        for r in records:
            if r.timestamp is not None:
                raise Unsupported("kcat cannot set a record's CreateTime timestamp")
            for part in (r.key, r.value):
                if part is not None and (b"\n" in part or _KEY_DELIM.encode() in part):
                    raise Unsupported("kcat produces line-delimited text records")
            nulls = r.key is None or r.value is None
            if nulls and (r.key == b"" or r.value == b""):
                raise Unsupported("kcat's -Z makes every empty field NULL: it cannot send a null and an empty "
                                  "field in one record")
            keyed = r.key is not None or nulls
            mode = (r.partition, tuple(r.headers), nulls, keyed)
            if runs and runs[-1][0] == mode:
                runs[-1][1].append(r)
            else:
                runs.append((mode, [r]))
        for (partition, headers, nulls, keyed), recs in runs:
            args = self._base() + ["-P", "-t", topic, "-z", codec, "-X", "acks=all",
                                   "-X", f"message.timeout.ms={int(timeout * 1000)}"]
            if max_request_size:
                args += ["-X", f"message.max.bytes={max_request_size}"]
            if partition is not None:
                args += ["-p", str(partition)]
            for k, v in headers:
                args += ["-H", f"{k}={v.decode()}"]
            if nulls:
                args += ["-Z"]
            if keyed:
                args += ["-K", _KEY_DELIM]
            lines = []
            for r in recs:
                v = r.value or b""
                lines.append(((r.key or b"") + _KEY_DELIM.encode() + v) if keyed else v)
            proc = subprocess.run(args, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=timeout + 30)
            if proc.returncode != 0 or b"Delivery failed" in proc.stderr or b"ERROR" in proc.stderr:
                raise _error_from(proc.stderr.decode(errors="replace"))
        return [Acked(r.partition, None) for r in records]  # kcat reports no delivery offsets

    # ------------------------------------------------------------ consume
    def consume(self, topic, partitions=(0,), start="beginning", *, count, timeout=15.0, on_positioned=None,
                read_committed=False, max_fetch_bytes=None):
        if isinstance(start, tuple):
            off = f"s@{start[1]}"
        else:
            off = str(start)
        procs = []
        per = {}
        try:
            for p in partitions:
                args = self._base() + ["-C", "-t", topic, "-p", str(p), "-o", off, "-J", "-Z", "-u",
                                       "-X", f"isolation.level={'read_committed' if read_committed else 'read_uncommitted'}"]
                if max_fetch_bytes:
                    args += ["-X", f"fetch.max.bytes={max_fetch_bytes}",
                             "-X", f"receive.message.max.bytes={max_fetch_bytes + 100_000}"]
                procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            deadline = time.monotonic() + timeout
            if on_positioned is not None:
                for proc in procs:  # kcat reports "Reached end of topic" once positioned at the end
                    line = proc.stderr.readline().decode(errors="replace")
                    while line and "Reached end" not in line:
                        if "ERROR" in line:
                            raise _error_from(line)
                        line = proc.stderr.readline().decode(errors="replace")
                on_positioned()
            out: list[Got] = []
            # read records until count arrived (over all partitions) or timeout
            import selectors
            sel = selectors.DefaultSelector()
            bufs = {}
            for proc in procs:
                sel.register(proc.stdout, selectors.EVENT_READ, proc)
                bufs[proc] = b""
            while len(out) < count and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=0.2):
                    proc = key.data
                    chunk = proc.stdout.read1(1 << 20)
                    if not chunk:
                        sel.unregister(proc.stdout)
                        continue
                    bufs[proc] += chunk
                    *lines, bufs[proc] = bufs[proc].split(b"\n")
                    out.extend(self._parse(l) for l in lines if l.strip())
                if not sel.get_map():
                    break
            out.sort(key=lambda g: (g.partition, g.offset))
            return out
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
                proc.stdout.close()
                proc.stderr.close()

    @staticmethod
    def _parse(line: bytes) -> Got:
        d = json.loads(line)
        h = d.get("headers") or []
        enc = lambda s: None if s is None else s.encode()  # noqa: E731
        return Got(d["topic"], d["partition"], d["offset"], enc(d.get("key")), enc(d.get("payload")),
                   [(h[i], enc(h[i + 1])) for i in range(0, len(h), 2)], d.get("ts", -1),
                   "LogAppendTime" if d.get("tstype") == "logappend" else "CreateTime")

    def _query(self, topic, partition, ts) -> int:
        proc = subprocess.run(self._base() + ["-Q", "-t", f"{topic}:{partition}:{ts}"], capture_output=True,
                              text=True, timeout=30)
        m = re.search(r"offset (-?\d+)", proc.stdout)
        if proc.returncode != 0 or not m:
            raise _error_from(proc.stderr + proc.stdout)
        return int(m.group(1))

    def offset_for_time(self, topic, partition, ts):
        off = self._query(topic, partition, ts)
        return None if off < 0 else off

    def watermarks(self, topic, partition):
        return self._query(topic, partition, -2), self._query(topic, partition, -1)

    # ------------------------------------------------------------ metadata (no admin in kcat)
    def _metadata(self, topic=None) -> dict:
        args = self._base() + ["-L", "-J"] + (["-t", topic] if topic else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise _error_from(proc.stderr)
        return json.loads(proc.stdout)

    def list_topics(self):
        return {t["topic"] for t in self._metadata()["topics"]}

    def group_member(self, group, topics, **kw):
        raise Unsupported("kcat's -G mode gives no programmatic control of assignment, commits or leaving")

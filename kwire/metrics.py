"""Prometheus metrics: a ``/metrics`` text endpoint (``metrics.listen=HOST:PORT``), with the
names Kafka operators chart (as the Prometheus JMX exporter's Kafka rules name Kafka's MBeans,
and kafka-exporter names consumer lag).

The request path only bumps plain counters (:class:`BrokerMetrics`: a dict lookup and a few
additions per request, per produced or fetched partition); everything else is read from the
broker when Prometheus scrapes (:class:`KafkaCollector`, a prometheus_client collector), so an
idle broker spends nothing on metrics. Exposition is prometheus_client's ``generate_latest``.

Served:
- kafka_server_brokertopicmetrics_{messagesin,bytesin,bytesout}_total{topic}: client produce
  and fetch traffic (replica fetches left out, as in Kafka's BytesOutPerSec);
- kafka_network_requestmetrics_requests_total{request,version} and the histogram
  kafka_network_requestmetrics_totaltimems{request} (ms from request read to response written);
- kafka_network_requestchannel_requestqueuesize (requests being handled now: kwire has no
  separate queue), kafka_server_socketservermetrics_connection_count;
- kafka_server_replicamanager_{partitioncount,leadercount,underreplicatedpartitions},
  kafka_controller_kafkacontroller_{activecontrollercount,offlinepartitionscount};
- kafka_log_log_{size,logstartoffset,logendoffset}{topic,partition} for the partitions here;
- the log cleaner: kafka_log_logcleaner_{max_buffer_utilization_percent,cleaner_recopy_percent,
  max_clean_time_secs,max_compaction_delay_secs,deadthreadcount},
  kafka_log_logcleanermanager_{max_dirty_percent,time_since_last_run_ms} (of the last pass, as
  Kafka's gauges), kwire_log_cleaner_{passes,bytes_read,bytes_written}_total;
- kafka_consumergroup_{current_offset,lag}{consumergroup,topic,partition} for the groups this
  broker coordinates, against the partition's high watermark where this broker has the log;
- kafka_server_raft_metrics_{commit_latency_avg,commit_latency_max} (ms, last 30 s, on the
  active controller), _current_leader, _current_epoch, _high_watermark;
- kafka_server_{produce,fetch}_byte_rate, kafka_server_request_request_time and
  kafka_server_{produce,fetch,request}_throttle_time{user,client_id} (Kafka's quota sensors:
  rate over the quota window, average throttle ms), kwire_quota_*_throttle_time_ms_total, once
  a client quota of that type exists;
- kwire_build_info{version}.
"""
from __future__ import annotations

import bisect
import collections
import logging
import struct
import time

import trio

from kwire import __version__

log = logging.getLogger("kwire.metrics")

LATENCY_BUCKETS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
_COUNT = struct.Struct(">i")
RAFT_WINDOW_S = 30.0


class BrokerMetrics:
    """Counters the request path bumps (no locks: one Trio thread)."""

    def __init__(self) -> None:
        self.topics: dict[str, list[int]] = {}      # topic -> [messages in, bytes in, bytes out]
        self.requests: dict[tuple[str, int], int] = collections.Counter()
        self.latency: dict[str, list] = {}          # api -> [bucket counts..., +Inf count, sum ms]

    def _topic(self, name: str) -> list[int]:
        row = self.topics.get(name)
        if row is None:
            row = self.topics[name] = [0, 0, 0]
        return row

    def request(self, api: str, version: int, seconds: float) -> None:
        self.requests[(api, version)] += 1
        row = self.latency.get(api)
        if row is None:
            row = self.latency[api] = [0] * (len(LATENCY_BUCKETS_MS) + 1) + [0.0]
        ms = seconds * 1000
        row[bisect.bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        row[-1] += ms

    def produced(self, body, resp, topic_name) -> None:
        """A Produce answered: bytes and records of the partitions written without error."""
        if resp is None:       # acks=0: count what was sent
            errors = None
        else:
            errors = {}
            for t in resp.responses:
                for p in t.partition_responses:
                    errors[(topic_name(t), p.index)] = p.error_code
        for t in body.topic_data:
            name = topic_name(t)
            for p in t.partition_data:
                data = p.records
                if not data or (errors is not None and errors.get((name, p.index), 0)):
                    continue
                row = self._topic(name)
                row[1] += len(data)
                row[0] += record_count(data)

    def fetched(self, resp, topic_name) -> None:
        for t in resp.responses:
            name = None
            for p in t.partitions:
                if p.records:
                    if name is None:
                        name = topic_name(t)
                    self._topic(name)[2] += len(p.records)


def record_count(data) -> int:
    """Records in the batches of a produce payload (each batch header's recordsCount)."""
    n, pos, end = 0, 0, len(data)
    mv = memoryview(data)
    while pos + 61 <= end:
        n += _COUNT.unpack_from(mv, pos + 57)[0]
        pos += 12 + _COUNT.unpack_from(mv, pos + 8)[0]
    return n


class KafkaCollector:
    """Reads the broker when scraped (prometheus_client's custom collector protocol)."""

    def __init__(self, broker, server, counters: BrokerMetrics):
        self.broker, self.server, self.counters = broker, server, counters

    def collect(self):
        from prometheus_client.core import (  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)
            CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily)

        b, c = self.broker, self.counters
        info = GaugeMetricFamily("kwire_build_info", "kwire's version", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        fams = [CounterMetricFamily(f"kafka_server_brokertopicmetrics_{n}", doc, labels=["topic"]) for n, doc in
                (("messagesin", "Records produced to the topic (client produce requests)"),
                 ("bytesin", "Bytes produced to the topic (record batches as sent)"),
                 ("bytesout", "Bytes fetched from the topic by consumers (replica fetches left out)"))]
        for topic, row in sorted(c.topics.items()):
            for fam, v in zip(fams, row):
                fam.add_metric([topic], v)
        yield from fams
        req = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered, per API and version",
                                  labels=["request", "version"])
        for (api, version), n in sorted(c.requests.items()):
            req.add_metric([api, str(version)], n)
        yield req
        lat = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                    "Time from a request read to its response written, ms", labels=["request"])
        for api, row in sorted(c.latency.items()):
            acc, buckets = 0, []
            for bound, n in zip((*LATENCY_BUCKETS_MS, float("inf")), row[:-1]):
                acc += n
                buckets.append(("+Inf" if bound == float("inf") else str(bound), acc))
            lat.add_metric([api], buckets, sum_value=row[-1])
        yield lat
        yield _gauge("kafka_network_requestchannel_requestqueuesize",
                     "Requests received and being handled now (kwire has no separate queue)", self.server.in_flight)
        yield _gauge("kafka_server_socketservermetrics_connection_count", "Open client connections",
                     len(self.server.connections))
        yield from self._partitions()
        yield from self._groups()
        yield from self._raft()
        yield from self._quotas()

    def _quotas(self):
        """Client quota sensors (kwire.quota), named as the JMX exporter names Kafka's
        kafka.server:type={Produce,Fetch,Request},user=..,client-id=.. MBeans; only once a
        quota of that type exists (Kafka creates the sensors only then, too)."""
        from prometheus_client.core import (  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)
            CounterMetricFamily, GaugeMetricFamily)

        q = getattr(self.broker, "quotas", None)
        if q is None:
            return
        now = self.broker.clock.now_ms()
        labels = ["user", "client_id"]
        for m, value_name, what in ((q.produce, "byte_rate", "Bytes produced per second"),
                                    (q.fetch, "byte_rate", "Bytes fetched per second"),
                                    (q.request, "request_time", "Broker time used, percent of one thread")):
            if not m.enabled:
                continue
            t = m.quota_type.lower()
            rate = GaugeMetricFamily(f"kafka_server_{t}_{value_name}", f"{what}, per user / client-id (quota "
                                     f"window)", labels=labels)
            throttle = GaugeMetricFamily(f"kafka_server_{t}_throttle_time", "Average throttle time (ms) per user / "
                                         "client-id", labels=labels)
            total = CounterMetricFamily(f"kwire_quota_{t}_throttle_time_ms", "Throttle time given (ms), per user / "
                                        "client-id", labels=labels)
            for (user, client_id), s in sorted(m.sensors.items()):
                lv = [user, client_id]
                rate.add_metric(lv, s.quota.rate.measure(now))
                throttle.add_metric(lv, s.throttle.measure(now))
                total.add_metric(lv, s.throttle_total_ms)
            yield rate
            yield throttle
            yield total

    def _partitions(self):
        from prometheus_client.core import GaugeMetricFamily  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)

        b = self.broker
        me = b.node_id
        count = leaders = under = offline = 0
        for t in b.image.topics.values():
            for p in t.partitions.values():
                if p.leader < 0:
                    offline += 1
                if me in p.replicas:
                    count += 1
                if p.leader == me:
                    leaders += 1
                    if len(p.isr) < len(p.replicas):
                        under += 1
        yield _gauge("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker", count)
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads", leaders)
        yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                     "Partitions this broker leads whose ISR is smaller than their replica set", under)
        active = b.quorum is not None and b.quorum.driver.is_leader
        yield _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                     "1 on the active controller (the metadata quorum's leader), else 0", 1 if active else 0)
        yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
                     "Partitions without a leader (reported by the active controller)", offline if active else 0)
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's log on disk",
                                 labels=["topic", "partition"])
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "The partition's log start offset",
                                  labels=["topic", "partition"])
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "The partition's log end offset",
                                labels=["topic", "partition"])
        for (topic, part), lg in sorted(b.logs.logs.items()):
            labels = [topic, str(part)]
            try:
                size.add_metric(labels, lg.size_in_bytes)
                start.add_metric(labels, lg.log_start_offset)
                end.add_metric(labels, lg.log_end_offset)
            except Exception:  # noqa: BLE001 - a log being deleted or offline: left out of this scrape
                continue
        yield size
        yield start
        yield end
        yield from self._cleaner()

    def _cleaner(self):
        c = getattr(self.server, "cleaner", None)
        if c is None:
            return
        from prometheus_client.core import CounterMetricFamily  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)

        yield _gauge("kafka_log_logcleaner_max_buffer_utilization_percent",
                     "Offset map fill of the last pass (percent)", 100 * c.last_buffer_utilization)
        yield _gauge("kafka_log_logcleaner_cleaner_recopy_percent",
                     "Bytes written over bytes read by the last pass (percent)", 100 * c.last_recopy_ratio)
        yield _gauge("kafka_log_logcleaner_max_clean_time_secs", "Duration of the last pass", c.last_clean_time_s)
        yield _gauge("kafka_log_logcleaner_max_compaction_delay_secs",
                     "How far past max.compaction.lag.ms the most overdue dirty record is", c.max_compaction_delay_ms / 1000)
        yield _gauge("kafka_log_logcleaner_deadthreadcount", "Cleaner threads that died", c.dead_threads)
        yield _gauge("kafka_log_logcleanermanager_max_dirty_percent",
                     "Highest dirty ratio among compacted logs (percent)", 100 * c.max_dirty_ratio)
        yield _gauge("kafka_log_logcleanermanager_time_since_last_run_ms", "Since the cleaner last looked for work",
                     1000 * (time.monotonic() - c.last_run_monotonic))
        for name, doc, v in (("kwire_log_cleaner_passes", "Cleaning passes", c.passes),
                             ("kwire_log_cleaner_bytes_read", "Bytes the cleaner read", c.bytes_read_total),
                             ("kwire_log_cleaner_bytes_written", "Bytes the cleaner wrote", c.bytes_written_total)):
            fam = CounterMetricFamily(name, doc)
            fam.add_metric([], v)
            yield fam

    def _groups(self):
        from prometheus_client.core import GaugeMetricFamily  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)

        cur = GaugeMetricFamily("kafka_consumergroup_current_offset", "The group's committed offset",
                                labels=["consumergroup", "topic", "partition"])
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus the group's committed offset",
                                labels=["consumergroup", "topic", "partition"])
        coordinator = self.broker.groups
        logs = self.broker.logs.logs
        if coordinator is not None:
            for gid in sorted(coordinator.groups):
                try:
                    offsets = coordinator.fetch_offsets(gid).offsets
                except Exception:  # noqa: BLE001 - a group being unloaded: left out of this scrape
                    continue
                for (topic, part), fo in sorted(offsets.items()):
                    if fo.offset is None or fo.offset < 0:
                        continue
                    labels = [gid, topic, str(part)]
                    cur.add_metric(labels, fo.offset)
                    lg = logs.get((topic, part))
                    if lg is not None:
                        lag.add_metric(labels, max(0, lg.high_watermark - fo.offset))
        yield cur
        yield lag

    def _raft(self):
        q = self.broker.quorum
        if q is None:
            return
        d = q.driver
        now = time.monotonic()
        recent = [ms for t, ms in getattr(q, "commit_latencies", ()) if now - t <= RAFT_WINDOW_S]
        yield _gauge("kafka_server_raft_metrics_commit_latency_avg",
                     "Average ms from proposing metadata records to their commit (last 30 s, active controller)",
                     sum(recent) / len(recent) if recent else 0.0)
        yield _gauge("kafka_server_raft_metrics_commit_latency_max",
                     "Longest ms from proposing metadata records to their commit (last 30 s)", max(recent, default=0.0))
        yield _gauge("kafka_server_raft_metrics_current_leader", "The metadata quorum's leader (-1: none)", d.leader_id)
        yield _gauge("kafka_server_raft_metrics_current_epoch", "The metadata quorum's epoch", d.epoch)
        yield _gauge("kafka_server_raft_metrics_high_watermark", "The metadata log's high watermark", d.high_watermark)


def _gauge(name: str, doc: str, value):
    from prometheus_client.core import GaugeMetricFamily  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)

    return GaugeMetricFamily(name, doc, value=value)


def registry_for(broker, server, counters: BrokerMetrics):
    from prometheus_client import CollectorRegistry  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)

    reg = CollectorRegistry(auto_describe=False)
    reg.register(KafkaCollector(broker, server, counters))
    return reg


async def serve_metrics(listeners, make_registry) -> None:
    """A minimal HTTP/1.0 server: ``GET /metrics`` -> the text exposition format.
    prometheus_client is imported and ``make_registry()`` called on the first scrape, so
    neither costs a start anything (its import is ~30-60 ms of the event loop's time)."""
    registry = None

    def scrape() -> tuple[str, bytes]:
        nonlocal registry
        from prometheus_client import (  # noqa: PLC0415 - start-up time: first scrape (serve_metrics)
            CONTENT_TYPE_LATEST, generate_latest)

        if registry is None:
            registry = make_registry()
        return CONTENT_TYPE_LATEST, generate_latest(registry)

    async def handle(stream) -> None:
        try:
            with trio.move_on_after(10):
                data = b""
                while b"\r\n\r\n" not in data and b"\n\n" not in data and len(data) < 16384:
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        return
                    data += chunk
                parts = data.split(b"\n", 1)[0].decode("latin-1").split()
                method, path = (parts + ["", ""])[:2]
                path = path.split("?", 1)[0]
                if method not in ("GET", "HEAD"):
                    status, ctype, body = "405 Method Not Allowed", "text/plain", b"GET /metrics\n"
                elif path == "/metrics":
                    status, (ctype, body) = "200 OK", scrape()
                elif path == "/":
                    status, ctype, body = "200 OK", "text/html", b'<a href="/metrics">/metrics</a>\n'
                else:
                    status, ctype, body = "404 Not Found", "text/plain", b"not found: try /metrics\n"
                head = (f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                        f"Connection: close\r\n\r\n").encode()
                await stream.send_all(head + (b"" if method == "HEAD" else body))
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass
        except Exception:  # noqa: BLE001 - a failed scrape must not stop the broker
            log.exception("metrics scrape failed")
        finally:
            await trio.aclose_forcefully(stream)

    await trio.serve_listeners(handle, listeners)

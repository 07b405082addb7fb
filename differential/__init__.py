"""Differential wire conformance: the same request sequences sent to kwire and to Apache Kafka 4.3,
both answers decoded with kwire's schemas, normalised where they legitimately differ and compared
field by field (``make differential``, ``python -m differential``).

Modules, one job each:
  wire.py        a blocking one-socket client: a request (or raw bytes) in, an outcome out
  pair.py        kwire and Apache Kafka started alike, and the per-side state a case needs
  normalise.py   decoded answers -> plain trees with ids, timestamps, host/port and undefined orders masked
  compare.py     two trees -> differences (path, kafka, kwire)
  listed.py      the reasoned differences of docs/differences.md ("## Wire"), read as patterns
  cases/         the corpora: generated per API (hypothesis), malformed frames, replayed recordings
  run.py         runs corpora against a pair and writes differential-report.json
"""

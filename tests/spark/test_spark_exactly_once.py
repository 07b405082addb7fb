"""exactlyOnce=true on the kwire sink: a micro-batch replayed after a crash (its commit missing
from the checkpoint) is written once; the plain at-least-once sink writes it twice, and the
test counts those duplicates to show the difference."""
from __future__ import annotations

import os
from collections import Counter

import pytest

from tests.spark.helpers import consume_all, produce

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("spark")]

N = 1000


def _run(spark, src, dst, ckpt, **sink_opts):
    w = (spark.readStream.format("kwire").option("subscribe", src).option("startingOffsets", "earliest")
         .load().select("key", "value").writeStream.format("kwire").option("topic", dst)
         .option("checkpointLocation", ckpt))
    for k, v in sink_opts.items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start()
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()


def _forget_last_commit(ckpt):
    """What a driver crash between the sink's write and the checkpoint's commit leaves."""
    commits = os.path.join(ckpt, "commits")
    last = max(int(f) for f in os.listdir(commits) if f.isdigit())
    os.remove(os.path.join(commits, str(last)))
    crc = os.path.join(commits, f".{last}.crc")
    if os.path.exists(crc):
        os.remove(crc)


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
def test_replayed_micro_batch(kwire_spark, kafka_broker, kafka_topic, tmp_path, eos):
    b = kafka_broker.bootstrap_servers
    src, dst = kafka_topic + "-in", kafka_topic + "-out"
    kafka_broker.create_topic(src, 2)
    kafka_broker.create_topic(dst, 2)
    produce(b, src, [(str(i).encode(), str(i).encode(), None) for i in range(N)])
    opts = {"exactlyOnce": "true", "transactionalIdPrefix": f"eos-{kafka_topic}"} if eos else {}
    ckpt = str(tmp_path / "ckpt")
    _run(kwire_spark, src, dst, ckpt, **opts)
    _forget_last_commit(ckpt)
    _run(kwire_spark, src, dst, ckpt, **opts)   # replays the last micro-batch
    out = consume_all(b, dst, 2, isolation="read_committed" if eos else "read_uncommitted")
    got = Counter(int(v) for _k, v, _h in out)
    assert set(got) == set(range(N))
    dups = sum(c - 1 for c in got.values())
    print(f"{'exactly-once' if eos else 'at-least-once'} sink after a replayed micro-batch: {dups} duplicates")
    if eos:
        assert dups == 0
    else:
        assert dups == N      # the whole micro-batch was written again


def test_batch_write_in_transactions(kwire_spark, kafka_broker, kafka_topic):
    b = kafka_broker.bootstrap_servers
    dst = kafka_topic + "-txn"
    kafka_broker.create_topic(dst, 2)
    df = kwire_spark.createDataFrame([(str(i), str(i)) for i in range(500)], "key string, value string")
    (df.repartition(3).write.format("kwire").mode("append").option("topic", dst)
     .option("exactlyOnce", "true").option("transactionalIdPrefix", f"batch-{kafka_topic}").save())
    committed = consume_all(b, dst, 2, isolation="read_committed")
    assert sorted(int(v) for _k, v, _h in committed) == list(range(500))


def test_a_new_checkpoint_with_a_used_prefix_is_refused_not_silently_skipped(kwire_spark, kafka_broker, kafka_topic,
                                                                              tmp_path):
    """A new checkpoint starts again at micro-batch 0: with a transactionalIdPrefix another
    checkpoint's query committed ids under, every batch would be skipped as already written
    (Spark reporting rows written that the topic never got). It is refused, naming the fix
    (test_replayed_micro_batch shows the same checkpoint restarted resuming)."""
    b = kafka_broker.bootstrap_servers
    src, dst = kafka_topic + "-in", kafka_topic + "-out"
    kafka_broker.create_topic(src, 1)
    kafka_broker.create_topic(dst, 1)
    produce(b, src, [(str(i).encode(), str(i).encode(), None) for i in range(100)])
    prefix = f"reset-{kafka_topic}"
    _run(kwire_spark, src, dst, str(tmp_path / "first"), exactlyOnce="true", transactionalIdPrefix=prefix)
    w = (kwire_spark.readStream.format("kwire").option("subscribe", src).option("startingOffsets", "earliest")
         .load().select("key", "value").writeStream.format("kwire").option("topic", dst)
         .option("checkpointLocation", str(tmp_path / "second")).option("exactlyOnce", "true")
         .option("transactionalIdPrefix", prefix))
    from pyspark.errors import StreamingQueryException

    q = w.trigger(availableNow=True).start()
    with pytest.raises(StreamingQueryException, match="Give this checkpoint its own transactionalIdPrefix"):
        q.awaitTermination(120)
    out = consume_all(b, dst, 1, isolation="read_committed")
    assert sorted(int(v) for _k, v, _h in out) == list(range(100))     # nothing written twice, nothing lost

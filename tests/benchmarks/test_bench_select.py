"""python -m bench NAME: which benchmark modules a name selects."""
from bench.__main__ import select

NAMES = ["server_bench", "spark_bench", "spark_kafka_bench", "startup_bench", "vs_kafka_bench"]


def test_a_whole_name_selects_its_module_alone():
    assert select(["spark"], NAMES) == ["spark_bench"]
    assert select(["spark_kafka"], NAMES) == ["spark_kafka_bench"]
    assert select(["vs_kafka"], NAMES) == ["vs_kafka_bench"]


def test_a_prefix_selects_every_module_it_begins():
    assert select(["s"], NAMES) == ["server_bench", "spark_bench", "spark_kafka_bench", "startup_bench"]
    assert select(["spark", "st"], NAMES) == ["spark_bench", "startup_bench"]

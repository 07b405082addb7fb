"""Debian's kcat (librdkafka 2.0: an old client) against a running kwire."""
import shutil
import subprocess

import pytest

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def test_kcat_installed():
    assert KCAT, "kcat is not installed (CI installs Debian's kcat in .ci/run)"


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume(bootstrap, topic, codec):
    assert KCAT
    lines = [f"key{i}:value {i}" for i in range(50)]
    subprocess.run([KCAT, "-b", bootstrap, "-P", "-t", topic, "-K:", "-z", codec, "-X", "acks=all"],
                   input="\n".join(lines) + "\n", text=True, check=True, timeout=60)
    out = subprocess.run([KCAT, "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k=%s|%o\n"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    got = [l for l in out.splitlines() if l]
    assert got == [f"key{i}=value {i}|{i}" for i in range(50)]


@pytest.mark.slow
def test_kcat_metadata_list(bootstrap, topic):
    assert KCAT
    subprocess.run([KCAT, "-b", bootstrap, "-P", "-t", topic], input="x\n", text=True, check=True, timeout=60)
    out = subprocess.run([KCAT, "-b", bootstrap, "-L", "-t", topic], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert f'topic "{topic}" with 1 partitions' in out

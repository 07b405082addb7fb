"""A local SparkSession for tests of PySpark jobs against kwire (the ``kwire_spark`` fixture)."""
from __future__ import annotations

import os
import sys
import tempfile


def local_session(app_name: str = "kwire-tests", *, cores: int = 2, extra: dict | None = None):
    """``local[cores]`` with small shuffles and no UI; workers run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415 - optional dependency: pyspark (kwire[spark])
    b = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(cores * 2))
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.streaming.stopTimeout", "30s")
         .config("spark.local.dir", tempfile.mkdtemp(prefix="kwire-spark-local-")))
    for k, v in (extra or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark

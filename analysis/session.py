"""The one place a SparkSession is made (``get_spark``), with the settings that matter on a small machine.

Measured on a 2-core machine with no network (docs/analysis.md):

* ``SPARK_LOCAL_IP=127.0.0.1`` -- the driver binds to loopback instead of resolving the host name (which can
  hang or pick an unreachable address where there is no network).
* ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` = the running interpreter, so Python workers see the same
  virtualenv (kgroup, pydantic) as the driver (on a cluster, ``PYSPARK_PYTHON`` is left to the user: it names
  the executors' interpreter).
* log4j2.properties shipped in this package (``analysis/log4j2.properties``) -- quiets the start-up banner and
  INFO chatter; passed with ``-Dlog4j2.configurationFile``.
* ``spark.ui.enabled=false`` (no Jetty server), few shuffle partitions (the data is small: 200 by default means
  200 tiny tasks per shuffle; here one per core), and the driver JVM option ``-XX:TieredStopAtLevel=1`` (C1
  only: roughly halves start-up on 2 cores, costs little on these short jobs).
* adaptive query execution off on local masters: the metrics are a chain of windows and joins over small
  tables, and AQE plans every shuffle stage as its own job (107 jobs / 307 stages against 8 / 128 for one
  analysis of a scenario log; 2.5x slower end to end on 2 cores). On a cluster it stays on.

A master URL other than ``local[...]`` is used unchanged (``spark://host:7077``, ``yarn``, ``k8s://...``); the
loopback binding is then not forced (the executors must reach the driver), see docs/analysis.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

LOG4J2 = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[*]"
APP_NAME = "kgroup-analysis"


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def local_cores(master: str) -> int:
    """Cores of a ``local[N]`` / ``local[*]`` master (1 for ``local``)."""
    if master.startswith("local[") and master.endswith("]"):
        n = master[6:-1].split(",")[0]
        return (os.cpu_count() or 1) if n == "*" else max(1, int(n))
    return 1


def spark_conf(master: str = DEFAULT_MASTER, shuffle_partitions: Optional[int] = None,
               extra: Optional[dict[str, Any]] = None, long_jobs: bool = False) -> dict[str, str]:
    """The configuration ``get_spark`` applies (exposed for tests and docs). ``shuffle_partitions``: default one
    per local core (Spark's default, 200, on a cluster)."""
    if shuffle_partitions is None:
        shuffle_partitions = local_cores(master) if is_local(master) else 200
    # C1 only (fast start) for short jobs; the full tiered JIT (C2) when the JVM itself parses a large input (a
    # large log's parse runs ~2x faster in C2-compiled code; analysis.analyze.LONG_JOB_BYTES decides)
    jit = "" if long_jobs else "-XX:TieredStopAtLevel=1 "
    jvm_opts = f"{jit}-Dlog4j2.configurationFile={LOG4J2.resolve().as_uri()}"
    conf = {
        "spark.master": master,
        "spark.app.name": APP_NAME,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.driver.extraJavaOptions": jvm_opts,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "false" if is_local(master) else "true",
        "spark.pyspark.driver.python": sys.executable,
    }
    if is_local(master):
        conf["spark.pyspark.python"] = sys.executable
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    for k, v in (extra or {}).items():
        conf[k] = str(v)
    return conf


def prepare_environment(master: str = DEFAULT_MASTER) -> None:
    """Environment variables read by spark-submit / the Python workers (must be set before the JVM starts)."""
    if is_local(master):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:
        # executors run their own interpreter: keep the user's PYSPARK_PYTHON (docs/analysis.md)
        os.environ.setdefault("PYSPARK_PYTHON", "python3")
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # The workers must import kgroup's packages from the same tree as the driver (editable installs, tests).
    root = str(Path(__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


class SparkUnavailable(RuntimeError):
    """PySpark or Java is missing or does not start; the message says which command installs it."""


INSTALL_HINT = ("run `make analyze-demo` or `make test` in the kgroup checkout (they create .venv and install "
                "it), or `.venv/bin/pip install -e '.[spark]'`")


def check_installed() -> None:
    """Raise :class:`SparkUnavailable` naming the install command when PySpark or Java is missing."""
    import importlib.util
    import shutil
    if importlib.util.find_spec("pyspark") is None:
        raise SparkUnavailable(f"kgroup analysis needs PySpark, which is not installed in {sys.prefix}: "
                               f"{INSTALL_HINT}")
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and Path(java_home, "bin", "java").exists()) and shutil.which("java") is None:
        raise SparkUnavailable("PySpark needs Java 17, and no `java` is on PATH (or in JAVA_HOME): "
                               "apt-get install openjdk-17-jre-headless")


def get_spark(master: str = DEFAULT_MASTER, shuffle_partitions: Optional[int] = None,
              extra: Optional[dict[str, Any]] = None, long_jobs: bool = False):
    """Return the active SparkSession or start one with kgroup's settings (``getOrCreate``)."""
    check_installed()
    from pyspark.sql import SparkSession
    prepare_environment(master)
    builder = SparkSession.builder
    for k, v in spark_conf(master, shuffle_partitions, extra, long_jobs).items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - e.g. the JVM exits at once (a wrong Java version)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise SparkUnavailable(f"Spark did not start ({type(exc).__name__}: {first[:200]}); it needs Java 17 "
                               f"(java -version) and PySpark: {INSTALL_HINT}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    return spark

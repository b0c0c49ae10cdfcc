"""Spark fixtures for tests/analysis: ONE SparkSession for the whole test session (JVM start is the dominant cost:
~7-15 s on 2 cores), local[2], one shuffle partition, UI off, C1-only JIT (analysis/session.py).

The analysis of the hand-made logs (tests/analysis/hand_logs.py) plus one real scenario run is computed once per
session (``analyzed``) and shared by the metric, export and report tests.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Java is not installed (PySpark needs Java 17)")
    from analysis.session import get_spark
    session = get_spark("local[2]", shuffle_partitions=1)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory):
    import hand_logs
    from scenarios.runner import run_scenario
    root = tmp_path_factory.mktemp("analysis-logs")
    paths = hand_logs.write_all(root)
    real = run_scenario(Path(__file__).parents[2] / "scenarios" / "library" / "sticky-consumer-leaves.toml", 1,
                        trace=False)
    real.write(root / "sticky")
    paths["sticky"] = root / "sticky"
    paths["_real"] = real
    return paths


@pytest.fixture(scope="session")
def analyzed(spark, logs_dir, tmp_path_factory):
    from analysis.analyze import run_analysis
    out = tmp_path_factory.mktemp("analysis-out")
    res = run_analysis([str(logs_dir["A"]), str(logs_dir["B"]), str(logs_dir["C"]), str(logs_dir["sticky"])], out,
                       spark=spark, export_events=True)
    res.out = out
    return res

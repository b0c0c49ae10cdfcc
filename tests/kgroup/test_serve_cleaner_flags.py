"""`kgroup serve`'s offsets-log settings (issue 14): the log cleaner's Kafka names and defaults
(``log.cleaner.delete.retention.ms`` one day, ``log.cleaner.min.cleanable.ratio`` 0.5,
``offsets.retention.check.interval.ms`` ten minutes) and kgroup's ``kgroup.offsets.compaction.min.records``; a
bad value exits 2 naming the flag. And the ``KGROUP_TRACEMALLOC`` debugging hook of a running server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kgroup.cli import main
from serve_flags import parse_serve as _parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_defaults_are_kafkas():
    c = _parse().config
    assert (c.log_cleaner_delete_retention_ms, c.log_cleaner_min_cleanable_ratio,
            c.offsets_retention_check_interval_ms) == (86_400_000, 0.5, 600_000)
    assert c.offsets_compaction_min_records == 10000


def test_flags_set_the_settings():
    c = _parse("--log-cleaner-delete-retention-ms", "1000", "--log-cleaner-min-cleanable-ratio", "0.25",
               "--offsets-retention-check-interval-ms", "5000", "--offsets-compaction-min-records", "50").config
    assert (c.log_cleaner_delete_retention_ms, c.log_cleaner_min_cleanable_ratio,
            c.offsets_retention_check_interval_ms, c.offsets_compaction_min_records) == (1000, 0.25, 5000, 50)


@pytest.mark.parametrize("argv, flag", [
    (["--log-cleaner-delete-retention-ms", "-1"], "--log-cleaner-delete-retention-ms"),
    (["--log-cleaner-min-cleanable-ratio", "1.5"], "--log-cleaner-min-cleanable-ratio"),
    (["--offsets-retention-check-interval-ms", "0"], "--offsets-retention-check-interval-ms"),
    (["--offsets-compaction-min-records", "0"], "--offsets-compaction-min-records"),
])
def test_invalid_values_exit_2_naming_the_flag(argv, flag, capsys):
    assert main(["serve", "--port", "0", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0], err


def test_sigusr1_dumps_the_allocations_that_grew_when_tracing_is_asked_for(tmp_path):
    out = tmp_path / "tm.txt"
    env = dict(os.environ, PYTHONPATH=ROOT, KGROUP_TRACEMALLOC=str(out))
    proc = subprocess.Popen([sys.executable, "-m", "kgroup", "serve", "--port", "0", "--brokers", "1",
                             "--log-level", "WARNING"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("kgroup serving bootstrap=")
        for _ in range(2):
            proc.send_signal(signal.SIGUSR1)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and out.exists() is False:
                time.sleep(0.05)
            time.sleep(0.5)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and out.read_text().count("--- ") < 2:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    text = out.read_text()
    assert text.count("--- ") == 2 and "traced" in text and " MB " in text
    assert proc.returncode == 0 and "Traceback" not in err

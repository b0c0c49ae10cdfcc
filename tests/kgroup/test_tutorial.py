"""docs/tutorial.md and docs/tutorial.zh.md: every command runs and prints what the tutorial shows (ids and
timings normalised, ``...`` for lines left out), and both tutorials run the same commands (the Chinese one adds
``--lang zh`` where kgroup narrates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kgroup.tutorial_blocks import ROOT, matches, normalise, parse, run, workdir_for

DOCS = {"en": ROOT / "docs" / "tutorial.md", "zh": ROOT / "docs" / "tutorial.zh.md"}


def _strip_lang(command: str) -> str:
    return command.replace(" --lang zh", "")


def test_both_tutorials_run_the_same_commands():
    en = [e.command for e in parse(DOCS["en"])]
    zh = [_strip_lang(e.command) for e in parse(DOCS["zh"])]
    assert len(en) >= 30
    assert en == zh
    assert any("--lang zh" in e.command for e in parse(DOCS["zh"]))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_example_prints_what_the_tutorial_shows(lang, tmp_path):
    workdir = workdir_for(tmp_path / lang)
    failures = []
    for ex in parse(DOCS[lang]):
        actual = normalise(run(ex, workdir), ex.command)
        expected = normalise(ex.expected, ex.command)
        if not matches(expected, actual):
            failures.append(f"{ex.doc}:{ex.line}: $ {ex.command}\n--- expected\n" + "\n".join(expected)
                            + "\n--- actual\n" + "\n".join(actual))
    assert not failures, "\n\n".join(failures[:3]) + (f"\n\n... and {len(failures) - 3} more"
                                                         if len(failures) > 3 else "")


def test_the_matcher_is_not_vacuous():
    assert matches(["a", "...", "c"], ["a", "b", "b", "c"])
    assert matches(["...", "c"], ["a", "c"]) and matches(["a", "..."], ["a", "b"])
    assert not matches(["a", "c"], ["a", "b", "c"])
    assert not matches(["a", "...", "c"], ["a", "b"])
    assert not matches(["x"], ["x", "y"])
    assert not matches(["...", "b", "...", "a"], ["a", "b"])
    assert normalise(["member c1-a7277b9a… at 127.0.0.1:45153", "done in 0.03 s wall"], "kgroup run x") == [
        "member c1-<id>… at 127.0.0.1:<port>", "done in <t> s wall"]
    # virtual times of scenario runs are part of the example; wall-clock times of the demo are not
    assert normalise(["  [   6.005s] x"], "kgroup run x") == ["  [   6.005s] x"]
    assert normalise(["  [ 6.005s] x took 12 ms"], "kgroup demo") == ["  [T] x took N ms"]
    assert normalise(["member c1/JKf70J-_… joined"], "kgroup demo") == ["member c1/<id>… joined"]

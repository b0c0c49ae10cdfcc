"""The narration catalogue (kgroup/catalogue.py): complete in every language, the same placeholders in every
language, no key used in kgroup/ missing from it, none in it unused, and a Chinese that is really Chinese."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from kgroup.catalogue import LANGS, MESSAGES, Catalogue, display_width, pad, pad_left, placeholders

KGROUP = Path(__file__).resolve().parents[2] / "kgroup"
# Templates that are layout only (arrows, names, Kafka's own words) and read the same in both languages.
LANGUAGE_NEUTRAL = {"demo.wire.error", "narr.why.other", "demo.cause.delay_extended", "diagram.resp",
                    "diagram.heartbeat_resp", "diagram.sync_resp", "narr.join_send", "narr.assignment",
                    "narr.vote_result", "demo.cb.revoked", "demo.cb.assigned", "demo.cb.lost",
                    "demo.wire.error_member"}
# keys chosen at run time from a table rather than spelled out where they are used
KEY_RE = re.compile(r'"((?:common|step|demo|narr|run|serve|diagram)\.[a-z0-9_.]+)"')


def used_keys() -> set[str]:
    keys: set[str] = set()
    for path in KGROUP.glob("*.py"):
        if path.name == "catalogue.py":
            continue
        keys |= set(KEY_RE.findall(path.read_text(encoding="utf-8")))
    return keys


@pytest.mark.parametrize("key", sorted(MESSAGES))
def test_every_language_with_the_same_placeholders(key):
    entry = MESSAGES[key]
    assert set(entry) == set(LANGS), f"{key}: languages {sorted(entry)} != {list(LANGS)}"
    for lang in LANGS:
        assert entry[lang].strip(), f"{key}: empty {lang} template"
        list(string.Formatter().parse(entry[lang]))  # well-formed braces
    assert placeholders(entry["en"]) == placeholders(entry["zh"]), key


def test_each_template_formats_with_its_own_placeholders():
    for key, entry in MESSAGES.items():
        for lang in LANGS:
            values = {name: 1 for name in placeholders(entry[lang])}
            Catalogue(lang)(key, **values)


def test_chinese_is_a_translation():
    cjk = re.compile(r"[\u4e00-\u9fff]")
    for key, entry in MESSAGES.items():
        if key in LANGUAGE_NEUTRAL:
            continue
        assert entry["zh"] != entry["en"], f"{key}: the Chinese template is the English one"
        assert cjk.search(entry["zh"]), f"{key}: no Chinese in {entry['zh']!r}"


def test_the_seed_articles_terms_are_used():
    zh = " ".join(e["zh"] for e in MESSAGES.values())
    for term in ("协调者", "消费者组", "再平衡", "分区分配策略", "心跳", "订阅", "分区", "副本", "leader 消费者",
                 "消费位移"):
        assert term in zh, term


def test_no_key_used_in_kgroup_is_missing_and_none_is_unused():
    used = used_keys()
    assert not used - set(MESSAGES), f"used but not in the catalogue: {sorted(used - set(MESSAGES))}"
    assert not set(MESSAGES) - used, f"in the catalogue but used nowhere: {sorted(set(MESSAGES) - used)}"


def test_a_missing_translation_would_fail(monkeypatch):
    """The completeness check is not vacuous: a key without Chinese is caught."""
    monkeypatch.setitem(MESSAGES, "narr.test_only", {"en": "x {a}"})
    with pytest.raises(AssertionError):
        test_every_language_with_the_same_placeholders("narr.test_only")
    monkeypatch.setitem(MESSAGES, "narr.test_only", {"en": "x {a}", "zh": "某 {b}"})
    with pytest.raises(AssertionError):
        test_every_language_with_the_same_placeholders("narr.test_only")


def test_unknown_language_and_column_widths():
    with pytest.raises(ValueError):
        Catalogue("fr")
    assert display_width("协调者") == 6 and display_width("abc") == 3
    assert pad("协调者", 8) == "协调者  " and pad_left("ab", 4) == "  ab"

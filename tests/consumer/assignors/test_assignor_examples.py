"""The weighted example assignor from docs/assignors.md, loaded by dotted path."""

from consumer.assignors import Subscription, get_assignor
from consumer.assignors.examples import WeightedAssignor, decode_weight, encode_weight


def test_weighted_assignor_loaded_by_dotted_path_splits_by_weight():
    leader = get_assignor("consumer.assignors.examples:WeightedAssignor")
    assert isinstance(leader, WeightedAssignor)
    subs = {m: Subscription(["t0", "t1"], WeightedAssignor(w).subscription_user_data({"t0", "t1"}))
            for m, w in (("heavy", 2), ("light", 1))}
    result = leader.assign({"t0": 6, "t1": 6}, subs)
    assert len(result["heavy"].partitions) == 8
    assert len(result["light"].partitions) == 4
    allp = [p for a in result.values() for p in a.partitions]
    assert len(allp) == len(set(allp)) == 12


def test_weight_codec_defaults_to_one():
    assert decode_weight(encode_weight(3)) == 3
    assert decode_weight(None) == 1
    assert decode_weight(b"\x00") == 1
    assert decode_weight(encode_weight(-5)) == 1

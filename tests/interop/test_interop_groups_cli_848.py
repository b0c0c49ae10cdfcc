"""`kgroup groups` on KIP-848 consumer groups: confluent-kafka consumers with ``group.protocol=consumer`` on
`kgroup serve`, described with ConsumerGroupDescribe (69) in the columns of Kafka 4.4's ``ConsumerGroupCommand``:
``--list --type/--state``, ``--describe`` (offsets and lag), ``--members --verbose`` (CURRENT-EPOCH,
CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT, and UPGRADED in a group whose members use both protocols) and
``--state --verbose`` (GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH).

Oracles: confluent-kafka's own AdminClient (``describe_consumer_groups``: member ids, hosts, client ids, assignments,
target assignments, assignor, state, coordinator), the records the test produced and the consumers consumed, and the
coordinator's own state of the group (``KGroupCluster.consumer_group``: the epochs, which confluent-kafka 2.16 does
not expose, and which member uses the classic protocol). Every wait is bounded."""

from __future__ import annotations

import pytest

from harness import consumer, consumer848, produce, wait_all, wait_cover
from kgroup.cli import main

pytestmark = pytest.mark.interop
confluent_kafka = pytest.importorskip("confluent_kafka")

PER_PARTITION = 5


@pytest.fixture
def kgroup_cluster_options():
    return {"auto_create_topics": False,
            "config": {"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": 3000,
                       "group.consumer.min.heartbeat.interval.ms": 100, "group.consumer.heartbeat.interval.ms": 300}}


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["groups", *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def table(out: str, header: str) -> tuple[list[str], list[list[str]]]:
    """(header cells, rows) of the table whose header line starts with ``header``."""
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[i + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return lines[i].split(), rows


def describe(bootstrap: str, group: str):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    return admin.describe_consumer_groups([group])[group].result(15)


def parts(assignment) -> list[int]:
    return sorted(tp.partition for tp in assignment.topic_partitions)


def committed(agents) -> dict[int, int]:
    """The highest offset the consumers committed per partition (their synchronous commits)."""
    out: dict[int, int] = {}
    for a in agents:
        for e in list(a.events):
            if e["ev"] == "committed":
                out[e["partition"]] = max(out.get(e["partition"], 0), e["offset"])
    return out


def reconciled(cluster, group: str, n: int) -> bool:
    g = cluster.consumer_group(group)
    return (g is not None and g["state"] == "Stable" and len(g["members"]) == n
            and all(m["member_epoch"] == g["assignment_epoch"] and m["state"] == "STABLE"
                    for m in g["members"].values()))


def test_members_state_offsets_and_list_of_a_consumer_group(kgroup_cluster, agents, capsys):
    cluster = kgroup_cluster
    bootstrap = cluster.bootstrap
    cluster.create_topic("orders", 4)
    produced = produce("confluent-kafka", bootstrap, "orders", [f"k{i}" for i in range(4 * PER_PARTITION)])
    ends = {p: sum(1 for r in produced if r["partition"] == p) for p in range(4)}
    agents += [consumer848(bootstrap, "orders", "g848", name=f"c{i}", remote_assignor="range") for i in range(2)]
    wait_cover(agents, 4)
    wait_all(agents, lambda: committed(agents) == {p: n for p, n in ends.items() if n}, 45, "every record consumed and committed")
    wait_all(agents, lambda: reconciled(cluster, "g848", 2), 30, "a reconciled Stable group", hold=1.0)

    d = describe(bootstrap, "g848")
    g = cluster.consumer_group("g848")
    members = {m.member_id: m for m in d.members}
    assert set(members) == set(g["members"])

    # --members --verbose: Kafka 4.4's columns; the epochs are the coordinator's
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--members", "--verbose")
    assert rc == 0 and err == ""
    head, rows = table(out, "GROUP")
    assert head == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                    "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert len(rows) == 2
    for r in rows:
        m = members[r[1]]
        want_parts = "orders:" + ",".join(str(p) for p in parts(m.assignment))
        want_target = "orders:" + ",".join(str(p) for p in parts(m.target_assignment))
        assert r == ["g848", m.member_id, m.host, m.client_id, str(len(parts(m.assignment))),
                     str(g["members"][m.member_id]["member_epoch"]), want_parts, str(g["assignment_epoch"]),
                     want_target]
    # without --verbose: the first five columns only
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--members")
    head, rows = table(out, "GROUP")
    assert head == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] and all(len(r) == 5 for r in rows)

    # --state --verbose: the coordinator from the AdminClient, the assignor the consumers asked for
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--state", "--verbose")
    assert rc == 0
    head, rows = table(out, "GROUP")
    assert head == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                    "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
    c = d.coordinator
    assert rows == [["g848", f"{c.host}:{c.port}", f"({c.id})", d.partition_assignor, "Stable",
                     str(g["group_epoch"]), str(g["assignment_epoch"]), "2"]]
    assert d.partition_assignor == "range"
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--state")
    assert table(out, "GROUP")[1] == [["g848", f"{c.host}:{c.port}", f"({c.id})", "range", "Stable", "2"]]

    # --describe (offsets): every partition committed to its end by the member that owns it, lag 0
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848")
    head, rows = table(out, "GROUP")
    owner = {p: m for m in d.members for p in parts(m.assignment)}
    assert sorted(rows, key=lambda r: int(r[2])) == [
        ["g848", "orders", str(p), str(ends[p]) if ends[p] else "-", str(ends[p]), "0" if ends[p] else "-",
         owner[p].member_id, owner[p].host, owner[p].client_id] for p in range(4)]

    # --list with --type and --state (ListGroups v5)
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--list", "--type", "--state")
    assert table(out, "GROUP") == (["GROUP", "TYPE", "STATE"], [["g848", "Consumer", "Stable"]])
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--list", "--type", "classic")
    assert table(out, "GROUP") == (["GROUP", "TYPE"], [])
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--list", "--type", "share")
    assert rc == 2 and "Invalid types list 'share'" in err

    # the consumers leave: Empty (message on stderr), rows without a consumer, the new records are the lag
    for a in agents:
        a.close()
    wait_all([], lambda: cluster.consumer_group("g848")["state"] == "Empty", 20, "an Empty group")
    more = produce("confluent-kafka", bootstrap, "orders", [f"m{i}" for i in range(8)])
    later = {p: ends[p] + sum(1 for r in more if r["partition"] == p) for p in range(4)}
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848")
    assert "Consumer group 'g848' has no active members." in err
    assert sorted(table(out, "GROUP")[1], key=lambda r: int(r[2])) == [
        ["g848", "orders", str(p), str(ends[p]), str(later[p]), str(later[p] - ends[p]), "-", "-", "-"]
        for p in range(4) if ends[p]]  # an Empty group's rows: its committed partitions
    # --members of an Empty group: the message, then Kafka 4.4 still prints the header
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--members", "--verbose")
    assert "Consumer group 'g848' has no active members." in err
    assert table(out, "GROUP") == (["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                                    "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"], [])
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "g848", "--state", "--verbose")
    g = cluster.consumer_group("g848")
    d = describe(bootstrap, "g848")  # no member prefers an assignor any more: the broker's default (uniform)
    assert table(out, "GROUP")[1][0][3:] == [d.partition_assignor, "Empty", str(g["group_epoch"]),
                                             str(g["assignment_epoch"]), "0"]
    assert d.partition_assignor == "uniform"


def test_upgraded_column_in_a_group_with_both_protocols(kgroup_cluster, agents, capsys):
    """A consumer group with a consumer-protocol member and a classic (kafka-python) member: ``--members --verbose``
    adds UPGRADED (``MemberDescription.upgraded``: ConsumerGroupDescribe v1's member type)."""
    pytest.importorskip("kafka")
    cluster = kgroup_cluster
    bootstrap = cluster.bootstrap
    cluster.create_topic("mixed", 4)
    new = consumer848(bootstrap, "mixed", "mixed-group", name="new")
    agents.append(new)
    wait_cover([new], 4)
    old = consumer("kafka-python", bootstrap, "mixed", "mixed-group", name="old")
    agents.append(old)
    wait_cover([new, old], 4, timeout=60)
    wait_all(agents, lambda: reconciled(cluster, "mixed-group", 2), 30, "a reconciled Stable group", hold=1.0)
    g = cluster.consumer_group("mixed-group")
    d = describe(bootstrap, "mixed-group")
    members = {m.member_id: m for m in d.members}

    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "mixed-group", "--members",
                     "--verbose")
    head, rows = table(out, "GROUP")
    assert head[-5:] == ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED"]
    got = {r[1]: r for r in rows}
    assert set(got) == set(g["members"]) == set(members)
    for mid, r in got.items():
        m = members[mid]
        assert r[3] == m.client_id and r[4] == str(len(parts(m.assignment)))
        assert r[5] == str(g["members"][mid]["member_epoch"]) and r[7] == str(g["assignment_epoch"])
        assert r[8] == "mixed:" + ",".join(str(p) for p in parts(m.target_assignment))
        assert r[9] == ("false" if g["members"][mid]["classic"] else "true")
    assert sorted(r[3] for r in rows if r[9] == "false") == ["old"]
    # the classic member is in a consumer group: --members without --verbose has no UPGRADED
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "mixed-group", "--members")
    assert table(out, "GROUP")[0][-1] == "#PARTITIONS"

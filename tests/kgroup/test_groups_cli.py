"""`kgroup groups` (kafka-consumer-groups.sh) against `kgroup serve` with real kafka-python consumers.

Expected values come from what the test did (records produced per partition, offsets committed) and from
kafka-python's own KafkaAdminClient and KafkaConsumer as an independent client (member ids, hosts, client ids,
committed offsets, log end offsets, group listing, offset resets); the column layout and messages are Kafka's
(``ConsumerGroupCommand``)."""

from __future__ import annotations

import json
import queue
import threading
import time

import pytest

from kgroup.cli import main

pytestmark = pytest.mark.interop
kafka = pytest.importorskip("kafka")

PRODUCED = {0: 10, 1: 7, 2: 5, 3: 0}        # records per partition of "orders"
COMMITTED = {0: 4, 1: 7, 2: 2}              # what the group commits ("consumed part"); partition 3: nothing


@pytest.fixture
def kgroup_cluster_options():
    return {"auto_create_topics": False, "topics": {"orders": 4, "other": 1}}


def produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for part, n in PRODUCED.items():
        for i in range(n):
            p.send("orders", key=f"k{i}".encode(), value=b"v", partition=part)
    p.send("other", value=b"x", partition=0)
    p.flush(10)
    p.close()


class Member(threading.Thread):
    """A kafka-python consumer polling in its own thread (it is not thread-safe: other calls run in that thread)."""

    def __init__(self, bootstrap: str, group: str, name: str, **kw) -> None:
        super().__init__(daemon=True, name=name)
        from kafka import KafkaConsumer
        self.consumer = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                      enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
                                      heartbeat_interval_ms=500, max_poll_records=1, **kw)
        self.calls: queue.Queue = queue.Queue()
        self.assignment: set = set()
        self.stopping = False
        self.start()

    def run(self) -> None:
        while not self.stopping:
            self.consumer.poll(500)
            self.assignment = set(self.consumer.assignment())
            while not self.calls.empty():
                fn, done = self.calls.get()
                try:
                    done.put((True, fn(self.consumer)))
                except Exception as e:  # noqa: BLE001 - handed to the caller
                    done.put((False, e))
        self.consumer.close()

    def call(self, fn):
        done: queue.Queue = queue.Queue()
        self.calls.put((fn, done))
        ok, value = done.get(timeout=30)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        self.stopping = True
        self.join(30)


def join(bootstrap: str, group: str, names: list[str], **kw) -> list[Member]:
    """kafka-python consumers subscribed to "orders", until every partition is assigned (bounded)."""
    ms = [Member(bootstrap, group, n, **kw) for n in names]
    deadline = time.monotonic() + 30
    while sum(len(m.assignment) for m in ms) != 4 or not all(m.assignment for m in ms):
        assert time.monotonic() < deadline, [m.assignment for m in ms]
        time.sleep(0.1)
    return ms


def commit(members, offsets: dict[int, int]) -> None:
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata
    for m in members:
        mine = {TopicPartition("orders", p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()
                if TopicPartition("orders", p) in m.assignment}
        if mine:
            m.call(lambda c, mine=mine: c.commit(mine))


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["groups", *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def table(out: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header`` (split on blanks)."""
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[i + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def oracle(bootstrap: str, group: str):
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="oracle", request_timeout_ms=10000)
    try:
        described = a.describe_groups([group])[group]
        offsets = a.list_group_offsets(group)[group]
        listed = a.list_groups()
    finally:
        a.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = c.end_offsets([TopicPartition("orders", p) for p in range(4)])
    finally:
        c.close()
    return described, offsets, listed, {tp.partition: o for tp, o in ends.items()}


def test_describe_every_column_and_lag(kgroup_cluster, capsys):
    bootstrap = kgroup_cluster.bootstrap
    produce(bootstrap)
    consumers = join(bootstrap, "billing", ["c-1", "c-2"])
    try:
        commit(consumers, COMMITTED)
        described, offsets, listed, ends = oracle(bootstrap, "billing")
        assert ends == PRODUCED                                     # the independent client agrees on the log ends
        assert {tp.partition: om.offset for tp, om in offsets.items()} == COMMITTED

        rc, out, err = cli(capsys, "--bootstrap-server", bootstrap, "--describe", "--group", "billing")
        assert rc == 0 and err == ""
        assert out.startswith("\nGROUP ")                         # Kafka prints a blank line first
        header = out.splitlines()[1].split()
        assert header == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                          "HOST", "CLIENT-ID"]
        rows = table(out, "GROUP ")
        owner = {p: (m["member_id"], m["client_host"], m["client_id"]) for m in described["members"]
                 for t in m["member_assignment"]["assigned_partitions"] for p in t["partitions"]}
        want = []
        for p in range(4):
            cur = COMMITTED.get(p)
            lag = "-" if cur is None else str(PRODUCED[p] - cur)
            want.append(["billing", "orders", str(p), "-" if cur is None else str(cur), str(PRODUCED[p]), lag,
                         *owner[p]])
        # members with most partitions first (2 each here: the describe order), each member's partitions in order
        assert sorted(rows) == sorted(want)
        for m in described["members"]:
            mine = [r for r in rows if r[6] == m["member_id"]]
            assert [int(r[2]) for r in mine] == sorted(int(r[2]) for r in mine)
        # LAG column: 6, 0, 3 and "-" where nothing is committed
        assert {int(r[2]): r[5] for r in rows} == {0: "6", 1: "0", 2: "3", 3: "-"}

        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing", "--json")
        (doc,) = json.loads(out)
        assert doc["state"] == described["group_state"] == "Stable"
        assert {r["partition"]: (r["current_offset"], r["log_end_offset"], r["lag"]) for r in doc["offsets"]} == {
            0: (4, 10, 6), 1: (7, 7, 0), 2: (2, 5, 3), 3: (None, 0, None)}

        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing", "--verbose")
        assert out.splitlines()[1].split()[3] == "LEADER-EPOCH"

        # --members: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS (no GROUP-INSTANCE-ID: nobody is static)
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing", "--members")
        assert out.splitlines()[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        got = sorted(table(out, "GROUP "))
        assert got == sorted(["billing", m["member_id"], m["client_host"], m["client_id"],
                              str(sum(len(t["partitions"]) for t in m["member_assignment"]["assigned_partitions"]))]
                             for m in described["members"])
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing", "--members", "--verbose")
        head = out.splitlines()[1].split()
        assert head[-4:] == ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        for r in table(out, "GROUP "):
            m = next(m for m in described["members"] if m["member_id"] == r[1])
            parts = sorted(p for t in m["member_assignment"]["assigned_partitions"] for p in t["partitions"])
            # a classic group: no epochs, no target assignment (KIP-848 columns present with "-")
            assert r[-4:] == ["-", "orders:" + ",".join(map(str, parts)), "-", "-"]

        # --state: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
        coordinator = kgroup_cluster.control.coordinator_of("billing")
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing", "--state")
        lines = out.splitlines()
        assert lines[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        host, port = kgroup_cluster.server.address(coordinator)
        assert lines[2].split() == ["billing", f"{host}:{port}", f"({coordinator})", described["protocol_data"],
                                    "Stable", "2"]

        # --list, --list --state, the states filter
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--list")
        assert out.split() == sorted(g["group_id"] for g in listed if g["protocol_type"] in ("consumer", "")) \
            == ["billing"]
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--list", "--state")
        assert [line.split() for line in out.splitlines()] == [["GROUP", "STATE"], ["billing", "Stable"]]
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--list", "--state", "empty,dead")
        assert out.splitlines() == ["GROUP                     STATE"]
        rc, _, err = cli(capsys, "--bootstrap", bootstrap, "--list", "--state", "bogus")
        assert rc == 2 and "Invalid state list 'bogus'. Valid states are: " in err

        # a reset is refused while the group is active (Kafka's message), and nothing changes
        rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "billing", "--all-topics",
                           "--to-earliest", "--execute")
        assert rc == 1
        assert "Error: Assignments can only be reset if the group 'billing' is inactive, but the current state is " \
               "Stable." in out
    finally:
        for c in consumers:
            c.close()
    # after the members left: Empty, rows without consumer, the message on stderr
    rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "billing")
    assert "Consumer group 'billing' has no active members." in err
    assert {int(r[2]): (r[3], r[5], r[6], r[7], r[8]) for r in table(out, "GROUP ")} == {
        0: ("4", "6", "-", "-", "-"), 1: ("7", "0", "-", "-", "-"), 2: ("2", "3", "-", "-", "-")}


def test_reset_offsets_against_kafka_python_reset(kgroup_cluster, capsys):
    """Each scenario on group A through `kgroup groups`, the same through kafka-python's
    KafkaAdminClient.reset_group_offsets on group B (the oracle): the same committed offsets."""
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import OffsetSpec

    bootstrap = kgroup_cluster.bootstrap
    produce(bootstrap)
    for g in ("reset-a", "reset-b"):
        cs = join(bootstrap, g, [f"{g}-c"])
        commit(cs, COMMITTED)
        for c in cs:
            c.close()
    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)

    def committed(g):
        return {tp.partition: om.offset for tp, om in a.list_group_offsets(g)[g].items()}

    try:
        tps = [TopicPartition("orders", p) for p in range(3)]
        scenarios = [(["--to-earliest"], {tp: OffsetSpec.EARLIEST for tp in tps}),
                     (["--to-latest"], {tp: OffsetSpec.LATEST for tp in tps}),
                     (["--to-offset", "6"], {tp: 6 for tp in tps})]
        for flags, spec in scenarios:
            # the dry run (the default) prints the plan and changes nothing
            before = committed("reset-a")
            rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--topic",
                               "orders:0,1,2", *flags)
            assert rc == 0 and "WARN: No action will be performed as the --execute option is missing." in err
            assert committed("reset-a") == before
            planned = {int(r[2]): int(r[3]) for r in table(out, "GROUP ")}
            rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--topic",
                             "orders:0,1,2", *flags, "--execute")
            assert rc == 0
            a.reset_group_offsets("reset-b", spec)
            assert committed("reset-a") == committed("reset-b") == planned, flags
        # --shift-by: from the committed offsets (6, 6, 5 after --to-offset 6), clamped to the log
        rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--all-topics",
                           "--shift-by", "-3", "--execute")
        assert rc == 0 and committed("reset-a") == {0: 3, 1: 3, 2: 2}
        rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--topic",
                           "orders:0", "--shift-by", "100", "--execute")
        assert "New offset (103) is higher than latest offset for topic partition orders-0. Value will be set to 10." \
            in err
        assert committed("reset-a")[0] == 10
        # offset 0 is an offset like any other (not "no scenario")
        rc, out, err = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--all-topics",
                           "--to-offset", "0", "--execute")
        assert rc == 0 and committed("reset-a") == {0: 0, 1: 0, 2: 0}
    finally:
        a.close()
    # an unknown partition: Kafka's message
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--reset-offsets", "--group", "reset-a", "--topic",
                     "orders:9", "--to-earliest", "--dry-run")
    assert rc == 1 and 'The partitions "orders-9" do not exist' in out


def test_delete_offsets_and_delete_groups(kgroup_cluster, capsys):
    from kafka import KafkaAdminClient
    bootstrap = kgroup_cluster.bootstrap
    produce(bootstrap)
    cs = join(bootstrap, "doomed", ["d-1"])
    commit(cs, COMMITTED)
    try:
        # an active group subscribed to the topic: GROUP_SUBSCRIBED_TO_TOPIC per partition
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--delete-offsets", "--group", "doomed", "--topic",
                         "orders:0")
        assert rc == 1 and "Error: Encountered some partition-level error, see the follow-up details." in out
        assert table(out, "TOPIC ")[0][:3] == ["orders", "0", "Error:"]
        # a group with members cannot be deleted
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--delete", "--group", "doomed")
        assert rc == 1 and "* Group 'doomed' could not be deleted due to: NON_EMPTY_GROUP" in out
    finally:
        for c in cs:
            c.close()
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--delete-offsets", "--group", "doomed", "--topic", "orders:0,1")
    assert rc == 0 and out.startswith("Request succeeded for deleting offsets from group doomed.")
    assert table(out, "TOPIC ") == [["orders", "0", "Successful"], ["orders", "1", "Successful"]]
    a = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        assert {tp.partition for tp in a.list_group_offsets("doomed")["doomed"]} == {2}
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--delete", "--group", "doomed")
        assert rc == 0 and out.strip() == "Deletion of requested consumer groups ('doomed') was successful."
        assert "doomed" not in [g["group_id"] for g in a.list_groups()]
    finally:
        a.close()
    rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--group", "doomed")
    assert rc == 1 and out.strip() == "Error: Consumer group 'doomed' does not exist."


def test_all_groups_and_static_members(kgroup_cluster, capsys):
    bootstrap = kgroup_cluster.bootstrap
    produce(bootstrap)
    statics = join(bootstrap, "static-g", ["s-1"], group_instance_id="instance-1")
    dynamics = join(bootstrap, "dyn-g", ["d-1"])
    try:
        rc, out, _ = cli(capsys, "--bootstrap", bootstrap, "--describe", "--all-groups", "--members")
        blocks = [b.strip() for b in out.split("\n\n") if b.strip()]
        assert [b.splitlines()[1].split()[0] for b in blocks] == ["dyn-g", "static-g"]     # sorted by group
        static_head = next(b for b in blocks if "static-g" in b).splitlines()[0].split()
        assert "GROUP-INSTANCE-ID" in static_head                       # a member has an instance id
        assert next(b for b in blocks if "static-g" in b).splitlines()[1].split()[2] == "instance-1"
        assert "GROUP-INSTANCE-ID" not in next(b for b in blocks if "dyn-g" in b)
    finally:
        for c in statics + dynamics:
            c.close()


def test_usage_errors(capsys):
    """``ConsumerGroupCommandOptions.checkArgs``' messages; exit 2 before anything is sent."""
    cases = [
        ([], "Command must include exactly one action"),
        (["--list", "--describe"], "Command must include exactly one action"),
        (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
        (["--describe", "--group", "g", "--members", "--state"], "takes at most one of these options"),
        (["--describe", "--group", "g", "--state", "stable"], "Option [describe] does not take a value for [state]"),
        (["--delete", "--group", "g", "--topic", "t"], "The consumer does not support topic-specific offset deletion"),
        (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options: [group], [topic]"),
        (["--reset-offsets", "--group", "g", "--all-topics"], "requires one of the following scenarios"),
        (["--reset-offsets", "--group", "g", "--to-earliest"], "One of the reset scopes should be defined"),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"],
         'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "0", "--shift-by", "0"],
         'Option "[to-offset]" can\'t be used with option "[shift-by]"'),
        (["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--dry-run", "--execute"],
         "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
        (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
        (["--describe", "--group", "g", "--all-groups"], 'Option "[group]" can\'t be used with option "[all-groups]"'),
        (["--list", "--bootstrap-server", "nohostport"], "expected HOST:PORT"),
    ]
    for argv, msg in cases:
        rc, out, err = cli(capsys, *argv)
        assert rc == 2 and msg in err and out == "", (argv, err)


def test_unreachable_cluster(capsys):
    rc, out, err = cli(capsys, "--bootstrap", "127.0.0.1:1", "--list", "--timeout", "2000")
    assert rc == 1 and "cannot reach 127.0.0.1:1" in err and "Traceback" not in err


def test_kip848_member_rows_as_kafka_prints_them():
    """``printMembers`` / ``printStates`` (Kafka 4.4) for a consumer group described by ConsumerGroupDescribe, rows
    written out by hand from Kafka's formats: a Reconciling group (the warning on stderr), a static member (the
    GROUP-INSTANCE-ID column), a member with nothing assigned yet (``-``), a classic member of the consumer group
    (UPGRADED false) next to consumer-protocol ones (UPGRADED true). Real groups: tests/interop/
    test_interop_groups_cli_848.py."""
    from client.admin import GroupDescription, MemberDescription, Node
    from kgroup import groupviews as V

    d = GroupDescription("kip848", "Reconciling", "consumer", "uniform", [
        MemberDescription("m-a", None, "app-a", "/10.0.0.1", [("orders", 1), ("orders", 0)],
                          target_assignment=[("orders", 0)], member_epoch=6, upgraded=True),
        MemberDescription("m-b", "inst-b", "app-b", "/10.0.0.2", [], target_assignment=[("orders", 1)],
                          member_epoch=7, upgraded=False)],
        Node(1, "localhost", 9093), group_type="consumer", group_epoch=7, assignment_epoch=7)
    out = V.Output()
    V.render_members(out, "kip848", d.state, V.member_rows(d), True)
    assert out.text("err") == "\nWarning: Consumer group 'kip848' is rebalancing."
    assert out.text().split("\n") == [
        "",
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     "
        "CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT    UPGRADED",
        "kip848          m-a                               /10.0.0.1       app-a           2               "
        "6               orders:0,1           7               orders:0             true",
        "kip848          m-b             inst-b            /10.0.0.2       app-b           0               "
        "7               -                    7               orders:1             false"]
    out = V.Output()
    V.render_state(out, [V.state_row(d)], True)
    assert out.text().split("\n") == [
        "",
        "GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     "
        "TARGET-ASSIGNMENT-EPOCH   #MEMBERS",
        "kip848          localhost:9093  (1)       uniform              Reconciling          7               "
        "7                         2"]
    # an Empty group: the message, and Kafka 4.4's printMembers still prints the header
    out = V.Output()
    V.render_members(out, "gone", "Empty", [], False)
    assert out.text("err") == "\nConsumer group 'gone' has no active members."
    assert out.text() == "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS"

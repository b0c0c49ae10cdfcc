"""The cluster model: brokers, topics, replica placement, partition leadership (sans-IO, deterministic).

* Brokers have ids ``0..N-1`` (more can be added); each is alive or stopped.
* Replica placement (``kgroup.replica.placement``):

  - ``"round-robin"`` (default; seed 001's description): partition *i*'s first replica (its preferred leader) is
    on broker ``i mod n`` and its *j*-th replica on broker ``(i + j) mod n``, over the brokers sorted by id.
    Adding partitions places only the new ones, with the current broker list; existing replicas never move.
  - ``"kafka"``: Kafka's rack-unaware placement (``AdminUtils.assignReplicasToBrokersRackUnaware``): a random start
    index and a random replica shift (from the cluster's seeded RNG), the shift incremented every ``n`` partitions;
    adding partitions starts at the broker of partition 0's first replica with that index as fixed shift
    (``AdminZkClient.addPartitions``).

* Leadership (Kafka's controller, ``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection``): the leader
  is the first replica, in assignment order, that is alive and in the ISR. Stopping a broker removes it from every
  ISR it is in (except when it is the last ISR member, which Kafka keeps) and moves each of its leaderships to the
  next live in-sync replica, or leaves the partition leaderless (-1). Starting a broker makes it a follower again
  (it rejoins the ISR at once: the logs are shared, there is nothing to catch up); a leaderless partition whose ISR
  holds it elects it. Preferred-leader election is explicit (:meth:`Cluster.elect_preferred_leaders`); Kafka's
  periodic ``auto.leader.rebalance.enable`` check is not modelled. Every leader change bumps the leader epoch.
* Topic ids: every topic has a stable id, :func:`topic_id` (Kafka draws a random ``Uuid`` at creation; kgroup
  derives it from the name so it survives a restart): Metadata v10+ reports it and KIP-848's coordinator keys
  assignments by it. :attr:`Cluster.metadata_version` counts the topic changes (created topics, added partitions):
  the KIP-848 coordinator compares it to see whether its metadata image is stale (Kafka's ``MetadataImage``
  version / ``onMetadataUpdate``).
* ``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
  replicas) is created when first needed, and only if enough brokers are alive (Kafka's auto-creation fails
  otherwise and FindCoordinator answers COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

import base64
import functools
import random
import uuid
from dataclasses import dataclass, field

from protocol.hashing import coordinator_partition

from coordinator.config import CoordinatorConfig

OFFSETS_TOPIC = "__consumer_offsets"
NO_LEADER = -1

#: The namespace of kgroup's stable ids (the cluster id and the topic ids).
CLUSTER_UUID = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/kgroup/cluster")


#: ``Uuid.RESERVED``: ``Uuid.ZERO_UUID`` and ``Uuid.METADATA_TOPIC_ID``, never handed out as ids.
_RESERVED_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})


def kafka_style_id(seed: str) -> uuid.UUID:
    """A stable id drawn from ``seed`` the way ``Uuid.randomUuid`` draws a random one in Kafka 4.4: never a
    reserved id, and never one whose string form (URL-safe base64) holds a hyphen (KAFKA-20072: such ids read as
    command-line options); kgroup re-derives with a counter until it fits."""
    candidate, n = uuid.uuid5(CLUSTER_UUID, seed), 0
    while candidate in _RESERVED_IDS or b"-" in base64.urlsafe_b64encode(candidate.bytes):
        n += 1
        candidate = uuid.uuid5(CLUSTER_UUID, f"{seed}\x00{n}")
    return candidate


@functools.lru_cache(maxsize=1 << 16)
def topic_id(name: str) -> uuid.UUID:
    """A topic's stable id (Kafka draws a random one at creation; kgroup's is derived from the name so it
    survives a restart), with Kafka 4.4's rules for ids (:func:`kafka_style_id`)."""
    return kafka_style_id(name)


class ClusterError(ValueError):
    pass


@dataclass
class Broker:
    broker_id: int
    alive: bool = True
    host: str = "localhost"
    port: int = 0
    rack: str | None = None


@dataclass
class PartitionState:
    topic: str
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0


@dataclass(frozen=True)
class LeadershipChange:
    topic: str
    partition: int
    old_leader: int
    new_leader: int
    leader_epoch: int


@dataclass
class Cluster:
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    seed: int = 0

    def __post_init__(self) -> None:
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, list[PartitionState]] = {}
        self.rng = random.Random(self.seed)
        #: Bumped by every topic change (a topic created, partitions added): the metadata image's version.
        self.metadata_version = 0

    @classmethod
    def with_brokers(cls, n: int, config: CoordinatorConfig | None = None, seed: int = 0,
                     base_port: int = 9092) -> "Cluster":
        c = cls(config or CoordinatorConfig(), seed)
        c.add_brokers(n, base_port=base_port)
        return c

    # --- brokers ---------------------------------------------------------------------------------------------

    def add_brokers(self, n: int, base_port: int = 9092) -> list[int]:
        start = max(self.brokers, default=-1) + 1
        ids = list(range(start, start + n))
        for b in ids:
            self.brokers[b] = Broker(b, port=base_port + b)
        return ids

    def broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def live_brokers(self) -> list[int]:
        return [b for b in sorted(self.brokers) if self.brokers[b].alive]

    def is_alive(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and b.alive

    # --- topics and placement --------------------------------------------------------------------------------

    def place(self, num_partitions: int, replication_factor: int, start_partition: int = 0,
              existing_first_replica: int | None = None) -> list[list[int]]:
        """Replica lists for partitions ``start_partition .. start_partition + num_partitions - 1``."""
        brokers = self.broker_ids()
        n = len(brokers)
        if replication_factor < 1:
            raise ClusterError(f"replication factor must be >= 1, got {replication_factor}")
        if replication_factor > n:
            raise ClusterError(f"replication factor {replication_factor} larger than the {n} available brokers")
        if self.config.replica_placement == "round-robin":
            return [[brokers[(i + j) % n] for j in range(replication_factor)]
                    for i in range(start_partition, start_partition + num_partitions)]
        # Kafka's rack-unaware placement
        if existing_first_replica is not None:
            fixed = next((k for k, b in enumerate(brokers) if b >= existing_first_replica), 0)
            start_index, shift = fixed, fixed
        else:
            start_index, shift = self.rng.randrange(n), self.rng.randrange(n)
        out = []
        pid = max(0, start_partition)
        for _ in range(num_partitions):
            if pid > 0 and pid % n == 0:
                shift += 1
            first = (pid + start_index) % n
            reps = [brokers[first]]
            for j in range(replication_factor - 1):
                step = 1 + (shift + j) % (n - 1)
                reps.append(brokers[(first + step) % n])
            out.append(reps)
            pid += 1
        return out

    def create_topic(self, name: str, num_partitions: int, replication_factor: int = 1,
                     assignment: list[list[int]] | None = None) -> list[list[int]]:
        if name in self.topics:
            raise ClusterError(f"topic {name!r} already exists")
        if num_partitions < 1:
            raise ClusterError(f"topic {name!r}: number of partitions must be >= 1, got {num_partitions}")
        if assignment is None:
            assignment = self.place(num_partitions, replication_factor)
        parts = []
        for p, reps in enumerate(assignment):
            unknown = [b for b in reps if b not in self.brokers]
            if unknown:
                raise ClusterError(f"topic {name!r} partition {p}: unknown brokers {unknown}")
            isr = [b for b in reps if self.is_alive(b)] or [reps[0]]
            ps = PartitionState(name, p, list(reps), isr, NO_LEADER)
            ps.leader = self._elect(ps)
            parts.append(ps)
        self.topics[name] = parts
        self.metadata_version += 1
        return [list(ps.replicas) for ps in parts]

    def add_partitions(self, name: str, new_total: int) -> list[list[int]]:
        parts = self.topics[name]
        if new_total <= len(parts):
            raise ClusterError(f"topic {name!r} has {len(parts)} partitions; can only grow, asked for {new_total}")
        rf = len(parts[0].replicas)
        new = self.place(new_total - len(parts), rf, start_partition=len(parts),
                         existing_first_replica=parts[0].replicas[0])
        for reps in new:
            ps = PartitionState(name, len(parts), reps, [b for b in reps if self.is_alive(b)] or [reps[0]],
                                NO_LEADER)
            ps.leader = self._elect(ps)
            parts.append(ps)
        self.metadata_version += 1
        return [list(ps.replicas) for ps in parts]

    def partitions(self, topic: str) -> list[PartitionState]:
        return self.topics.get(topic, [])

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        parts = self.topics.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return None
        return parts[partition]

    def has_partition(self, topic: str, partition: int) -> bool:
        return self.partition(topic, partition) is not None

    def assignment(self, topic: str) -> list[list[int]]:
        return [list(p.replicas) for p in self.partitions(topic)]

    def placement_table(self, topic: str) -> dict[int, list[int]]:
        """broker -> partitions it holds, leaders' partitions first then followers' (the seed 001 table)."""
        table: dict[int, list[int]] = {b: [] for b in self.broker_ids()}
        parts = self.partitions(topic)
        rf = max((len(p.replicas) for p in parts), default=0)
        for j in range(rf):
            for p in parts:
                if j < len(p.replicas):
                    table[p.replicas[j]].append(p.partition)
        return table

    # --- leadership ------------------------------------------------------------------------------------------

    def _elect(self, ps: PartitionState) -> int:
        for b in ps.replicas:
            if b in ps.isr and self.is_alive(b):
                return b
        return NO_LEADER

    def _set_leader(self, ps: PartitionState, new: int, changes: list[LeadershipChange]) -> None:
        if new != ps.leader:
            old = ps.leader
            ps.leader = new
            ps.leader_epoch += 1
            changes.append(LeadershipChange(ps.topic, ps.partition, old, new, ps.leader_epoch))

    def _all_partitions(self):
        for name in sorted(self.topics):
            yield from self.topics[name]

    def stop_broker(self, broker_id: int) -> list[LeadershipChange]:
        b = self.brokers[broker_id]
        if not b.alive:
            return []
        b.alive = False
        changes: list[LeadershipChange] = []
        for ps in self._all_partitions():
            if broker_id in ps.isr and len(ps.isr) > 1:
                ps.isr.remove(broker_id)
            if ps.leader == broker_id:
                self._set_leader(ps, self._elect(ps), changes)
        return changes

    def start_broker(self, broker_id: int) -> list[LeadershipChange]:
        b = self.brokers[broker_id]
        if b.alive:
            return []
        b.alive = True
        changes: list[LeadershipChange] = []
        for ps in self._all_partitions():
            if broker_id not in ps.replicas:
                continue
            if ps.leader == NO_LEADER:
                self._set_leader(ps, self._elect(ps), changes)
            if broker_id not in ps.isr:
                # rejoins as an in-sync follower: the log is shared, nothing to catch up
                ps.isr.append(broker_id)
                ps.isr.sort(key=ps.replicas.index)
        return changes

    def leader_candidate(self, topic: str, partition: int, broker_id: int) -> PartitionState:
        """The partition, if the broker can be made its leader (it exists and is alive); else ClusterError."""
        ps = self.partition(topic, partition)
        if ps is None:
            raise ClusterError(f"no partition {topic}-{partition}")
        if broker_id not in self.brokers:
            raise ClusterError(f"no broker {broker_id}")
        if not self.is_alive(broker_id):
            raise ClusterError(f"broker {broker_id} is stopped")
        return ps

    def move_leader(self, topic: str, partition: int, broker_id: int) -> list[LeadershipChange]:
        """A controlled leader election (``kafka-reassign-partitions`` then ``kafka-leader-election``): make the
        live broker ``broker_id`` the partition's leader, adding it to the replicas and the ISR first if needed."""
        ps = self.leader_candidate(topic, partition, broker_id)
        if broker_id not in ps.replicas:
            ps.replicas.append(broker_id)
        if broker_id not in ps.isr:
            ps.isr.append(broker_id)
        changes: list[LeadershipChange] = []
        self._set_leader(ps, broker_id, changes)
        return changes

    def elect_preferred_leaders(self) -> list[LeadershipChange]:
        """Move every leadership back to the preferred (first) replica where it is alive and in sync."""
        changes: list[LeadershipChange] = []
        for ps in self._all_partitions():
            pref = ps.replicas[0]
            if ps.leader != pref and self.is_alive(pref) and pref in ps.isr:
                self._set_leader(ps, pref, changes)
        return changes

    # --- __consumer_offsets ----------------------------------------------------------------------------------

    def ensure_offsets_topic(self) -> bool:
        """Create ``__consumer_offsets`` if it does not exist and enough brokers are alive; True if it exists."""
        if OFFSETS_TOPIC in self.topics:
            return True
        rf = self.config.offsets_topic_replication_factor
        if len(self.live_brokers()) < rf or len(self.brokers) < rf:
            return False
        self.create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions, rf)
        return True

    def offsets_partition_for(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.config.offsets_topic_num_partitions)

    def coordinator_for(self, group_id: str) -> int:
        """The broker leading the group's offsets partition, or -1 (no topic yet, or no live leader)."""
        ps = self.partition(OFFSETS_TOPIC, self.offsets_partition_for(group_id))
        return NO_LEADER if ps is None else ps.leader

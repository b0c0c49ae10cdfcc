"""kgroup's group coordinator: Kafka's classic group protocol, offsets and the ``__consumer_offsets`` logs, sans-IO.

Public API (see docs/coordinator.md):

* :class:`GroupCoordinatorService` -- the whole cluster's coordination; drivers call ``handle``/``poll``/
  ``next_deadline``/``stop_broker``/``start_broker``/``elect_preferred_leaders``/``move_coordinator``/
  ``expire_sessions`` and get an :class:`Output` back (``Output.answer``: the answer to the request just handled,
  :data:`PARKED` or :data:`ABANDONED`); ``state_replay_mismatches()`` checks that every shard's state is the
  replay of its log.
* :class:`RequestContext`, :class:`Output`, :class:`BrokerStopped`.
* :class:`Cluster` -- brokers, topics, replica placement, leadership.
* :class:`CoordinatorConfig` / :class:`ConfigError` -- Kafka's settings and defaults.
* :class:`ClassicGroup`, :class:`GroupState` -- the state machine (read-only for callers).
* ``coordinator.records`` -- the event records (docs/events.md); :func:`load_durable` / :func:`replay_live` --
  state from a log.

Inside (docs/coordinator.md): ``service`` (routing, the checks before the coordinator) -> ``shard`` (one
``__consumer_offsets`` partition) -> ``runtime`` (operations: records applied, appended and released, or rolled
back) -> ``classic_manager`` / ``offset_manager`` (the rules) over ``group`` / ``offsets`` (the state).
"""

from coordinator.cluster import OFFSETS_TOPIC, Cluster, ClusterError, LeadershipChange
from coordinator.config import ConfigError, CoordinatorConfig
from coordinator.group import ClassicGroup, GroupState, IllegalStateTransition, Member
from coordinator.log import PartitionLog
from coordinator.records import SCHEMA_VERSION, LogEntry
from coordinator.replay import ShardState, load_durable, replay_live
from coordinator.runtime import ABANDONED, PARKED, CoordinatorResult
from coordinator.service import BrokerStopped, GroupCoordinatorService, Output, RequestContext

__all__ = ["ABANDONED", "BrokerStopped", "ClassicGroup", "Cluster", "ClusterError", "ConfigError",
           "CoordinatorConfig", "CoordinatorResult", "GroupCoordinatorService", "GroupState", "IllegalStateTransition",
           "LeadershipChange", "LogEntry", "Member", "OFFSETS_TOPIC", "Output", "PARKED", "PartitionLog",
           "RequestContext", "SCHEMA_VERSION", "ShardState", "load_durable", "replay_live"]

"""All API schemas. Importing this package registers every API in :data:`protocol.api.APIS`.

Classes are exposed by name: ``JoinGroupRequest``, ``JoinGroupResponse``, ... and the :class:`~protocol.api.Api`
objects as ``JoinGroup``, ``SyncGroup``, ...
"""

from protocol.api import APIS
from protocol.messages import group as _group
from protocol.messages.group import (ApiVersions, DeleteGroups, DescribeGroups, FindCoordinator, Heartbeat,
                                     JoinGroup, LeaveGroup, ListGroups, OffsetCommit, OffsetDelete, OffsetFetch,
                                     SyncGroup)

from protocol.messages import data as _data  # noqa: F401  (Metadata, Produce, Fetch, ListOffsets, ...)
from protocol.messages.data import (Fetch, InitProducerId, ListOffsets, Metadata,  # noqa: F401
                                    OffsetForLeaderEpoch, Produce)

from protocol.messages import admin as _admin  # noqa: F401  (CreateTopics, DeleteTopics, ...)
from protocol.messages.admin import (CreatePartitions, CreateTopics, DeleteTopics,  # noqa: F401
                                     DescribeCluster, DescribeConfigs)

from protocol.messages import consumer_group as _consumer_group  # noqa: F401  (KIP-848)
from protocol.messages.consumer_group import ConsumerGroupDescribe, ConsumerGroupHeartbeat  # noqa: F401

for _api in list(APIS.values()):
    globals()[_api.request.name] = _api.request.cls
    globals()[_api.response.name] = _api.response.cls

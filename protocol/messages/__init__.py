"""All API schemas. Importing this package registers every API in :data:`protocol.api.APIS`.

Classes are exposed by name: ``JoinGroupRequest``, ``JoinGroupResponse``, ... and the :class:`~protocol.api.Api`
objects as ``JoinGroup``, ``SyncGroup``, ...
"""

from protocol.api import APIS
from protocol.messages import group as _group
from protocol.messages.group import (ApiVersions, DeleteGroups, DescribeGroups, FindCoordinator, Heartbeat,
                                     JoinGroup, LeaveGroup, ListGroups, OffsetCommit, OffsetDelete, OffsetFetch,
                                     SyncGroup)

try:  # data-path APIs (Metadata, Produce, Fetch, ListOffsets, InitProducerId)
    from protocol.messages import data as _data  # noqa: F401
    from protocol.messages.data import (Fetch, InitProducerId, ListOffsets, Metadata,  # noqa: F401
                                        OffsetForLeaderEpoch, Produce)
except ImportError:  # pragma: no cover - removed once data.py lands
    pass

for _api in list(APIS.values()):
    globals()[_api.request.name] = _api.request.cls
    globals()[_api.response.name] = _api.response.cls

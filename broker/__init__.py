"""The broker: what ``kgroup serve`` runs, in two layers.

* **Sans-IO** (no sockets, event loop, clock or files; the simulator may use these): :mod:`broker.apis` -- Kafka's
  ``KafkaApis`` for every broker (ApiVersions, Metadata, FindCoordinator routing, the group APIs through the
  coordinator core, the data path); :mod:`broker.datapath` -- the data path's rules; :mod:`broker.batchlog` -- a
  partition's record batches and producer state; :mod:`broker.faultrules` -- the fault-rule model.
* **The process around them**: :mod:`broker.server` (the asyncio server: listeners, connections, framing, the one
  request path, timers), :mod:`broker.clock` (its clock), :mod:`broker.faults` (fault control and its private
  control API), :mod:`broker.storage` (the log files).

Decisions about groups and offsets are the coordinator core's (``coordinator/``).
"""

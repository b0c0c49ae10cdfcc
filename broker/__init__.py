"""The broker process around the sans-IO coordinator: what ``kgroup serve`` runs.

Everything that touches sockets, the event loop or a clock lives here: the asyncio server (connections, framing,
one request at a time per connection), the data path (partition logs for Produce/Fetch/ListOffsets), fault control
and its private control API. Decisions about groups and offsets are the core's (``coordinator/``).
"""

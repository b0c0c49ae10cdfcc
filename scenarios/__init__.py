"""The scenario simulator: kgroup's cores in deterministic virtual time, with faults and invariants.

A scenario file (TOML, ``scenarios/model.py``) names topics, groups, consumers and a timeline of actions and
faults; ``scenarios/world.py`` wires the parts (event queue, network, brokers running ``broker.apis.BrokerApis``,
consumer processes running ``consumer.ConsumerCoordinator``, the application loop, timeline, settle checks,
invariants, tracing) and ``scenarios/runner.py`` runs one (scenario, seed) to its events, trace and verdict.
The library of worked examples is ``scenarios/library/``; ``scenarios/fuzz.py`` draws random scenarios.
docs/scenarios.md is the user's guide; docs/architecture.md shows how the parts connect.
"""

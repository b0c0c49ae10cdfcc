"""`kgroup demo` (the README's `make demo`): a guided, live tour of the consumer-group protocols.

* default (``--protocol classic``): kgroup/demo_classic.py -- FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, a
  clean leave and a session-timeout removal, over real TCP against an embedded ``kgroup serve``;
* ``--protocol consumer``: kgroup/demo_consumer.py -- the same story with KIP-848 consumers (ConsumerGroupHeartbeat,
  group and member epochs, the coordinator's target assignment, revocation before assignment);
* ``--compare``: kgroup/demo_compare.py -- the story in the simulator (virtual time) under the eager, cooperative
  and consumer protocols, with the time each partition was unowned under each.

``--lang``, ``--step`` and ``--diagrams`` work for both live stories (``--compare`` prints a table).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from kgroup.catalogue import LANGS, Catalogue
from kgroup.demo_classic import Demo
from kgroup.stepper import PausableClock


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a guided, live tour of the consumer-group protocol over TCP",
                       description="Start a 3-broker coordinator and simulated consumers on loopback and narrate "
                                   "FIND_COORDINATOR -> JOIN_GROUP -> SYNC_GROUP -> HEARTBEAT, a clean leave and a "
                                   "session-timeout removal. --protocol consumer tells the same story with KIP-848's "
                                   "ConsumerGroupHeartbeat (group and member epochs, the coordinator's target "
                                   "assignment, revocation before assignment); --compare runs it in the simulator "
                                   "under eager, cooperative and consumer protocols and tabulates how long each "
                                   "partition was unowned.")
    p.add_argument("--group", default="demo-group", help="group id (default: demo-group)")
    p.add_argument("--topic", default="orders:6", metavar="NAME:PARTITIONS", help="topic (default: orders:6)")
    p.add_argument("--consumers", type=int, default=3, help="number of consumers, >= 3 (default: 3)")
    p.add_argument("--strategy", default=None,
                   help="partition.assignment.strategy of every consumer, e.g. 'cooperative-sticky' or "
                        "'range,roundrobin' (default: a mix of [range, roundrobin] and [roundrobin, range], "
                        "to show the vote)")
    p.add_argument("--brokers", type=int, default=3, help="brokers in the embedded cluster (default: 3)")
    p.add_argument("--session-timeout-ms", type=int, default=2000, help="session.timeout.ms (default: 2000)")
    p.add_argument("--heartbeat-interval-ms", type=int, default=500, help="heartbeat.interval.ms (default: 500)")
    p.add_argument("--initial-rebalance-delay-ms", type=int, default=500,
                   help="the brokers' group.initial.rebalance.delay.ms (default: 500)")
    p.add_argument("--processing-ms", type=float, default=50.0,
                   help="simulated processing time per poll (default: 50)")
    p.add_argument("--heartbeat-phase-ms", type=int, default=1500,
                   help="how long to watch the stable group heartbeat (default: 1500)")
    p.add_argument("--lang", choices=LANGS, default="en", help="language of the narration (default: en)")
    p.add_argument("--step", action="store_true",
                   help="pause after each protocol step: Enter or n = next, c = continue, q = quit (the clocks "
                        "stand still while paused)")
    p.add_argument("--diagrams", metavar="DIR", default=None,
                   help="write a sequence diagram of each phase to DIR (Mermaid .mmd and standalone .svg)")
    p.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                   help="group.protocol of the consumers: classic (JoinGroup/SyncGroup, the default) or consumer "
                        "(KIP-848: ConsumerGroupHeartbeat, group and member epochs, the coordinator's target "
                        "assignment, revocation before assignment); with consumer, --session-timeout-ms and "
                        "--heartbeat-interval-ms set the coordinator's group.consumer.* values")
    p.add_argument("--compare", action="store_true",
                   help="run the same story in the simulator (virtual time) under the eager, cooperative and "
                        "consumer protocols side by side and print how long each partition was unowned under each "
                        "(total and longest, from the run's trace)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        name, _, parts = args.topic.rpartition(":")
        topic = (name, int(parts))
        if not name or topic[1] < 1:
            raise ValueError
    except ValueError:
        print(f"kgroup demo: --topic must be NAME:PARTITIONS, got {args.topic!r}", file=sys.stderr)
        return 2
    if args.consumers < 3:
        print("kgroup demo: --consumers must be >= 3 (one leaves, one is killed, the rest stay)", file=sys.stderr)
        return 2
    if args.heartbeat_interval_ms >= args.session_timeout_ms:
        print("kgroup demo: --heartbeat-interval-ms must be lower than --session-timeout-ms", file=sys.stderr)
        return 2
    if args.brokers < 1:
        print("kgroup demo: --brokers must be >= 1", file=sys.stderr)
        return 2
    protocol = getattr(args, "protocol", "classic")
    if protocol == "consumer" and args.strategy:
        print("kgroup demo: --strategy is a classic-protocol setting (partition.assignment.strategy); with "
              "--protocol consumer the coordinator's server-side assignor decides", file=sys.stderr)
        return 2
    if getattr(args, "compare", False):
        if args.step or args.diagrams or args.strategy:
            print("kgroup demo: --compare runs in virtual time with range, cooperative-sticky and uniform and prints "
                  "a table; --step, --diagrams and --strategy are for the live demo", file=sys.stderr)
            return 2
        from scenarios.model import ScenarioError
        try:
            return run_compare(args, topic)
        except ScenarioError as e:
            print("kgroup demo: " + "; ".join(msg for _, msg in e.problems), file=sys.stderr)
            return 2
    if protocol == "consumer":
        from kgroup.demo_consumer import coordinator_config
        from protocol.settings import ConfigError
        try:
            coordinator_config(args)
        except ConfigError as e:
            print(f"kgroup demo: {e}", file=sys.stderr)
            return 2
    logging.basicConfig(level=logging.ERROR)
    clock = PausableClock()
    if protocol == "consumer":
        from kgroup.demo_consumer import ConsumerDemo
        demo: Demo = ConsumerDemo(args, topic, clock)
    else:
        demo = Demo(args, topic, clock)

    def loop_factory() -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        loop.time = clock  # every timer of the brokers and consumers reads this clock; --step pauses it
        return loop

    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(asyncio.wait_for(demo.run(), 120))
    except asyncio.TimeoutError:
        print("kgroup demo: timed out", file=sys.stderr)
        return 1
    except asyncio.CancelledError:
        if demo.stepper.quit:  # the learner typed q
            return 0
        raise


def run_compare(args: argparse.Namespace, topic: tuple[str, int]) -> int:
    """``--compare``: the story in the simulator under three protocols (kgroup/demo_compare.py)."""
    from kgroup.demo_compare import Story, render, run_story
    gap = max(10_000, 3 * args.session_timeout_ms + 2 * args.initial_rebalance_delay_ms)
    story = Story(topic[0], topic[1], args.consumers, args.session_timeout_ms, args.heartbeat_interval_ms,
                  args.initial_rebalance_delay_ms, gap, args.processing_ms)
    res, measured = run_story(story)
    for line in render(Catalogue(args.lang), story, res, measured):
        print(line)
    return 0 if res.ok else 1

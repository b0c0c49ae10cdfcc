"""`kgroup run FILE [--seed N] [--out DIR] [--json]` and `kgroup run --library`: run scenarios in virtual time.

Writes events.jsonl (docs/events.md schema), trace.jsonl and summary.json to the output directory and prints a
summary: rebalances, stop-the-world time per generation, partitions moved, delivery, invariant results.
``--narrate`` first tells the run's protocol steps from its records and trace, in virtual time, in the language of
``--lang`` (kgroup/narrate.py); ``--step`` (implies ``--narrate``) pauses after each step: the run is
deterministic and already complete, so virtual time simply waits for the learner.
Exit codes: 0 every invariant held; 1 an invariant was violated (or the run failed); 2 a bad scenario file or
usage (nothing ran).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from kgroup.catalogue import LANGS
from kgroup.cli import one_line


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a scenario (or the built-in library) in virtual time",
                       description="Run a TOML scenario against the real coordinator and consumer cores in "
                                   "virtual time, with its faults, and check the invariants. See docs/scenarios.md.")
    p.add_argument("file", nargs="?", help="scenario file (TOML)")
    p.add_argument("--library", action="store_true", help="run every scenario of the built-in library")
    p.add_argument("--seed", type=int, default=None, help="seed (default: the scenario's [scenario] seed)")
    p.add_argument("--out", default=None,
                   help="output directory (default: kgroup-runs/<scenario>/seed-<N>; with --library one "
                        "sub-directory per scenario)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-codec", action="store_true", help="pass message objects without the wire round trip")
    p.add_argument("--list", action="store_true", help="with --library: list the scenarios and exit")
    p.add_argument("--narrate", action="store_true",
                   help="tell each protocol step of the run (values and the Kafka rule behind them) before the summary")
    p.add_argument("--lang", choices=LANGS, default="en", help="language of --narrate (default: en)")
    p.add_argument("--step", action="store_true",
                   help="with the narration, pause after each step: Enter or n = next, c = continue, q = quit")
    p.set_defaults(func=run)


def _quiet_logs() -> None:
    logging.getLogger("kgroup").addHandler(logging.NullHandler())
    logging.getLogger("kgroup").propagate = False


def run(args: argparse.Namespace) -> int:
    from scenarios.model import ScenarioError, load_scenario
    from scenarios.runner import format_summary, library_paths, run_scenario

    _quiet_logs()
    if args.library == bool(args.file):
        print("kgroup run: give a scenario FILE or --library (not both)", file=sys.stderr)
        return 2
    if args.json and (args.narrate or args.step):
        print("kgroup run: --narrate and --step print text; they do not go with --json", file=sys.stderr)
        return 2
    paths = library_paths() if args.library else [Path(args.file)]
    if args.library and args.list:
        for path in paths:
            sc = load_scenario(path)
            print(f"{path.stem:36} {sc.scenario.description}")
        return 0
    scenarios = []
    for path in paths:
        try:
            scenarios.append((path, load_scenario(path)))
        except ScenarioError as exc:
            print(f"kgroup run: {one_line(str(exc))}", file=sys.stderr)
            return 2
    failed = 0
    summaries = []
    for path, sc in scenarios:
        seed = sc.scenario.seed if args.seed is None else args.seed
        res = run_scenario(sc, seed, codec=False if args.no_codec else None, source=str(path))
        name = sc.scenario.name or path.stem
        if args.out is None:
            out = Path("kgroup-runs") / name / f"seed-{seed}"
        elif args.library:
            out = Path(args.out) / name
        else:
            out = Path(args.out)
        try:
            res.write(out)
        except OSError as exc:
            print(f"kgroup run: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        res.summary["out"] = str(out)
        summaries.append(res.summary)
        if not res.ok:
            failed += 1
        if (args.narrate or args.step) and not narrate(res, args):
            return 0  # the learner quit
        if not args.json:
            print(format_summary(res.summary))
            print(f"  wrote {out}/events.jsonl, trace.jsonl, summary.json")
            print()
    if args.json:
        print(json.dumps(summaries if args.library else summaries[0], indent=2, sort_keys=True))
    if args.library and not args.json:
        print(f"{len(scenarios) - failed}/{len(scenarios)} scenarios passed every invariant")
    return 1 if failed else 0


def narrate(res, args: argparse.Namespace) -> bool:
    """Narrate a finished run from its records and trace (what it wrote); False if the learner quit."""
    from coordinator.config import CoordinatorConfig
    from kgroup.catalogue import Catalogue
    from kgroup.narrate import NarrationContext, Narrator, StopNarration
    from kgroup.runlog import merge
    from kgroup.stepper import Stepper
    from scenarios.model import broker_settings, resolve_members

    sc = res.scenario
    T = Catalogue(args.lang)
    cfg = CoordinatorConfig.create(broker_settings(sc))
    members = resolve_members(sc)
    ctx = NarrationContext(offsets_partitions=cfg.offsets_topic_num_partitions,
                           initial_delay_ms=cfg.group_initial_rebalance_delay_ms,
                           topics_of={m.name: list(m.topics) for m in members},
                           partitions_of={t.name: t.partitions for t in sc.cluster.topics},
                           group_of={m.name: m.group for m in members},
                           wide_groups=len(sc.groups) > 1)
    print(T("run.header", name=sc.scenario.name or res.source, seed=res.seed))
    for g in sc.groups:
        names = [m.name for m in members if m.group == g.id]
        strategy = g.strategy if isinstance(g.strategy, str) or g.strategy is None else ",".join(g.strategy)
        print("  " + T("run.group", group=g.id, consumers=", ".join(names),
                       strategy=strategy or "range,cooperative-sticky"))
    events = merge([json.loads(x) for x in res.events_lines()], [json.loads(x) for x in res.trace_lines()])
    stepper = Stepper(args.step, T)
    try:
        Narrator(T, ctx, lambda line: print(line, flush=True), stepper).narrate(events)
    except StopNarration:
        return False
    print()
    print(T("run.end"))
    return True

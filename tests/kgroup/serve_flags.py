"""Test helper: the ServerSettings that `kgroup serve ARGV` would run with (its parser, no server started)."""

from __future__ import annotations

import argparse

from kgroup.cmd_serve import add_parser, settings_from_args


def parse_serve(*argv: str):
    p = argparse.ArgumentParser()
    add_parser(p.add_subparsers())
    return settings_from_args(p.parse_args(["serve", *argv]))

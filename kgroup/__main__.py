"""``python -m kgroup``: the same entry point as the ``kgroup`` command."""
from kgroup.cli import main

raise SystemExit(main())

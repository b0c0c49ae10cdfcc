"""kgroup's analysis on PySpark: rebalance logs (docs/events.md) to metrics, assignor comparisons, seed sweeps and an
HTML report. See docs/analysis.md; the commands are `kgroup analyze` and `kgroup sweep`.

Importing this package does not import PySpark; the modules that need it import it when called.
"""

"""kgroup's top layer: the command line (``kgroup.cli``), the pytest plugin (``kgroup.pytest_plugin``) and the
small Python API for tests (``kgroup.testing``). Nothing else imports this package (docs/architecture.md)."""

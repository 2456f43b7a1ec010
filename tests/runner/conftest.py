"""Fixtures the runner's test modules share: Run Command's instances for the in-region tests."""

from tests.runner.in_region_host import cli_server, instances  # noqa: F401 (fixtures)

"""Fixtures the runner's test modules share: Run Command's instances for the in-region tests, and
the in-region kit as the CDK ships it."""

from tests.runner.in_region_host import cli_server, instances, kit  # noqa: F401 (fixtures)

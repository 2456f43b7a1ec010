#!/usr/bin/env python3
"""CDK entry point: read context, check it, build the stacks. Bad input stops with one line."""

import os
import sys

import aws_cdk as cdk

from catalog import CatalogError
from catalog.config import load_config, ttl_notice, zone_source_notice
from inference_constructs.template_limits import check_templates
from stacks import build_app


def deploy_notices(config, account: str | None) -> list[str]:
    """What every synth (and so every deploy) says: the time-to-live, and where zones come from."""
    return [ttl_notice(config), *zone_source_notice(config, account)]


# cdk-nag runs on every synth unless this is `off`: the emulator tests turn it off for their many
# CLI synths (nag has its own tests in tests/cdk, on the same templates), saving ~2 s a synth.
NAG_ENV = "INFERENCE_CDK_NAG"
# The CDK's built-in CloudFormation validation of every template (it only warns) runs on every
# synth unless this is `off`: about 6 s of CPU a synth; the emulator tests turn it off for their
# many CLI synths (tests/cdk keeps one CLI synth with it on, and cfn-lint checks every template).
VALIDATION_ENV = "INFERENCE_CDK_VALIDATION"


def switch(name: str) -> bool:
    """An on/off environment switch, on unless set; anything else stops with one line."""
    value = os.environ.get(name, "on")
    if value not in ("on", "off"):
        print(f"error: {name} must be on or off, not {value!r}", file=sys.stderr)
        sys.exit(2)
    return value == "on"


def main() -> None:
    nag = switch(NAG_ENV)
    app = cdk.App(builtin_cloud_formation_validation=switch(VALIDATION_ENV))
    try:
        config = load_config(app.node.get_all_context())
    except CatalogError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    for notice in (*config.notices, *deploy_notices(config, account)):
        print(f"note: {notice}", file=sys.stderr)
    build_app(app, config, account=account, nag=nag)
    assembly = app.synth()
    # A template past an AWS limit (every token at its longest) is refused here, not by AWS mid-deploy.
    breaches = check_templates({stack.stack_name: stack.template for stack in assembly.stacks})
    for line in breaches:
        print(f"error: past an AWS limit: {line}", file=sys.stderr)
    if breaches:
        sys.exit(2)


if __name__ == "__main__":
    main()

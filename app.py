#!/usr/bin/env python3
"""CDK entry point: read context, check it, build the stacks. Bad input stops with one line."""

import sys

import aws_cdk as cdk

from catalog import CatalogError
from catalog.config import load_config
from stacks import build_app


def main() -> None:
    app = cdk.App()
    try:
        config = load_config(app.node.get_all_context())
    except CatalogError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    for notice in config.notices:
        print(f"note: {notice}", file=sys.stderr)
    build_app(app, config)
    app.synth()


if __name__ == "__main__":
    main()

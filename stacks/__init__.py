"""One module per stack; `build_app` composes them from the checked config."""

from stacks.app_builder import APP_TAG, build_app

__all__ = ["APP_TAG", "build_app"]

"""The vLLM tier's server (a minute of two cores to load) starts only when the run will collect
the tier: by its paths and by its -m expression, read by pytest's own parser of -m."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from runner.core.files import PROJECT_ROOT
from tests.vllm.background import tier_selected


def config(markexpr: str = "", args: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> SimpleNamespace:
    option = SimpleNamespace(markexpr=markexpr, ignore=list(ignore))
    return SimpleNamespace(option=option, rootpath=Path(PROJECT_ROOT), args=list(args))


@pytest.mark.parametrize(
    ("markexpr", "args", "selected"),
    [
        ("", (), True),
        ("", ("tests/vllm",), True),
        ("", ("tests/vllm/test_vllm_server.py::test_x",), True),
        ("", ("tests/runner",), False),
        ("emulator", (), False),
        ("not emulator and not vllm and not host and not cli and not llama", (), False),
        ("not host", (), True),
        ("vllm or emulator", (), True),
        ("vllm", ("tests/runner",), False),
    ],
)
def test_the_tier_is_selected_by_its_paths_and_its_marker(markexpr, args, selected):
    assert tier_selected(config(markexpr, args)) is selected


def test_an_ignored_tier_is_not_selected():
    assert tier_selected(config(ignore=("tests/vllm",))) is False

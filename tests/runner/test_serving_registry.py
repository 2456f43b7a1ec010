"""Each way of serving is one row of catalog/serving.py plus one entry in each registry that needs
behaviour of it (its timed client, its agent model, what it is priced by): the runner branches on
no kind anywhere else, and a test fails if a branch comes back. The rows agree with the catalog."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from catalog import BACKENDS, BackendKind
from catalog.backends import Billing
from catalog.serving import SERVING, UNKNOWN, serving
from runner.agent.models import MODELS
from runner.costing.prices import PRICE_REQUESTS
from runner.measure.clients import CLIENTS

RUNNER = Path(__file__).parents[2] / "runner"
# A kind's own command and its AWS calls (Custom Model Import's): they are that kind's modules.
KIND_MODULES = {"model_import.py", "cloud/jobs/custom_model_import.py"}
KIND_GROUPS = {"EC2_KINDS", "ENDPOINT_KINDS", "SAGEMAKER_KINDS"}


def names_a_kind(node: ast.AST) -> bool:
    """`BackendKind.X`, `BackendKind.X.value`, a group of kinds, or a tuple/set holding one."""
    if isinstance(node, ast.Attribute):
        return (isinstance(node.value, ast.Name) and node.value.id == "BackendKind") or names_a_kind(node.value)
    if isinstance(node, ast.Name):
        return node.id in KIND_GROUPS
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(names_a_kind(e) for e in node.elts)
    return False


def kind_branches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(names_a_kind(n) for n in [node.left, *node.comparators]):
            found.append(f"{path.relative_to(RUNNER)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_branch_on_a_kind_outside_the_serving_table_and_its_registries():
    branches = [
        line
        for path in sorted(RUNNER.rglob("*.py"))
        if str(path.relative_to(RUNNER)) not in KIND_MODULES
        for line in kind_branches(path)
    ]
    assert branches == [], "ask catalog/serving.py (serving(kind).X) instead:\n" + "\n".join(branches)


def test_the_scan_finds_a_branch_when_one_is_written(tmp_path):
    written = tmp_path / "runner" / "x.py"
    written.parent.mkdir()
    written.write_text(
        "if backend.kind is BackendKind.BEDROCK: pass\n"
        "if kind in (BackendKind.SAGEMAKER, BackendKind.SAGEMAKER_ASYNC): pass\n"
        "if spec.kind in EC2_KINDS: pass\n"
        "if kind == BackendKind.OPENAI.value: pass\n"
        "if serving(kind).agent: pass\n"
    )
    global RUNNER
    saved, RUNNER = RUNNER, tmp_path / "runner"
    try:
        assert [line.split(":")[1] for line in kind_branches(written)] == ["1", "2", "3", "4"]
    finally:
        RUNNER = saved


def test_every_kind_has_a_row_and_every_catalog_backend_bills_as_its_row_says():
    assert set(SERVING) == set(BackendKind)
    for spec in BACKENDS:
        assert spec.billing is serving(spec.kind).billing, spec.name
    assert serving("a-kind-of-the-future") is UNKNOWN and serving(None) is UNKNOWN


@pytest.mark.parametrize("kind", list(BackendKind), ids=lambda k: k.value)
def test_each_kind_has_what_its_row_promises_in_each_registry(kind):
    path = SERVING[kind]
    # A chat path that does not speak OpenAI has a timed client of its own; an OpenAI one takes the
    # one streaming client; a transform job has none (runner.batch).
    assert (kind in CLIENTS) == (path.chat and not path.openai), kind
    # The agent runs on it through its own model, or through the OpenAI-compatible one.
    assert (kind in MODELS) == (path.agent and path.chat and not path.openai), kind
    # What AWS bills is priced; what AWS does not bill is not.
    assert (kind.value in PRICE_REQUESTS) == (path.billing is not Billing.NONE), kind

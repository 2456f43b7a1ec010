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


# A kind written as its string ("sagemaker-batch"), or a catalog backend's name standing for its
# kind ("bedrock-import"): the same branch under another spelling.
KIND_WORDS = {kind.value for kind in BackendKind} | {spec.name for spec in BACKENDS}
# Branches still written on a backend's name, each to move into its row as the batch step did
# (`measured_by`): the survey's import step, the agent's default backend, the embedded one asked
# for by name, Bedrock in the survey. Listed by file and the line's own text, so a new one fails.
NAMED_BRANCHES = {
    ("cli/session.py", "w != 'local'"),
    ("cli/session.py", "name != 'local'"),
    ("cli/session.py", "'local' in wanted"),
    ("flow/up_steps.py", "'bedrock-import' in measured"),
    ("agent/orchestration.py", "for name in ('bedrock', 'local')"),
    ("flow/measure_steps.py", "BEDROCK in measured"),
    ("flow/measure_steps.py", "b != BEDROCK"),
    ("survey.py", "n != BEDROCK"),
    ("survey.py", "BEDROCK in named"),
}


def constants_naming_a_kind() -> set[str]:
    """Module-level names the runner binds to a kind word (`BEDROCK = "bedrock"`): the word again."""
    named = set()
    for path in RUNNER.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in KIND_WORDS:
                named |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return named


KIND_CONSTANTS = constants_naming_a_kind()


def names_a_kind(node: ast.AST) -> bool:
    """`BackendKind.X`, `BackendKind.X.value`, a group of kinds, a kind's value or a backend's name
    as a string, or a tuple/set holding one."""
    if isinstance(node, ast.Attribute):
        return (isinstance(node.value, ast.Name) and node.value.id == "BackendKind") or names_a_kind(node.value)
    if isinstance(node, ast.Name):
        return node.id in KIND_GROUPS or node.id in KIND_CONSTANTS
    if isinstance(node, ast.Constant):
        return node.value in KIND_WORDS if isinstance(node.value, str) else False
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(names_a_kind(e) for e in node.elts)
    return False


def kind_branches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    where = str(path.relative_to(RUNNER))
    for node in ast.walk(tree):
        # A comparison, a default (`x or "sagemaker-batch"`), or a walk over kinds (`for name in ("bedrock", …)`).
        if isinstance(node, ast.Compare):
            parts, text = [node.left, *node.comparators], ast.unparse(node)
        elif isinstance(node, ast.BoolOp):
            parts, text = node.values, ast.unparse(node)
        elif isinstance(node, ast.For):
            parts, text = [node.iter], f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}"
        else:
            continue
        if any(names_a_kind(n) for n in parts) and (where, text) not in NAMED_BRANCHES:
            found.append(f"{where}:{node.lineno}: {text}")
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
        "if kinds.get(name) == 'sagemaker-batch': pass\n"
        "if 'g6' in backends: pass\n"
        "if name in ('bedrock', 'a-server-of-mine'): pass\n"
        "if mode == 'rows': pass\n"
        "agent = job.backend or 'sagemaker-batch'\n"
        "for name in ('local', 'bedrock'): pass\n"
        "if name != BEDROCK: pass\n"
        "for name in ('filter', 'rows'): pass\n"
    )
    global RUNNER
    saved, RUNNER = RUNNER, tmp_path / "runner"
    try:
        found = sorted(int(line.split(":")[1]) for line in kind_branches(written))
        assert found == [1, 2, 3, 4, 6, 7, 8, 10, 11, 12]
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

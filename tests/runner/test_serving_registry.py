"""Each way of serving is one row of catalog/serving.py that names its behaviour by reference (its
timed client, its agent model, what it is priced by, its health check, its watch, its quota, what
it may leave, its construct): every reference resolves, in the layer that reads it; the runner
branches on no kind anywhere else, nor keeps a table by kind, and a test fails if one comes back.
The rows agree with the catalog."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from catalog import BACKENDS, BackendKind
from catalog.backends import Billing
from catalog.serving import SERVING, UNKNOWN, ServingPath, serving
from runner.core.errors import RunnerError
from runner.core.references import resolve
from runner.costing.billing_models import BILLING_MODELS
from stacks.sagemaker_stack import InferenceSageMakerStack, construct_for

RUNNER = Path(__file__).parents[2] / "runner"
# A kind's own command and its AWS calls (Custom Model Import's): they are that kind's modules.
KIND_MODULES = {"model_import.py", "cloud/jobs/custom_model_import.py"}
KIND_GROUPS = {"EC2_KINDS", "ENDPOINT_KINDS", "SAGEMAKER_KINDS"}


# A kind written as its string ("sagemaker-batch"), or a catalog backend's name standing for its
# kind ("bedrock-import"): the same branch under another spelling.
KIND_WORDS = {kind.value for kind in BackendKind} | {spec.name for spec in BACKENDS}
# Branches still written on a backend's name: the embedded server is asked for on the command line
# by its name (`--backends local`), which selects the server to start, not a kind's behaviour.
# Listed by file and the line's own text, so a new one fails.
NAMED_BRANCHES = {
    ("cli/session.py", "w != 'local'"),
    ("cli/session.py", "name != 'local'"),
    ("cli/session.py", "'local' in wanted"),
}


@functools.cache
def constants_naming_a_kind(root: Path) -> frozenset[str]:
    """Module-level names the runner binds to a kind word (`BEDROCK = "bedrock"`): the word again
    (read when a test first asks, not at collection: every worker collects this module)."""
    named = set()
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in KIND_WORDS:
                named |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return frozenset(named)


# Enums whose members are a kind, or a billing model standing for one (costing asks the billing
# model's row in runner/costing/billing_models.py instead).
KIND_ENUMS = {"BackendKind", "Billing"}
# The one table by billing model: the billing models' rows themselves.
TABLES = {("costing/billing_models.py", "BILLING_MODELS")}


def names_a_kind(node: ast.AST) -> bool:
    """`BackendKind.X`, `Billing.X`, `BackendKind.X.value`, a group of kinds, a kind's value or a
    backend's name as a string, or a tuple/set holding one."""
    if isinstance(node, ast.Attribute):
        return (isinstance(node.value, ast.Name) and node.value.id in KIND_ENUMS) or names_a_kind(node.value)
    if isinstance(node, ast.Name):
        return node.id in KIND_GROUPS or node.id in constants_naming_a_kind(RUNNER)
    if isinstance(node, ast.Constant):
        return node.value in KIND_WORDS if isinstance(node.value, str) else False
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(names_a_kind(e) for e in node.elts)
    return False


def kind_branches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found: list[str] = []
    allowed: set[int] = set()
    where = str(path.relative_to(RUNNER))
    for node in ast.walk(tree):
        # A comparison, a default (`x or "sagemaker-batch"`), or a walk over kinds (`for name in ("bedrock", …)`).
        if isinstance(node, ast.Compare):
            parts, text = [node.left, *node.comparators], ast.unparse(node)
        elif isinstance(node, ast.BoolOp):
            parts, text = node.values, ast.unparse(node)
        elif isinstance(node, ast.For):
            parts, text = [node.iter], f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)}"
        elif isinstance(node, ast.Dict):
            # A table by kind (a side registry such as `CLIENTS = {BackendKind.BEDROCK: ...}`).
            parts, text = (
                [k for k in node.keys if k is not None],
                f"{{{', '.join(ast.unparse(k) for k in node.keys if k)}: …}}",
            )
        elif isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and (where, t.id) in TABLES for t in targets):
                allowed.add(id(node.value))
            continue
        else:
            continue
        if id(node) in allowed:
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
        "if billing is Billing.PER_TOKEN: pass\n"
        "if option.billing in (Billing.SERVERLESS_SECONDS, Billing.JOB_INSTANCE_HOURS): pass\n"
        "CLIENTS = {BackendKind.BEDROCK: bedrock_client}\n"
        "IDLE = {Billing.SERVERLESS_SECONDS: 300.0}\n"
        "if billing_model(billing).hourly: pass\n"
        "ROWS = {'filter': 1}\n"
        "BEDROCK = 'bedrock'\n"
    )
    global RUNNER
    saved, RUNNER = RUNNER, tmp_path / "runner"
    try:
        found = sorted(int(line.split(":")[1]) for line in kind_branches(written))
        assert found == [1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 14, 15, 16, 17]
    finally:
        RUNNER = saved


def test_every_kind_has_a_row_and_every_catalog_backend_bills_as_its_row_says():
    assert set(SERVING) == set(BackendKind)
    for spec in BACKENDS:
        assert spec.billing is serving(spec.kind).billing, spec.name
    assert serving("a-kind-of-the-future") is UNKNOWN and serving(None) is UNKNOWN


# Each reference, the package of the layer that resolves it, and what it must be.
LAYERS = {
    "client": "runner.measure.",
    "agent_model": "runner.agent.",
    "price_request": "runner.costing.",
    "health": "runner.measure.",
    "watch": "runner.cloud.bring_up.watch.",
    "quota": "runner.cloud.bring_up.",
    "leftovers": "runner.cloud.cleanup.",
    "construct": "stacks.",
}


def references(path: ServingPath) -> list[tuple[str, str]]:
    found = []
    for field, _ in LAYERS.items():
        value = getattr(path, field)
        found += [(field, v) for v in (value if isinstance(value, tuple) else (value,)) if v]
    return found


@pytest.mark.parametrize("kind", list(BackendKind), ids=lambda k: k.value)
def test_every_reference_in_a_row_resolves_in_the_layer_that_reads_it(kind):
    for field, reference in references(SERVING[kind]):
        assert reference.startswith(LAYERS[field]), (kind, field, reference)
        assert callable(resolve(reference)), (kind, field, reference)


def test_a_reference_that_names_nothing_is_refused_in_one_line():
    with pytest.raises(RunnerError, match="names nothing"):
        resolve("runner.measure.clients:no_such_client")
    with pytest.raises(RunnerError, match="names nothing"):
        resolve("runner.measure.no_such_module:client")
    with pytest.raises(RunnerError, match=re.escape("is not 'package.module:name'")):
        resolve("runner.measure.clients")


@pytest.mark.parametrize("kind", list(BackendKind), ids=lambda k: k.value)
def test_each_kind_names_what_its_row_promises(kind):
    path = SERVING[kind]
    specs = [spec for spec in BACKENDS if spec.kind is kind]
    # A chat path has a timed client (an OpenAI one the one streaming client); a transform job has
    # none (runner.batch measures it).
    assert bool(path.client) == path.chat, kind
    assert (path.client == "runner.measure.clients:openai_client") == path.openai, kind
    # The agent runs on it through a model of its own, or through the OpenAI-compatible one.
    assert bool(path.agent_model) == (path.agent and path.chat), kind
    # What AWS bills is priced; what AWS does not bill is not.
    assert bool(path.price_request) == (path.billing is not Billing.NONE), kind
    # Everything measured waits on something, or says why there is nothing to wait on.
    assert bool(path.health) and (path.health.endswith(":no_health_check") == bool(path.no_health_check)), kind
    # What a stack deploys is watched by `up`; what it may leave billing is found by the sweep.
    deployed = any(spec.stack for spec in specs)
    assert bool(path.watch) == deployed and (bool(path.leftovers) or not deployed), kind
    # A SageMaker stack builds it with the construct its row names; nothing else does.
    on_sagemaker = any(spec.stack == "InferenceSageMakerStack" for spec in specs)
    assert bool(path.construct) == on_sagemaker, kind
    if on_sagemaker:
        assert callable(construct_for(kind)) and InferenceSageMakerStack is not None


def test_a_sagemaker_stack_refuses_a_kind_whose_row_names_no_construct():
    with pytest.raises(ValueError, match="no SageMaker construct named in its serving row"):
        construct_for(BackendKind.BEDROCK)


@pytest.mark.parametrize("billing", list(Billing), ids=lambda b: b.value)
def test_every_billing_model_has_a_row_whose_references_resolve_in_costing(billing):
    model = BILLING_MODELS[billing]
    for reference in (model.level, model.cold, model.fixed, model.advise):
        if reference:
            assert reference.startswith("runner.costing.") and callable(resolve(reference)), reference
    # What AWS bills is advised on; a model that reaches zero says after how long.
    assert bool(model.advise) == model.billed, billing
    assert (model.idle_before_zero_s is not None) == bool(model.cold), billing


ROOT = RUNNER.parent


def checklist_paths() -> set[str]:
    """The files and folders the README's "Adding a way of serving" list names (its bullets)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Adding a way of serving", 1)[1].split("\n## ", 1)[0]
    bullets = section.split("\n- ")[1:]
    bullets[-1] = bullets[-1].split("\n\n", 1)[0]
    return {
        name
        for bullet in bullets
        for name in re.findall(r"`([^`\s]+)`", bullet)
        if "/" in name and not name.startswith("--")
    }


def unlisted(modules: set[str], listed: set[str]) -> list[str]:
    files = {module.replace(".", "/") + ".py" for module in modules}
    return sorted(f for f in files if f not in listed and not any(f.startswith(p) for p in listed if p.endswith("/")))


def test_the_readme_checklist_names_every_file_a_row_reaches_and_each_exists():
    listed = checklist_paths()
    assert {"catalog/serving.py", "catalog/backends.py", "runner/costing/billing_models.py"} <= listed
    assert [p for p in listed if not (ROOT / p).exists()] == []
    modules = {reference.partition(":")[0] for path in SERVING.values() for _, reference in references(path)}
    modules |= {
        reference.partition(":")[0]
        for model in BILLING_MODELS.values()
        for reference in (model.level, model.cold, model.fixed, model.advise)
        if reference
    }
    assert unlisted(modules, listed) == []
    # A row that reached a module the list does not name would be caught.
    assert unlisted(modules | {"runner.cloud.elsewhere"}, listed) == ["runner/cloud/elsewhere.py"]

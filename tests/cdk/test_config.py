"""Context checking: every bad input stops with one line naming the key and the allowed values."""

from __future__ import annotations

import pytest

from catalog import CatalogError
from catalog.config import load_config, read_placements, sagemaker_environment, write_placement
from catalog.offerings import OFFERINGS
from tests.cdk.conftest import cdk_json_context


def config_with(**overrides):
    return load_config(cdk_json_context() | overrides, placements={})


def test_defaults_enable_every_deployable_backend_where_its_type_is_offered():
    config = config_with()
    assert [b.name for b in config.backends] == ["g6", "g5g", "inf2", "trn1", "sagemaker"]
    placed = {s.name: (s.region, s.candidate_regions) for s in config.stacks}
    assert placed == {
        # g6 lists the survey's us-east-2 first, but g5g is not offered there: the stack takes us-east-1.
        "InferenceGpuStack": ("us-east-1", ("us-east-1", "us-west-2")),
        # trn1 is not offered in us-east-1, so inf2's us-east-1 is skipped: us-east-2, then us-west-2.
        "InferenceNeuronStack": ("us-east-2", ("us-east-2", "us-west-2")),
        "InferenceSageMakerStack": ("us-east-2", ("us-east-2", "us-east-1")),
    }
    for backend in config.backends:
        for region in backend.spec.regions:
            assert region in OFFERINGS[backend.spec.instance_type].regions


def test_cdk_json_holds_no_project_defaults_only_framework_flags():
    """Defaults live in the catalog only: one fact, one place."""
    assert [k for k in cdk_json_context() if not k.startswith("@")] == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"backends": "g6,g7"}, "context backends: unknown backend 'g7'; allowed: g6, g5g, inf2, trn1, sagemaker"),
        ({"g7.regions": "us-east-1"}, "unknown backend 'g7' in context key 'g7.regions'; backends: g6, g5g,"),
        ({"g6.regoins": "us-east-1"}, "unknown context key 'g6.regoins'; allowed keys: backends, hfTokenSecretName,"),
        ({"sagemaker.zones": "us-east-1a"}, "unknown context key 'sagemaker.zones'"),
        ({"region": "us-east-1"}, "context key 'region' is gone: use each backend's '<backend>.regions'"),
        ({"g6.zone": "us-east-1a"}, "context key 'g6.zone' is gone: use g6.zones"),
        # A type asked for where it is not offered: one line naming the regions that offer it.
        (
            {"trn1.regions": "us-east-1"},
            "context trn1.regions: trn1.2xlarge is not offered in us-east-1; regions that offer it: us-east-2, us-west-2",
        ),
        (
            {"g5g.regions": "us-east-2,us-east-1"},
            "g5g.2xlarge is not offered in us-east-2; regions that offer it: us-east-1, us-west-2",
        ),
        ({"g6.regions": ""}, "context g6.regions: at least one region is needed"),
        (
            {"g6.regions": "mars-1"},
            "context g6.regions: unknown region 'mars-1'; known regions: us-east-1, us-east-2, us-west-1, us-west-2",
        ),
        ({"g6.regions": "us-east-1,us-east-1"}, "a region is listed twice"),
        # A zone outside its region.
        (
            {"g6.zones": "us-west-2a"},
            "context g6.zones: 'us-west-2a' is not a zone of us-east-1, the region of its stack InferenceGpuStack",
        ),
        # One stack asked for in two regions at once.
        (
            {"g6.regions": "us-east-2", "g5g.regions": "us-east-1"},
            "stack InferenceGpuStack is asked for in two regions at once (g6 in us-east-2; g5g in us-east-1)",
        ),
        ({"g6.instanceType": "g5g.2xlarge"}, "context g6.instanceType: 'g5g.2xlarge' does not match backend g6"),
        ({"g5g.instanceType": "g6.xlarge"}, "allowed families: g5g"),
        ({"inf2.instanceType": "g6.xlarge"}, "allowed families: inf2, trn1, trn1n"),
        ({"g6.instanceType": "ml.g6.xlarge"}, "is a SageMaker type"),
        ({"sagemaker.instanceType": "g6.xlarge"}, "SageMaker instance types start with 'ml.'"),
        ({"sagemaker.instanceType": "ml.g5g.xlarge"}, "does not match backend sagemaker"),
        ({"g6.instanceType": "xlarge"}, "is not of the form FAMILY.SIZE"),
        ({"sagemaker.startupTimeoutSeconds": "soon"}, "expected a whole number, got 'soon'"),
        ({"sagemaker.startupTimeoutSeconds": 99999}, "outside the allowed range 60..3600"),
        ({"hfTokenSecretName": "bad name!"}, "is not a valid Secrets Manager name"),
    ],
)
def test_bad_context_is_one_clear_line(overrides, expected):
    with pytest.raises(CatalogError) as caught:
        config_with(**overrides)
    message = str(caught.value)
    assert expected in message
    assert "\n" not in message


def test_overrides_reach_the_spec():
    config = config_with(
        **{
            "backends": "g6,sagemaker",
            "g6.regions": "us-west-2",
            "g6.zones": "us-west-2b,us-west-2c",
            "g6.instanceType": "g6e.xlarge",
            "g6.flags": "--max-model-len 4096",
            "sagemaker.model": "org/other",
        }
    )
    g6, sm = config.backends
    assert (g6.region, g6.zones, g6.spec.instance_type, g6.spec.serve_flags) == (
        "us-west-2",
        ("us-west-2b", "us-west-2c"),
        "g6e.xlarge",
        ("--max-model-len", "4096"),
    )
    assert sm.spec.model_id == "org/other"


def test_narrowing_backends_keeps_every_stack_so_destroy_sees_it():
    config = config_with(backends="g6")
    assert [(s.name, [b.name for b in s.backends]) for s in config.stacks] == [
        ("InferenceGpuStack", ["g6"]),
        ("InferenceNeuronStack", []),
        ("InferenceSageMakerStack", []),
    ]
    # With g5g off, g6's own order applies: the survey's us-east-2 first.
    assert config.stack("InferenceGpuStack").region == "us-east-2"


def test_placement_record_wins_while_it_names_a_candidate_region():
    config = load_config({}, placements={"InferenceNeuronStack": "us-west-2", "InferenceGpuStack": "us-east-2"})
    assert config.stack("InferenceNeuronStack").region == "us-west-2"
    # us-east-2 cannot host g5g: the stale record is ignored with a notice, not obeyed.
    assert config.stack("InferenceGpuStack").region == "us-east-1"
    assert any("placement.json puts InferenceGpuStack in us-east-2" in n for n in config.notices)


def test_placement_file_round_trip(tmp_path):
    path = tmp_path / "placement.json"
    assert read_placements(path) == {}
    write_placement("InferenceNeuronStack", "us-west-2", path)
    write_placement("InferenceGpuStack", "us-east-1", path)
    assert read_placements(path) == {"InferenceNeuronStack": "us-west-2", "InferenceGpuStack": "us-east-1"}
    write_placement("InferenceGpuStack", None, path)
    assert read_placements(path) == {"InferenceNeuronStack": "us-west-2"}
    path.write_text("{broken")
    with pytest.raises(CatalogError, match=r"placement\.json: not JSON"):
        read_placements(path)


def test_sagemaker_environment_translates_flags():
    env = sagemaker_environment(
        ("--max-model-len", "8192", "--enable-auto-tool-choice", "--tool-call-parser", "gemma4"), "m"
    )
    assert env == {
        "SM_VLLM_MODEL": "m",
        "SM_VLLM_MAX_MODEL_LEN": "8192",
        "SM_VLLM_ENABLE_AUTO_TOOL_CHOICE": "true",
        "SM_VLLM_TOOL_CALL_PARSER": "gemma4",
    }
    with pytest.raises(CatalogError, match="not --model"):
        sagemaker_environment(("--model", "x"), "m")
    with pytest.raises(CatalogError, match="expected --name"):
        sagemaker_environment(("8192",), "m")

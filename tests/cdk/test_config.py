"""Context checking: every bad input stops with one line naming the key and the allowed values."""

from __future__ import annotations

import pytest

from catalog import CatalogError
from catalog.config import known_keys, load_config, sagemaker_environment
from tests.cdk.conftest import cdk_json_context


def config_with(**overrides):
    ctx = cdk_json_context() | overrides
    return load_config(ctx)


def test_cdk_json_defaults_enable_every_deployable_backend():
    config = config_with()
    assert [b.name for b in config.backends] == ["g6", "g5g", "inf2", "trn1", "sagemaker"]
    assert config.region == "us-east-1"
    assert {b.spec.zone for b in config.backends if b.spec.zone} <= set(config.zones)


def test_every_cdk_json_key_is_known_so_docs_and_defaults_agree():
    unknown = [k for k in cdk_json_context() if not k.startswith("@") and k not in known_keys()]
    assert unknown == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"backends": "g6,g7"}, "context backends: unknown backend 'g7'; allowed: g6, g5g, inf2, trn1, sagemaker"),
        ({"g7.zone": "us-east-1a"}, "unknown backend 'g7' in context key 'g7.zone'; backends: g6, g5g,"),
        ({"g6.zoen": "us-east-1a"}, "unknown context key 'g6.zoen'; allowed keys: region, zones,"),
        ({"sagemaker.zone": "us-east-1a"}, "unknown context key 'sagemaker.zone'"),
        ({"regoin": "us-east-1"}, "unknown context key 'regoin'"),
        ({"g6.zone": "us-west-2a"}, "context g6.zone: zone 'us-west-2a' is not one of the app's zones in us-east-1"),
        ({"zones": "us-east-1a,us-west-2b"}, "context zones: 'us-west-2b' is not a zone of region us-east-1"),
        ({"region": "mars-1"}, "context region: 'mars-1' is not an AWS region name"),
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
            "g6.zone": "us-east-1b",
            "g6.instanceType": "g6e.xlarge",
            "g6.flags": "--max-model-len 4096",
            "sagemaker.model": "org/other",
        }
    )
    g6, sm = config.backends
    assert (g6.spec.zone, g6.spec.instance_type, g6.spec.serve_flags) == (
        "us-east-1b",
        "g6e.xlarge",
        ("--max-model-len", "4096"),
    )
    assert sm.spec.model_id == "org/other"


def test_region_change_moves_default_zones_into_the_region():
    config = load_config({"region": "us-west-2", "backends": "g6,trn1"})
    assert config.zones == ("us-west-2a", "us-west-2b", "us-west-2c")
    assert all(b.spec.zone == "us-west-2a" for b in config.backends)


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

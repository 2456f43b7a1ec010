"""Context checking: every bad input stops with one line naming the key and the allowed values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from catalog import CatalogError
from catalog.config import (
    load_config,
    read_placement_records,
    read_placements,
    sagemaker_environment,
    write_placement,
)
from catalog.offerings import COMMERCIAL_REGIONS, regions_offering
from tests.cdk.conftest import SYNTH_NOW, cdk_json_context


def config_with(**overrides):
    return load_config(cdk_json_context() | overrides, placements={}, now=SYNTH_NOW)


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
        # Custom Model Import's regions; the stack holds only its marker until bedrock-import is named.
        "InferenceBedrockImportStack": ("us-east-1", ("us-east-1", "us-west-2")),
    }
    for backend in config.backends:
        for region in backend.spec.regions:
            assert region in regions_offering(backend.spec.instance_type)
    # No zone letters of the app's own: every zone of the region, as the account has them.
    assert all(b.zones == () for b in config.backends)


def test_every_commercial_region_that_offers_a_type_can_host_it():
    assert len(COMMERCIAL_REGIONS) >= 30 and "eu-central-1" in COMMERCIAL_REGIONS
    assert not [r for r in COMMERCIAL_REGIONS if r.startswith(("cn-", "us-gov-"))]
    config = config_with(**{"backends": "g6", "g6.regions": "eu-central-1,eu-west-2"})
    stack = config.stack("InferenceGpuStack")
    assert (stack.region, stack.candidate_regions) == ("eu-central-1", ("eu-central-1", "eu-west-2"))
    # The survey's correction stands over the price list: trn1.2xlarge is priced in us-east-1, not offered.
    assert "us-east-1" not in regions_offering("trn1.2xlarge")
    assert regions_offering("g5g.2xlarge") == (
        "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "eu-central-1", "eu-south-2", "us-east-1", "us-west-2"
    )  # fmt: skip


def test_the_accounts_zones_come_in_by_context_and_narrowing_stays_inside_them():
    zones = "us-east-1a,us-east-1b,us-east-1c,us-east-1d,us-east-1e,us-east-1f"
    config = config_with(**{"us-east-1.zones": zones, "g5g.zones": "us-east-1b"})
    gpu = config.stack("InferenceGpuStack")
    assert gpu.region_zones == tuple(zones.split(","))
    assert gpu.zones == tuple(zones.split(","))  # g6 takes every zone, so the network spans them all
    assert {b.name: b.zones for b in gpu.backends} == {"g6": (), "g5g": ("us-east-1b",)}


def test_the_time_to_live_defaults_to_twelve_hours_from_the_deploy():
    config = config_with()
    assert config.ttl_hours == 12
    assert config.expires_at == datetime(2026, 12, 1, 21, 1, tzinfo=UTC)  # rounded up to the minute
    assert config_with(ttlHours="0").expires_at is None
    assert config_with(expiresAt="2026-12-02T03:00:00Z").expiry_text == "2026-12-02T03:00:00Z"
    assert config_with(ttlHours="1.5").expiry_text == "2026-12-01T10:31:00Z"


def test_pinned_amis_come_from_context_or_the_placement_record_of_the_same_region():
    records = {"InferenceGpuStack": {"region": "us-east-1", "amis": {"g6": "ami-0aaaaaaaaaaaaaaaa"}}}
    config = load_config(cdk_json_context(), records=records, now=SYNTH_NOW)
    amis = {b.name: b.ami_id for b in config.stack("InferenceGpuStack").backends}
    assert amis == {"g6": "ami-0aaaaaaaaaaaaaaaa", "g5g": None}
    config = load_config(cdk_json_context() | {"g5g.ami": "ami-0bbbbbbbbbbbbbbbb"}, records=records, now=SYNTH_NOW)
    assert {b.name: b.ami_id for b in config.stack("InferenceGpuStack").backends}["g5g"] == "ami-0bbbbbbbbbbbbbbbb"
    # A record of another region does not carry over (an AMI id is regional).
    moved = {"InferenceGpuStack": {"region": "us-west-2", "amis": {"g6": "ami-0aaaaaaaaaaaaaaaa"}}}
    config = load_config(cdk_json_context(), records=moved, now=SYNTH_NOW)
    assert config.stack("InferenceGpuStack").region == "us-west-2"
    assert {b.name: b.ami_id for b in config.stack("InferenceGpuStack").backends}["g6"] == "ami-0aaaaaaaaaaaaaaaa"


def test_cdk_json_holds_no_project_defaults_only_framework_flags():
    """Defaults live in the catalog only: one fact, one place."""
    assert [k for k in cdk_json_context() if not k.startswith("@")] == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"backends": "g6,g7"}, "context backends: unknown backend 'g7'; allowed: g6, g5g, inf2, trn1, sagemaker"),
        ({"g7.regions": "us-east-1"}, "unknown backend 'g7' in context key 'g7.regions'; backends: g6, g5g,"),
        (
            {"g6.regoins": "us-east-1"},
            "unknown context key 'g6.regoins'; allowed keys: backends, lane, hfTokenSecretName,",
        ),
        ({"sagemaker.zones": "us-east-1a"}, "unknown context key 'sagemaker.zones'"),
        ({"region": "us-east-1"}, "context key 'region' is gone: use each backend's '<backend>.regions'"),
        ({"g6.zone": "us-east-1a"}, "context key 'g6.zone' is gone: use g6.zones"),
        # A type asked for where it is not offered: one line naming the regions that offer it.
        (
            {"trn1.regions": "us-east-1"},
            "context trn1.regions: trn1.2xlarge is not offered in us-east-1; regions that offer it: us-east-2, us-west-2 "
            "(price lists of 2026-12-01, with the survey's corrections)",
        ),
        (
            {"g5g.regions": "us-east-2,us-east-1"},
            "g5g.2xlarge is not offered in us-east-2; regions that offer it: ap-northeast-1, ap-northeast-2, "
            "ap-southeast-1, eu-central-1, eu-south-2, us-east-1, us-west-2",
        ),
        ({"g6.regions": ""}, "context g6.regions: at least one region is needed"),
        (
            {"g6.regions": "mars-1"},
            "context g6.regions: unknown region 'mars-1'; the app knows the 34 commercial AWS regions",
        ),
        # A type asked for in a region outside the US the price lists do not offer it in.
        (
            {"g5g.regions": "eu-west-1"},
            "g5g.2xlarge is not offered in eu-west-1; regions that offer it: ap-northeast-1,",
        ),
        ({"eu-centrl-1.zones": "eu-centrl-1a"}, "context eu-centrl-1.zones: unknown region 'eu-centrl-1'"),
        ({"us-east-1.zones": "us-west-2a"}, "context us-east-1.zones: 'us-west-2a' is not a zone of us-east-1"),
        (
            {"us-east-1.zones": "us-east-1a,us-east-1b", "g6.zones": "us-east-1f"},
            "context g6.zones: 'us-east-1f' is not among this account's zones of us-east-1 (us-east-1a, us-east-1b)",
        ),
        ({"ttlHours": "-1"}, "context ttlHours: '-1' is outside 0..744 hours (0 turns it off)"),
        ({"ttlHours": "soon"}, "context ttlHours: expected a number of hours (0 turns it off), got 'soon'"),
        ({"ttlHours": "nan"}, "context ttlHours: 'nan' is outside 0..744 hours"),
        ({"expiresAt": "tomorrow"}, "context expiresAt: expected a UTC time like 2026-12-01T21:00:00Z"),
        ({"expiresAt": "2026-11-30T00:00:00Z"}, "context expiresAt: 2026-11-30T00:00:00Z is in the past"),
        ({"expiresAt": "2026-12-02T00:00:00Z", "ttlHours": "0"}, "expiresAt sets an expiry while ttlHours=0"),
        ({"g6.ami": "ubuntu"}, "context g6.ami: expected an AMI id like ami-0123456789abcdef0, got 'ubuntu'"),
        ({"g6.readyMinutes": "2"}, "context g6.readyMinutes: 2 is outside the allowed range 5..1440"),
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
        # The store's copy an endpoint reads its weights from: a weights prefix of a bucket, and only
        # the real-time endpoint's (runner.up passes it).
        (
            {"sagemaker.stagedWeights": "s3://bucket/model.safetensors"},
            "context sagemaker.stagedWeights: expected the store's copy of a model, s3://BUCKET/weights/OWNER/NAME/",
        ),
        ({"g6.stagedWeights": "s3://b/weights/m/"}, "unknown context key 'g6.stagedWeights'"),
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
        ("InferenceBedrockImportStack", []),
    ]
    # With g5g off, g6's own order applies: the survey's us-east-2 first.
    assert config.stack("InferenceGpuStack").region == "us-east-2"


def test_placement_record_wins_while_it_names_a_candidate_region():
    config = load_config(
        {}, placements={"InferenceNeuronStack": "us-west-2", "InferenceGpuStack": "us-east-2"}, now=SYNTH_NOW
    )
    assert config.stack("InferenceNeuronStack").region == "us-west-2"
    # us-east-2 cannot host g5g: the stale record is ignored with a notice, not obeyed.
    assert config.stack("InferenceGpuStack").region == "us-east-1"
    assert any("placement.json puts InferenceGpuStack in us-east-2" in n for n in config.notices)


SATELLITE_RECORDS = {
    "InferenceNeuronStack": {"region": "us-east-2"},
    "InferenceNeuronStack-inf2": {"region": "us-east-1", "of": "InferenceNeuronStack", "backend": "inf2"},
}


def test_a_backend_moved_alone_is_a_satellite_of_its_stack_in_its_own_region():
    """A capacity refusal moved inf2 alone: its stack keeps trn1 where it serves, and inf2 stands in
    a stack of its own, built as the Neuron stack, failing over along its own regions from there."""
    config = load_config({}, records=SATELLITE_RECORDS, now=SYNTH_NOW)
    neuron = config.stack("InferenceNeuronStack")
    assert (neuron.region, [b.name for b in neuron.backends], neuron.family) == ("us-east-2", ["trn1"], "")
    satellite = config.stack("InferenceNeuronStack-inf2")
    assert (satellite.region, satellite.kind, [b.name for b in satellite.backends]) == (
        "us-east-1",
        "InferenceNeuronStack",
        ["inf2"],
    )
    assert satellite.candidate_regions == ("us-east-1", "us-west-2")  # inf2's own order, from here on
    assert satellite.backends[0].region == "us-east-1"
    assert [s.name for s in config.family("InferenceNeuronStack")] == [
        "InferenceNeuronStack",
        "InferenceNeuronStack-inf2",
    ]
    # Not asked for now: the satellite stays in the app, empty, so cdk destroy --all still sees it.
    narrowed = load_config({"backends": "g6,trn1"}, records=SATELLITE_RECORDS, now=SYNTH_NOW)
    assert narrowed.stack("InferenceNeuronStack-inf2").backends == ()
    # A record that does not name its own backend is no satellite.
    odd = {"InferenceNeuronStack-x": {"region": "us-east-1", "of": "InferenceNeuronStack", "backend": "inf2"}}
    assert [s.name for s in load_config({}, records=odd, now=SYNTH_NOW).stacks if s.family] == []


def test_placement_file_round_trip(tmp_path):
    path = tmp_path / "placement.json"
    assert read_placements(path) == {}
    write_placement("InferenceNeuronStack", "us-west-2", path)
    write_placement("InferenceGpuStack", "us-east-1", path)
    assert read_placements(path) == {"InferenceNeuronStack": "us-west-2", "InferenceGpuStack": "us-east-1"}
    write_placement("InferenceGpuStack", None, path)
    assert read_placements(path) == {"InferenceNeuronStack": "us-west-2"}
    # Details ride along; a move to another region drops the old region's AMI ids.
    write_placement(
        "InferenceNeuronStack", "us-west-2", path, amis={"inf2": "ami-0aaaaaaaaaaaaaaaa"}, context={"k": "v"}
    )
    assert read_placement_records(path)["InferenceNeuronStack"] == {
        "region": "us-west-2",
        "amis": {"inf2": "ami-0aaaaaaaaaaaaaaaa"},
        "context": {"k": "v"},
    }
    write_placement("InferenceNeuronStack", "us-east-2", path)
    assert read_placement_records(path)["InferenceNeuronStack"] == {"region": "us-east-2"}
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

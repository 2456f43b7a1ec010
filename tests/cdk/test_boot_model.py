"""catalog/boot.py: the instance types' disks as EC2 describes them, the goal of half the survey's
launch to ready, docs/deploying.md's model written from the catalog, every server's disk room,
the readiness question the boot asks and the stand-in answers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from catalog import BACKENDS
from catalog.backends import EC2_KINDS, ModelArgument
from catalog.boot import (
    INSTANCE_DISKS,
    READINESS_ANSWER,
    READINESS_QUESTION,
    boot_models,
    disk_needed_gb,
    instance_store_gb,
    model_markdown,
)
from inference_constructs.user_data import SCRIPTS
from tests.cdk.conftest import ROOT


def describe_instance_types() -> dict:
    """EC2's DescribeInstanceTypes answers as moto 5.2.5 ships them."""
    import moto

    return json.loads(gzip.open(Path(moto.__file__).parent / "ec2/resources/instance_types.json.gz").read())


@pytest.mark.parametrize("instance_type", sorted(INSTANCE_DISKS))
def test_each_types_disks_and_network_are_what_ec2_describes(instance_type):
    described = describe_instance_types()[instance_type]
    disks = INSTANCE_DISKS[instance_type]
    storage = described.get("InstanceStorageInfo") or {}
    assert disks.instance_store_gb == storage.get("TotalSizeInGB", 0)
    assert bool(disks.instance_store_gb) is described["InstanceStorageSupported"]
    ebs = described["EbsInfo"]["EbsOptimizedInfo"]
    assert (disks.ebs_baseline_mbs, disks.ebs_max_mbs) == (
        ebs["BaselineThroughputInMBps"],
        ebs["MaximumThroughputInMBps"],
    )
    (card,) = described["NetworkInfo"]["NetworkCards"]
    assert (disks.network_baseline_gbps, disks.network_peak_gbps) == (
        card["BaselineBandwidthInGbps"],
        card["PeakBandwidthInGbps"],
    )


def test_every_ec2_backends_type_is_described():
    assert {b.instance_type for b in BACKENDS if b.kind in EC2_KINDS} <= set(INSTANCE_DISKS)
    assert instance_store_gb("g6.xlarge") == 250 and instance_store_gb("inf2.xlarge") == 0
    assert instance_store_gb(None) == 0


def test_the_goal_is_half_the_surveys_launch_to_ready_to_the_tenth_of_a_minute():
    goals = {name: model.goal_s / 60 for name, model in boot_models().items()}
    assert goals == {"g6": 7.0, "g5g": 11.9, "inf2": 9.0, "trn1": 6.4, "sagemaker": 4.0}
    surveyed = {b.name: b.survey_launch_to_ready_min for b in BACKENDS if b.name in goals}
    assert {name: model.survey_s / 60 for name, model in boot_models().items()} == pytest.approx(surveyed)


def test_the_model_says_which_backends_reach_the_goal_and_sagemaker_does_not():
    models = boot_models()
    assert {name for name, model in models.items() if model.meets_goal} == {"g6", "g5g", "inf2", "trn1"}
    assert "cannot reach half" in models["sagemaker"].note
    # Every phase the boot records is modelled for each EC2 server, in its order.
    for name in ("g6", "g5g", "inf2", "trn1"):
        assert [p.phase for p in models[name].phases] == ["running", "image", "weights", "engine", "answer"]
        assert models[name].after_s < models[name].before_s


def test_deploying_md_holds_the_model_the_catalog_writes():
    text = (ROOT / "docs/deploying.md").read_text()
    block = text.split("<!-- boot model: written by catalog/boot.py model_markdown() -->\n", 1)[1]
    assert block.split("<!-- end of the boot model -->", 1)[0] == model_markdown()


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.kind in EC2_KINDS], ids=lambda b: b.name)
def test_every_servers_root_volume_holds_its_image_and_weights(backend):
    """Without an instance store (or with one too small) everything lands on the root volume."""
    needed = disk_needed_gb(backend.image, backend.model_id)
    assert needed > 0 or backend.model_argument is ModelArgument.NONE
    assert needed <= backend.root_volume_gib * 1.073741824  # GiB to GB


def test_the_boot_asks_the_question_the_stand_in_answers():
    ready = (SCRIPTS / "ready.sh").read_text()
    assert f'QUESTION="{READINESS_QUESTION}"' in ready
    assert f"EXPECTED={READINESS_ANSWER.lower()}" in ready

"""Capacity failover against the moto emulator on loopback, through the pinned CLI: bootstrap
every region the app uses, deploy every stack, read the outputs (file and CloudFormation),
`runner.up` failing a stack over to its next region on an injected capacity refusal (the
servers boot for real there: tests/host), destroy, and a listing of what the emulator still
holds."""

from __future__ import annotations

import json

import pytest

from catalog.config import read_placements
from runner.outputs import read_outputs_file, read_stack_outputs
from runner.up import UpOptions, up
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, deploy, destroy
from tests.emulator.observe import leftovers

pytestmark = pytest.mark.emulator


def test_deploy_read_fail_over_and_destroy(emulator, tmp_path):
    emulator.reset()
    bootstrap(emulator.scratch)
    # us-east-2 refuses every EC2 launch from now on (capacity, in every zone).
    emulator.refuse_capacity("us-east-2")
    outputs_file = tmp_path / "outputs.json"
    # As an earlier version of the app deployed: no time-to-live.
    deploy(emulator.scratch, outputs_file, {"ttlHours": "0"})
    from_file = read_outputs_file(outputs_file)
    from_cloudformation = read_stack_outputs()
    assert from_file.problems == [] and from_cloudformation.problems == []
    assert sorted(b.name for b in from_file.backends) == ["g5g", "g6", "inf2", "sagemaker", "trn1"]
    assert sorted(from_file.backends, key=lambda b: b.name) == sorted(
        from_cloudformation.backends, key=lambda b: b.name
    )
    regions = {b.name: b.region for b in from_file.backends}
    assert regions == {
        "g6": "us-east-1",
        "g5g": "us-east-1",
        "inf2": "us-east-2",
        "trn1": "us-east-2",
        "sagemaker": "us-east-2",
    }

    # us-east-2 refused every launch (since before the deploy): runner.up builds the image there
    # (nothing bills meanwhile), brings the groups to one instance, gets none, and moves the Neuron
    # stack to us-west-2 by itself, where the servers boot and report ready.
    evidence = up(
        UpOptions(
            stacks=["InferenceNeuronStack"],
            context=CONTEXT,
            launch_timeout_s=3.0,
            ready_timeout_s=60.0,
            poll_s=0.3,
            build_grace_s=0.5,
            method="direct",
            results_dir=tmp_path / "results",
        )
    )
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert set(records) == {"inf2", "trn1"}
    # The deploy says that it adds the time-to-live the stack did not have.
    assert any("was deployed without a time-to-live: this deploy adds one" in n for n in evidence.data["notices"])
    for record in records.values():
        assert record["outcome"] == "ready", json.dumps(
            [record["outcome"], evidence.data["notices"], evidence.data.get("errors")], default=str
        )
        assert [a["region"] for a in record["attempts"]] == ["us-east-2", "us-west-2"]
        assert record["attempts"][0]["outcome"] == "no-capacity"
        refusals = record["attempts"][0]["refusals"][record["backend"]]
        assert refusals and "do not have sufficient" in refusals[0]["message"]
        assert record["region"] == "us-west-2" and record["zone"].startswith("us-west-2")
        assert record["launched_at"] and record["ready_at"] and record["launch_to_ready_min"] is not None
    assert records["inf2"]["survey_launch_to_ready_min"] == 17.9
    assert read_placements() == {"InferenceNeuronStack": "us-west-2"}
    # The failed attempt was removed: nothing of the Neuron stack is left in us-east-2.
    assert not [i for i in leftovers().get("us-east-2", []) if "Neuron" in i or "inf2" in i or "trn1" in i]
    saved = json.loads(evidence.path.read_text())
    assert saved["command"] == "up" and saved["finished_at"]

    # The runner now finds the Neuron stack in us-west-2 on its own.
    names = {b.name: b.region for b in read_stack_outputs().backends}
    assert names["inf2"] == "us-west-2"

    destroy(emulator.scratch)
    # What the emulator still holds is exactly its gap: after that failed first deletion moto drops
    # the stack record but keeps the Auto Scaling groups (and their instances) it had not deleted.
    # On AWS, CloudFormation deletes the group, which terminates its instance.
    left = leftovers()
    assert {r: [i for i in items if not i.startswith(("group ", "instance "))] for r, items in left.items()} == {
        r: [] for r in left
    }
    assert all(i.startswith(("group Inference", "instance ")) for items in left.values() for i in items)

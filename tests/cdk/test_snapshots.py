"""Whole-template snapshots: any change to what gets deployed shows up in review."""

import pytest

STACKS = ["InferenceGpuStack", "InferenceNeuronStack", "InferenceSageMakerStack"]


@pytest.mark.parametrize("stack", STACKS)
def test_template_snapshot(templates, snapshot, stack):
    assert templates[stack] == snapshot

"""Whole-template snapshots: any change to what gets deployed shows up in review."""

import pytest

STACKS = [
    "InferenceGpuStack",
    "InferenceNeuronStack",
    "InferenceSageMakerStack",
    # The regions the stacks above land in by default: each holds its store stack.
    "InferenceStore-us-east-1",
    "InferenceStore-us-east-2",
]


@pytest.mark.parametrize("stack", STACKS)
def test_template_snapshot(templates, snapshot, stack):
    assert templates[stack] == snapshot

"""Builds every stack from the checked config, and attaches cdk-nag."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from catalog.config import AppConfig
from stacks.base_stack import InferenceBaseStack
from stacks.gpu_stack import InferenceGpuStack
from stacks.neuron_stack import InferenceNeuronStack
from stacks.sagemaker_stack import InferenceSageMakerStack

APP_TAG = ("app", "inference-survey")
BASE_STACK = "InferenceBaseStack"


def build_app(app: cdk.App, config: AppConfig, *, nag: bool = True) -> dict[str, cdk.Stack]:
    """All stacks, keyed by name. A backend stack with no enabled backend is not created."""
    env = cdk.Environment(region=config.region)
    base = InferenceBaseStack(
        app,
        BASE_STACK,
        env=env,
        zones=list(config.zones),
        hf_token_secret_name=config.hf_token_secret_name,
        description="Inference survey: SSM-only network and the servers' instance role (kept between runs)",
    )
    stacks: dict[str, cdk.Stack] = {BASE_STACK: base}
    for name, cls, description in (
        ("InferenceGpuStack", InferenceGpuStack, "Inference survey: vLLM on EC2 GPU instances"),
        ("InferenceNeuronStack", InferenceNeuronStack, "Inference survey: Neuron image on inf2 and trn1"),
    ):
        backends = config.for_stack(name)
        if backends:
            stacks[name] = cls(app, name, env=env, base=base, backends=backends, description=description)
    sagemaker_backends = config.for_stack("InferenceSageMakerStack")
    if sagemaker_backends:
        stacks["InferenceSageMakerStack"] = InferenceSageMakerStack(
            app,
            "InferenceSageMakerStack",
            env=env,
            backends=sagemaker_backends,
            description="Inference survey: SageMaker endpoint with the AWS vLLM container",
        )
    cdk.Tags.of(app).add(*APP_TAG)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stacks

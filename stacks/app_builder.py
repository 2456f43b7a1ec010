"""Builds every stack from the checked config, each in its own region, and attaches cdk-nag."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from catalog.boot import store_needs, store_stack_name
from catalog.config import AppConfig
from catalog.contract import APP_TAG
from stacks.gpu_stack import InferenceGpuStack
from stacks.import_stack import InferenceBedrockImportStack
from stacks.neuron_stack import InferenceNeuronStack
from stacks.sagemaker_stack import InferenceSageMakerStack
from stacks.store_stack import InferenceStoreStack

DESCRIPTIONS = {
    "InferenceGpuStack": "Inference survey: vLLM on EC2 GPU instances",
    "InferenceNeuronStack": "Inference survey: Neuron image on inf2 and trn1",
    "InferenceSageMakerStack": "Inference survey: SageMaker real-time, serverless, asynchronous and batch",
    "InferenceBedrockImportStack": "Inference survey: weights and role for Bedrock Custom Model Import",
}
STORE_DESCRIPTION = "Inference survey: the store, image repositories and weights copy kept in the region"


def build_app(app: cdk.App, config: AppConfig, *, nag: bool = True, account: str | None = None) -> dict[str, cdk.Stack]:
    """All stacks, keyed by name; every stack exists, an empty one holds only its marker.

    `account` (the CLI's CDK_DEFAULT_ACCOUNT) lets the stacks look up the deploying account's
    zones and AMI ids where the config does not give them; without it they stay account-agnostic."""
    stacks: dict[str, cdk.Stack] = {}
    expires_at = config.expiry_text
    stores: dict[str, InferenceStoreStack] = {}
    for region, (models, images) in store_needs(config.stacks).items():
        name = store_stack_name(region)
        stores[region] = stacks[name] = InferenceStoreStack(
            app,
            name,
            env=cdk.Environment(account=account, region=region),
            description=STORE_DESCRIPTION,
            models=models,
            built_images=images,
            hf_token_secret_name=config.hf_token_secret_name,
        )
    for stack_config in config.stacks:
        # A satellite (one backend moved out of its stack by a capacity refusal) is built as its family.
        name, kind = stack_config.name, stack_config.kind
        env = cdk.Environment(account=account, region=stack_config.region)
        description = f"{DESCRIPTIONS[kind]} ({', '.join(b.name for b in stack_config.backends) or 'no backends'})"
        if kind == "InferenceSageMakerStack":
            stacks[name] = InferenceSageMakerStack(
                app,
                name,
                env=env,
                config=stack_config,
                description=description,
                expires_at=expires_at,
                hf_token_secret_name=config.hf_token_secret_name,
            )
        elif kind == "InferenceBedrockImportStack":
            stacks[name] = InferenceBedrockImportStack(
                app,
                name,
                env=env,
                config=stack_config,
                description=description,
                hf_token_secret_name=config.hf_token_secret_name,
            )
        else:
            cls = InferenceGpuStack if kind == "InferenceGpuStack" else InferenceNeuronStack
            stacks[name] = cls(
                app,
                name,
                env=env,
                config=stack_config,
                hf_token_secret_name=config.hf_token_secret_name,
                description=description,
                expires_at=expires_at,
            )
        if stack_config.region in stores and stack_config.backends:
            # The store, its repositories and its copy exist before a server or an endpoint reads them.
            stacks[name].add_stack_dependency(stores[stack_config.region])
    cdk.Tags.of(app).add(*APP_TAG)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stacks

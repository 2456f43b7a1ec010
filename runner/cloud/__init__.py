"""Talking to AWS, by concept. At the top, what every part leans on: when to talk to AWS at all and
with which client (`aws`), the pinned CDK CLI (`cdk_cli`), the stack outputs contract (`outputs`),
what a server says about itself (`readiness`), image builds (`image_builds`), prices (`pricing`)
and what bills now (`billing`). Above them, each package one concern: bringing stacks up and
watching them (`bring_up`), reaching the servers once up (`reach`), jobs CloudFormation does not
cover or that run to an end (`jobs`), and getting back to zero (`cleanup`).

Imports `runner.core` and the catalog only. Nothing here builds an AWS client unless AWS is in
use (see `aws.credentials_configured`).
"""

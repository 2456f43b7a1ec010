"""Talking to AWS, by concept. At the top, what every part leans on: when to talk to AWS at all and
with which client (`aws`), the pinned CDK CLI (`cdk_cli`), the stack outputs contract (`outputs`),
what a server says about itself (`readiness`) and image builds (`image_builds`). Above them, each
package one concern: bringing stacks up and watching them (`bring_up`), reaching the servers once
up (`reach`), jobs CloudFormation does not cover or that run to an end (`jobs`), and getting back
to zero (`cleanup`). Prices and what bills now are `runner.costing`, below this package.

Imports `runner.costing`, `runner.core` and the catalog only. Nothing here builds an AWS client
unless AWS is in use (see `aws.credentials_configured`).
"""

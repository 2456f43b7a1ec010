"""Talking to AWS: when to at all and with which client (`aws`), the pinned CDK CLI (`cdk_cli`),
the stack outputs contract (`outputs`), servers' readiness and groups (`readiness`), what only the
account knows (`account_facts`), bringing stacks up (`stack_up`, `bring_up`) and watching each
server (`server_watch`), image builds (`image_builds`), SSM port forwards and their state file
(`port_forward`, `forwards`), prices (`pricing`) and what bills now (`billing`), transform jobs
(`transform`), Custom Model Import and its command's steps (`model_import`, `import_steps`), the
in-region benchmark through Run Command (`in_region`), and what the app left behind
(`leftovers`, `cleanup`).

Imports `runner.core` and the catalog only. Nothing here builds an AWS client unless AWS is in
use (see `aws.credentials_configured`).
"""

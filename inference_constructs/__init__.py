"""Reusable L3 constructs for the inference backends, one module each (`model_server`,
`instance_role`, `ssm_only_network`, `vllm_endpoint`, ...), and the pure-Python parts they render
(`user_data`: the boot scripts). The package itself imports none of them: what only renders a
boot script must not import aws_cdk and start its jsii runtime.

Named `inference_constructs`, not `constructs`: a top-level `constructs/` package would shadow
the `constructs` library that aws-cdk-lib itself imports (the app folder is first on sys.path).
"""

"""Jobs that CloudFormation does not cover or that run to an end: SageMaker batch transform
(`batch_transform`), and Bedrock Custom Model Import's calls (`custom_model_import`) and the steps
of `runner.model_import` built on them (`custom_model_import_steps`)."""

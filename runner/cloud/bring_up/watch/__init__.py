"""Each backend watched from deploy to ready: what every watch shares (`common`), an EC2 server and
its group (`server`), a SageMaker endpoint (`endpoint`)."""

"""Each backend watched from deploy to ready, with the watch its serving row names: what every
watch shares (`common`), an EC2 server and its group (`server`), a SageMaker endpoint (`endpoint`),
a path where nothing runs until asked (`when_asked`)."""

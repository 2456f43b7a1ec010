"""The emulated account and the regions the tests bootstrap."""

ACCOUNT = "123456789012"
REGIONS = ("us-east-1", "us-east-2", "us-west-2")

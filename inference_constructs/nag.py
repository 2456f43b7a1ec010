"""cdk-nag acknowledgments, kept next to the construct they excuse."""

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding on `scope` (and its children) with a specific reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))

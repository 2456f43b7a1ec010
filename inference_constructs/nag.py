"""cdk-nag acknowledgments, kept next to the construct they excuse."""

from aws_cdk import Acknowledgment, Stack, Token, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding on `scope` (and its children) with a specific reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def finding_account(stack: Stack) -> str:
    """How cdk-nag writes the account in a finding: the stack's account when it is known (CDK's own
    grants then name it), else the pseudo parameter."""
    return "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account

"""Where each instance type is offered, and which zones the app places servers in.

A dated table with its sources, because an offering is a fact about AWS at one time, not a
property of the code. Two sources, and where they disagree the observed API answer wins:

- `pricing`: the per-region instance-type lists that cfn-lint 1.58.0 ships (generated from the AWS
  Pricing API; EC2 and SageMaker hosting). A price list is not an offering: trn1.2xlarge is
  priced in us-east-1 but not offered there.
- `survey`: `aws ec2 describe-instance-type-offerings` and launches recorded by the survey
  (repository xbill9/aws-inference-strands, docs/article/evidence/capacity-and-quota-events.txt
  and run2-REPORT.md, runs of 2026-10-04/05).

Offered is not the same as available: capacity refusals are handled at deploy time
(zone failover by the Auto Scaling group, region failover by `runner.up`).
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.errors import CatalogError

CHECKED_ON = "2026-10-05"
SOURCES = {
    "pricing": "cfn-lint 1.58.0 region data (AWS Pricing API): schemas/extensions/aws_ec2_instance and aws_sagemaker_hosting",
    "survey": "xbill9/aws-inference-strands docs/article/evidence (describe-instance-type-offerings 2026-10-04; launches 2026-10-04/05)",
}

# The four US regions the app knows (and the sweep checks). Zones: the letters every account has
# in that region, from the survey's launches and the regions' published zone counts; zone letters
# map to physical zones per account, so a user can narrow them with `<backend>.zones`.
REGION_ZONES: dict[str, tuple[str, ...]] = {
    "us-east-1": ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"),
    "us-east-2": ("us-east-2a", "us-east-2b", "us-east-2c"),
    "us-west-1": ("us-west-1a", "us-west-1c"),
    "us-west-2": ("us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"),
}
KNOWN_REGIONS = tuple(REGION_ZONES)


@dataclass(frozen=True)
class Offering:
    """One instance type: the regions that offer it, and per region the zones known to offer it."""

    instance_type: str
    regions: tuple[str, ...]
    zones: dict[str, tuple[str, ...]]
    source: str
    note: str = ""


OFFERINGS: dict[str, Offering] = {
    o.instance_type: o
    for o in (
        Offering(
            "g6.xlarge",
            ("us-east-1", "us-east-2", "us-west-2"),
            {},
            "pricing; survey launched it in us-east-2a",
        ),
        Offering(
            "g5g.2xlarge",
            ("us-east-1", "us-west-2"),
            {},
            "pricing; survey launched it in us-east-1a",
            "not offered in us-east-2",
        ),
        Offering(
            "inf2.xlarge",
            ("us-east-1", "us-east-2", "us-west-2"),
            {},
            "pricing; survey launched it in us-east-2b (run 1) and us-west-2a (run 2)",
        ),
        Offering(
            "trn1.2xlarge",
            ("us-east-2", "us-west-2"),
            {"us-east-2": ("us-east-2c",)},
            "survey (describe-instance-type-offerings); pricing for us-west-2",
            "priced but not offered in us-east-1; none in us-west-1; us-east-2 in zone c only",
        ),
        Offering("ml.g6.xlarge", ("us-east-1", "us-east-2", "us-west-2"), {}, "pricing (SageMaker hosting)"),
        Offering("ml.g4dn.xlarge", ("us-east-1", "us-east-2", "us-west-1", "us-west-2"), {}, "pricing"),
    )
}


def check_region(key: str, region: str) -> str:
    if region not in REGION_ZONES:
        raise CatalogError(f"context {key}: unknown region {region!r}; known regions: {', '.join(KNOWN_REGIONS)}")
    return region


def check_offered(key: str, instance_type: str, region: str) -> None:
    """An instance type asked for in a region the table says does not offer it stops synth."""
    offering = OFFERINGS.get(instance_type)
    if offering is None:
        return  # a type the table does not cover: the user's choice, cfn-lint still checks it
    if region not in offering.regions:
        raise CatalogError(
            f"context {key}: {instance_type} is not offered in {region}; "
            f"regions that offer it: {', '.join(offering.regions)} (checked {CHECKED_ON})"
        )


def default_zones(region: str) -> tuple[str, ...]:
    """Every zone of the region: zone letters map per account, so the table's zone notes (trn1 in
    us-east-2c) are the survey's account only. The Auto Scaling group skips a zone that refuses."""
    return REGION_ZONES[region]


def offerings_table() -> list[dict[str, object]]:
    """The table as records, for the evidence and the README."""
    return [
        {
            "instance_type": o.instance_type,
            "regions": list(o.regions),
            "zones": {r: list(z) for r, z in o.zones.items()},
            "source": o.source,
            "note": o.note,
            "checked_on": CHECKED_ON,
        }
        for o in OFFERINGS.values()
    ]

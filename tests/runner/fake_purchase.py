"""Loopback stand-ins for the purchase-option APIs moto lacks or answers with fixed figures:
moto 5.2's server mode has no savingsplans service and no `GetSpotPlacementScores`, and its
`DescribeSpotPriceHistory` answers every type with SpotPrice "0.00001" at 2006-01-02
(moto/ec2/responses/spot_instances.py), so no test could state the prices it checks.

A real boto3 client talks to each, so botocore's own request building and response parsing are
exercised. The shapes are the APIs' own (botocore data/ec2/2016-11-15 and
data/savingsplans/2019-06-28 service-2.json):

- EC2 (query protocol, XML answers): `DescribeSpotPriceHistory` -> `spotPriceHistorySet` items of
  availabilityZone, instanceType, productDescription, spotPrice, timestamp, paged by nextToken;
  `GetSpotPlacementScores` -> `spotPlacementScoreSet` items of region, availabilityZoneId, score.
  A refused action answers 403 `<Response><Errors><Error><Code>UnauthorizedOperation</Code>`,
  as the EC2 API reference's error codes give it.
- Savings Plans (rest-json, POST /DescribeSavingsPlansOfferingRates): `searchResults` of
  savingsPlanOffering, rate, unit, productType, serviceCode, usageType, operation, properties,
  paged by nextToken; filtered by plan type, product, service code, payment option and the
  `filters` (region, instanceType) against each rate's properties. A refused call answers 403
  with `x-amzn-ErrorType: AccessDeniedException`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from tests.runner.loopback import LoopbackServer, QuietHandler, boto3_client

EC2_NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"


def xml_items(items: list[dict[str, Any]]) -> str:
    return "".join(
        "<item>" + "".join(f"<{key}>{escape(str(value))}</{key}>" for key, value in item.items()) + "</item>"
        for item in items
    )


class FakeEC2(LoopbackServer):
    """Spot price history and placement scores as the test states them. `history` items are
    DescribeSpotPriceHistory's (AvailabilityZone, InstanceType, ProductDescription, SpotPrice,
    Timestamp); `scores` GetSpotPlacementScores' (Region, Score)."""

    def __init__(
        self, history: list[dict[str, str]], scores: list[dict[str, Any]] | None = None, *, page_size: int = 2
    ) -> None:
        self.history = history
        self.scores = scores or []
        self.page_size = page_size
        self.deny: set[str] = set()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                form = {k: v[0] for k, v in parse_qs(self.read_body().decode()).items()}
                server.requests.append(form)
                action = form.get("Action", "")
                if action in server.deny:
                    body = (
                        "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not "
                        f"authorized to perform this operation. User is not authorized to perform: ec2:{action}"
                        "</Message></Error></Errors><RequestID>r-1</RequestID></Response>"
                    )
                    self.send_body(403, body.encode(), {"content-type": "text/xml"})
                    return
                if action == "DescribeSpotPriceHistory":
                    types = {v for k, v in form.items() if k.startswith("InstanceType.")}
                    matched = [h for h in server.history if h["InstanceType"] in types]
                    start = int(form.get("NextToken") or 0)
                    page = matched[start : start + server.page_size]
                    more = start + server.page_size < len(matched)
                    items = [
                        {
                            "availabilityZone": h["AvailabilityZone"],
                            "instanceType": h["InstanceType"],
                            "productDescription": h.get("ProductDescription", "Linux/UNIX"),
                            "spotPrice": h["SpotPrice"],
                            "timestamp": h["Timestamp"],
                        }
                        for h in page
                    ]
                    inner = f"<spotPriceHistorySet>{xml_items(items)}</spotPriceHistorySet>"
                    inner += f"<nextToken>{start + server.page_size}</nextToken>" if more else ""
                elif action == "GetSpotPlacementScores":
                    regions = {v for k, v in form.items() if k.startswith("RegionName.")}
                    items = [
                        {"region": s["Region"], "score": s["Score"]}
                        for s in server.scores
                        if not regions or s["Region"] in regions
                    ]
                    inner = f"<spotPlacementScoreSet>{xml_items(items)}</spotPlacementScoreSet>"
                else:
                    self.send_body(
                        400, b"<Response><Errors><Error><Code>InvalidAction</Code></Error></Errors></Response>", {}
                    )
                    return
                body = f'<{action}Response xmlns="{EC2_NAMESPACE}"><requestId>r-1</requestId>{inner}</{action}Response>'
                self.send_body(200, body.encode(), {"content-type": "text/xml"})

        super().__init__(Handler)

    def client(self):
        return boto3_client("ec2", self.url)


def offering_rate(
    plan: str,
    usage_type: str,
    rate: str,
    *,
    years: int = 1,
    payment: str = "No Upfront",
    region: str = "us-east-2",
    instance_type: str = "",
    operation: str = "RunInstances",
    offering_id: str = "",
) -> dict[str, Any]:
    """One `searchResults` entry of DescribeSavingsPlansOfferingRates, as the API shapes it."""
    product, service = ("EC2", "AmazonEC2") if plan in ("Compute", "EC2Instance") else ("SageMaker", "AmazonSageMaker")
    return {
        "savingsPlanOffering": {
            "offeringId": offering_id or f"00000000-0000-4000-8000-{years:04d}{len(usage_type):08d}",
            "paymentOption": payment,
            "planType": plan,
            "durationSeconds": years * 365 * 24 * 3600,
            "currency": "USD",
            "planDescription": f"{years} year {payment} {plan} Savings Plan",
        },
        "rate": rate,
        "unit": "Hrs",
        "productType": product,
        "serviceCode": service,
        "usageType": usage_type,
        "operation": operation,
        "properties": [{"name": "region", "value": region}, {"name": "instanceType", "value": instance_type}],
    }


class FakeSavingsPlans(LoopbackServer):
    def __init__(self, rates: list[dict[str, Any]], *, page_size: int = 3) -> None:
        self.rates = rates
        self.page_size = page_size
        self.deny = False
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.read_body() or b"{}")
                server.requests.append(body)
                if server.deny:
                    message = {
                        "message": "User is not authorized to perform: savingsplans:DescribeSavingsPlansOfferingRates"
                    }
                    self._send(403, message, {"x-amzn-ErrorType": "AccessDeniedException"})
                    return
                matched = [rate for rate in server.rates if matches(rate, body)]
                start = int(body.get("nextToken") or 0)
                answer: dict[str, Any] = {"searchResults": matched[start : start + server.page_size]}
                if start + server.page_size < len(matched):
                    answer["nextToken"] = str(start + server.page_size)
                self._send(200, answer, {})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                self.send_body(status, json.dumps(payload).encode(), {"content-type": "application/json", **headers})

        super().__init__(Handler)

    def client(self):
        return boto3_client("savingsplans", self.url)


def matches(rate: dict[str, Any], body: dict[str, Any]) -> bool:
    offering = rate["savingsPlanOffering"]
    properties = {p["name"]: p["value"] for p in rate["properties"]}
    wanted = [
        (body.get("savingsPlanTypes"), offering["planType"]),
        (body.get("products"), rate["productType"]),
        (body.get("serviceCodes"), rate["serviceCode"]),
        (body.get("savingsPlanPaymentOptions"), offering["paymentOption"]),
        (body.get("usageTypes"), rate["usageType"]),
    ]
    wanted += [(f["values"], properties.get(f["name"])) for f in body.get("filters") or []]
    return all(values is None or value in values for values, value in wanted)

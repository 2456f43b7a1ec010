"""A loopback Service Quotas API (JSON 1.1, target prefix `ServiceQuotasV20190624`) answering
GetServiceQuota, ListServiceQuotas, GetAWSDefaultServiceQuota and ListAWSDefaultServiceQuotas with
the real shapes: `{"Quota": ServiceQuota}` and `{"Quotas": [ServiceQuota...], "NextToken"}`, each
ServiceQuota with ServiceCode, ServiceName, QuotaArn, QuotaCode, QuotaName, Value, Unit,
Adjustable, GlobalQuota; an unknown code is NoSuchResourceException. A real boto3 `service-quotas`
client talks to it, so botocore builds the requests and parses the answers (and its paginator
follows NextToken).

As AWS does, a quota never adjusted (`defaults`) has no applied value: GetServiceQuota answers
NoSuchResourceException for it and ListServiceQuotas leaves it out ("If the applied quota value is
not available for a quota, the quota is not retrieved", Service Quotas API reference); only the
default operations list it. They list every quota, an applied one at its applied value here (its
default is not modelled).

The gap it fills: moto 5.2 implements only GetServiceQuota and ListAWSDefaultServiceQuotas, and
only for service code `vpc` (moto/servicequotas/models.py); it has no ListServiceQuotas and no
`ec2` or `sagemaker` quotas. The region is read from the request's SigV4 credential scope.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.runner.loopback import LoopbackServer, QuietHandler

SERVICE_NAMES = {
    "ec2": "Amazon Elastic Compute Cloud (Amazon EC2)",
    "sagemaker": "Amazon SageMaker",
    "codebuild": "AWS CodeBuild",
}
TARGET = "ServiceQuotasV20190624."


Table = dict[tuple[str, str], list[tuple[str, str, float]]]


class FakeServiceQuotas(LoopbackServer):
    """`quotas[(region, service)]` = [(code, name, value), ...] applied; `defaults` the same shape for
    quotas never adjusted; `requests` records (region, target, body)."""

    def __init__(self, quotas: Table, *, defaults: Table | None = None, page_size: int = 2) -> None:
        self.quotas = quotas
        self.defaults = defaults or {}
        self.page_size = page_size
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.read_body() or b"{}")
                scope = re.search(r"Credential=[^/]+/\d{8}/([^/]+)/", self.headers.get("authorization", ""))
                region = scope.group(1) if scope else "us-east-1"
                target = self.headers.get("x-amz-target", "").removeprefix(TARGET)
                server.requests.append((region, target, body))
                service = body.get("ServiceCode", "")
                listed = [server.shape(region, service, *q) for q in server.quotas.get((region, service), [])]
                if "AWSDefault" in target:
                    listed += [server.shape(region, service, *q) for q in server.defaults.get((region, service), [])]
                    target = target.replace("AWSDefault", "")
                if target == "GetServiceQuota":
                    found = next((q for q in listed if q["QuotaCode"] == body.get("QuotaCode")), None)
                    if found is None:
                        self._send(400, {"__type": "NoSuchResourceException", "Message": "The request failed"})
                    else:
                        self._send(200, {"Quota": found})
                elif target == "ListServiceQuotas":
                    start = int(body.get("NextToken") or 0)
                    answer: dict[str, Any] = {"Quotas": listed[start : start + server.page_size]}
                    if start + server.page_size < len(listed):
                        answer["NextToken"] = str(start + server.page_size)
                    self._send(200, answer)
                else:
                    self._send(400, {"__type": "UnknownOperationException", "Message": target})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self.send_body(status, json.dumps(payload).encode(), {"content-type": "application/x-amz-json-1.1"})

        super().__init__(Handler)

    @staticmethod
    def shape(region: str, service: str, code: str, name: str, value: float) -> dict[str, Any]:
        return {
            "ServiceCode": service,
            "ServiceName": SERVICE_NAMES.get(service, service),
            "QuotaArn": f"arn:aws:servicequotas:{region}:123456789012:{service}/{code}",
            "QuotaCode": code,
            "QuotaName": name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }

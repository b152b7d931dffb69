"""Published prices the cost model multiplies counted usage by: one table, us-east-1, USD.

Each price says where it is published and when it was checked. The checks were made on
2026-12-03 against stored copies of public pages (no live request): where the publisher's
own page renders its numbers client-side, so that its stored copy shows none, the number was
read on the page named in ``checked_in`` instead and the entry says so. A price that could not
be found anywhere is ``None`` and says that too: nothing here is guessed.

Free tiers are left out: at a million steps they are either used up by other work or small.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PRICES", "Price", "price"]

CHECKED = "2026-12-03"


@dataclass(frozen=True, slots=True)
class Price:
    """``usd`` per ``per`` ``unit`` (None: not published where we could read it)."""

    key: str
    usd: float | None
    per: float
    unit: str
    source: str
    checked_in: str = ""  # where the number itself was read, when not on ``source``
    note: str = ""

    @property
    def each(self) -> float:
        """USD for one unit (0 for a price that could not be found)."""
        return 0.0 if self.usd is None else self.usd / self.per


PRICES: tuple[Price, ...] = (
    Price(
        "dynamodb.write_request_unit",
        0.625,
        1e6,
        "write request unit (on-demand, Standard table class; 1 KB of item per unit, "
        "2 units per KB in a transaction)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
        "https://airbyte.com/data-engineering-resources/dynamodb-pricing (US East, after "
        "the November 2024 reduction)",
    ),
    Price(
        "dynamodb.read_request_unit",
        0.125,
        1e6,
        "read request unit (on-demand; a strongly consistent read of up to 4 KB)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
        "https://airbyte.com/data-engineering-resources/dynamodb-pricing",
    ),
    Price(
        "dynamodb.storage",
        0.25,
        1.0,
        "GB-month stored (first 25 GB free)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
        "https://gist.github.com/allenheltondev/d028926b7fe3b0656c96af9140ab55e3 (DDB "
        "Storage $.25 / GB / month)",
    ),
    Price(
        "lambda.request",
        0.20,
        1e6,
        "request (invocation)",
        "https://aws.amazon.com/lambda/pricing/",
        "https://cloudchipr.com/blog/aws-lambda-pricing",
    ),
    Price(
        "lambda.arm64_gb_second",
        0.0000133334,
        1.0,
        "GB-second on arm64 (first 7.5 billion GB-s a month), billed per 1 ms",
        "https://aws.amazon.com/lambda/pricing/",
        "https://cloudchipr.com/blog/aws-lambda-pricing; tiers: "
        "https://aws.amazon.com/blogs/compute/introducing-tiered-pricing-for-aws-lambda/",
        "template.yaml: RunnerFunction arm64, 512 MB; ApiFunction arm64, 512 MB",
    ),
    Price(
        "sqs.request",
        0.40,
        1e6,
        "request to a standard queue (per 64 KB chunk; first 1 million a month free)",
        "https://aws.amazon.com/sqs/pricing/",
        "https://cloudburn.io/blog/amazon-sqs-pricing (US East, March 2026)",
    ),
    Price(
        "scheduler.invocation",
        1.00,
        1e6,
        "EventBridge Scheduler invocation (a schedule firing; 14 million a month free)",
        "https://aws.amazon.com/eventbridge/pricing/",
        "https://cloudburn.io/blog/amazon-eventbridge-pricing (US East, March 2026)",
    ),
    Price(
        "events.custom_event",
        1.00,
        1e6,
        "EventBridge custom event put on a bus (per 64 KB chunk; delivery to a target of the "
        "same account free)",
        "https://aws.amazon.com/eventbridge/pricing/",
        "https://cloudburn.io/blog/amazon-eventbridge-pricing (US East, March 2026)",
    ),
    Price(
        "pipes.request",
        0.40,
        1e6,
        "EventBridge Pipes request (a 64 KB chunk of events, counted after the pipe's filter)",
        "https://aws.amazon.com/eventbridge/pricing/",
        "https://cloudburn.io/blog/amazon-eventbridge-pricing (US East, March 2026)",
    ),
    Price(
        "apigateway.rest_request",
        3.50,
        1e6,
        "REST API request (first 333 million a month)",
        "https://aws.amazon.com/api-gateway/pricing/",
        "https://docs.aws.amazon.com/whitepapers/latest/"
        "best-practices-api-gateway-private-apis-integration/cost-optimization.html",
    ),
    Price(
        "apigateway.http_request",
        1.00,
        1e6,
        "HTTP API request (first 300 million a month; metered in 512 KB increments)",
        "https://aws.amazon.com/api-gateway/pricing/",
        "https://amnic.com/blogs/aws-api-gateway-pricing, read 2026-12-05 ('HTTP API $1.00 "
        "(first 300M), then $0.90/M'; its REST API row agrees with the one above)",
        "template.yaml: ApiType (HTTP, the default, or REST) says which of the two is billed",
    ),
    Price(
        "stepfunctions.standard_transition",
        25.0,
        1e6,
        "state transition of a Standard workflow ($0.025 per 1,000)",
        "https://aws.amazon.com/step-functions/pricing/",
        "https://raw.githubusercontent.com/aws/agent-toolkit-for-aws/main/plugins/"
        "aws-startup-advisor/skills/architect-for-startups/references/step-functions.md",
    ),
    Price(
        "cloudflare.step",
        0.80,
        1e5,
        "Workflows step beyond the included ones",
        "https://developers.cloudflare.com/workflows/reference/pricing/",
        "the figure the issue gives; the stored copy of the page shows no per-step price, "
        "only the three rows below",
    ),
    Price(
        "cloudflare.request",
        0.30,
        1e6,
        "Workflow invocation beyond 10 million a month (Workers Standard)",
        "https://developers.cloudflare.com/workflows/reference/pricing/",
    ),
    Price(
        "cloudflare.cpu_ms",
        0.02,
        1e6,
        "CPU millisecond beyond 30 million a month (a sleeping or waiting instance uses none)",
        "https://developers.cloudflare.com/workflows/reference/pricing/",
    ),
    Price(
        "cloudflare.storage",
        0.20,
        1.0,
        "GB-month of instance state beyond 1 GB (kept 7 days after it ends on the paid plan)",
        "https://developers.cloudflare.com/workflows/reference/pricing/",
    ),
    Price(
        "lambda_durable.operation",
        8.00,
        1e6,
        "durable operation (a step, a wait, a callback...)",
        "https://aws.amazon.com/lambda/pricing/",
        "https://raw.githubusercontent.com/api-evangelist/aws-lambda/refs/heads/main/plans/"
        "aws-lambda-plans-pricing.yml (the page's own figure, transcribed 2026-09-20: "
        "'Durable Functions operations ... $8.00/M')",
    ),
    Price(
        "lambda_durable.data_written",
        None,
        1.0,
        "GB of durable state written",
        "https://aws.amazon.com/lambda/pricing/",
        note="not found in any stored copy we could read: left out of the comparison",
    ),
    Price(
        "lambda_durable.data_retained",
        None,
        1.0,
        "GB-month of durable state retained",
        "https://aws.amazon.com/lambda/pricing/",
        note="not found in any stored copy we could read: left out of the comparison",
    ),
)

_BY_KEY = {p.key: p for p in PRICES}


def price(key: str) -> Price:
    """The price named ``key`` (a KeyError names the known ones)."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no price {key!r}; known: {', '.join(_BY_KEY)}") from None

"""The cost model behind ``make bench`` (bench/cost_bench.py): DynamoDB units from the sizes of
the items actually written, and the calls of a sleeping instance counted exactly."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from bench.cost_bench import (
    APPROVED_AFTER,
    DAYS_PER_MONTH,
    REAP_BATCH,
    SWEEP_GB,
    Approval,
    Nap,
    api_price_key,
    bill,
    measure,
)
from bench.cost_meter import item_size, write_units
from bench.prices import PRICES, price

from lambda_workflows.aws.items import entry_item
from lambda_workflows.aws.settings import RETENTION_DAYS
from lambda_workflows.engine.model import EntryKind, JournalEntry
from lambda_workflows.infra.template import load_template


def journal_item(result: object) -> dict[str, object]:
    entry = JournalEntry(
        key="step 7#1",
        kind=EntryKind.STEP,
        name="step 7",
        count=1,
        at=1.7e9,
        position=7,
        started_at=1.7e9,
        attempt_started_at=1.7e9,
        result=json.dumps(result),
    )
    item, chunks = entry_item("I#orders#order-1", 1, entry, 1.7e9)
    assert chunks == []
    return item


def test_a_1_kb_step_result_with_its_keys_is_2_write_units() -> None:
    small, kilobyte = journal_item("ok"), journal_item("r" * 1000)
    assert write_units(item_size(small)) == 1
    assert 1024 < item_size(kilobyte) < 2048
    assert write_units(item_size(kilobyte)) == 2


def test_a_day_of_sleep_is_counted_call_by_call() -> None:
    run = measure(Nap, "nap-test")
    # create (put, a direct invoke of the runner); invocation 1: load, the sleep's entry, its
    # schedule, wait; invocation 2 (the schedule fired): load, end. Neither runs step code, so
    # neither takes the lease (lambda_workflows.engine.instances.lazy_lease)
    assert run.meter.calls == Counter(
        {
            "dynamodb.PutItem": 2,
            "dynamodb.UpdateItem": 2,
            "dynamodb.Query": 2,
            "lambda.Invoke": 1,
            "scheduler.CreateSchedule": 1,
        }
    )
    assert len(run.invocations) == 2
    assert (run.direct_work, run.direct) == (1, 1)  # neither carried by an SQS message
    assert run.meter.write_units == 4
    # by_created (keys only) is written at the creation alone: its key never moves and no
    # attribute a status change writes is projected; by_due's key moves at the wait (a delete
    # and a put) and leaves at the end: create 1 + 1, the wait 0 + 2, the end 0 + 1. The meter
    # reads the projections from template.yaml: projecting the status again fails here (7).
    assert run.meter.index_write_units == 2 + 2 + 1


def test_every_price_says_where_it_is_published_and_none_is_guessed() -> None:
    for entry in PRICES:
        assert entry.source.startswith("https://"), entry.key
        assert entry.usd is not None or "not found" in entry.note, entry.key
    assert price("lambda_durable.data_written").each == 0.0
    assert price("dynamodb.write_request_unit").each == 0.625 / 1e6


def test_a_sleeping_day_is_billed_line_by_line_with_its_storage_after_it_ends() -> None:
    run = measure(Nap, "nap-bill")
    bought, usage = bill([run], sleep_days=1.0)
    # a line for every service the instance used, each priced from the counted usage
    assert bought.lines["DynamoDB writes"] == pytest.approx(
        (usage["write units"] + usage["index write units"])
        * price("dynamodb.write_request_unit").each
    )
    assert bought.lines["Scheduler invocations"] == price("scheduler.invocation").each
    # the creation invokes the runner directly, and so does the schedule: no SQS request
    assert usage["direct wake-ups"] == usage["direct work"] == 1
    assert usage["SQS requests"] == 0
    assert bought.lines["SQS requests"] == 0
    assert bought.lines["Lambda requests"] == pytest.approx(
        (2 + 1) * price("lambda.request").each  # two runner invocations, the API's request
    )
    assert bought.lines["DynamoDB storage"] > 0
    assert bought.total == pytest.approx(sum(bought.lines.values()))
    # once ended: every item kept RetentionDays, then TTL removes the instance item and the
    # reaper reads the partition and deletes each item the instance left, a delete per item
    left = [key for key, item in run.meter.images.items() if item and key[1] != "I"]
    assert run.meter.reap_calls == Counter({"dynamodb.Query": 1, "dynamodb.DeleteItem": len(left)})
    assert run.meter.reap_write_units >= len(left)
    stored = run.meter.stored_bytes() / 1e9 * RETENTION_DAYS / DAYS_PER_MONTH
    assert usage["retention USD"] == pytest.approx(
        stored * price("dynamodb.storage").each
        + run.meter.reap_write_units * price("dynamodb.write_request_unit").each
        + run.meter.reap_read_units * price("dynamodb.read_request_unit").each
        + price("lambda.request").each / REAP_BATCH
        + run.reap_seconds * SWEEP_GB * price("lambda.arm64_gb_second").each
    )
    assert usage["retention USD"] > 0


def test_an_api_request_is_billed_at_the_price_of_the_api_the_template_deploys() -> None:
    # the template's default is an HTTP API
    assert api_price_key() == "apigateway.http_request"
    assert price("apigateway.http_request").each == 1.00 / 1e6
    # a template deploying the REST API (or one from before ApiType) is billed at its price
    template = load_template()
    template["Parameters"]["ApiType"]["Default"] = "REST"
    assert api_price_key(template) == "apigateway.rest_request"
    del template["Parameters"]["ApiType"]
    assert api_price_key(template) == "apigateway.rest_request"


def test_an_hour_waiting_for_an_event_is_counted_call_by_call() -> None:
    run = measure(Approval, "approval-test", approved_after=APPROVED_AFTER)
    # create (put, a direct invoke); invocation 1: load, the wait's entry, its timeout's
    # schedule, wait; the event an hour later, through the API (two reads, one transaction,
    # the wake-up's direct invoke); invocation 2: load, the event's entry, the timeout's
    # schedule deleted (the event came first: it would fire for nothing), end. Nothing fires
    # a day after creation.
    assert run.meter.calls == Counter(
        {
            "dynamodb.PutItem": 3,
            "dynamodb.UpdateItem": 2,
            "dynamodb.Query": 2,
            "dynamodb.GetItem": 2,
            "dynamodb.TransactWriteItems": 1,
            "lambda.Invoke": 2,
            "scheduler.CreateSchedule": 1,
            "scheduler.DeleteSchedule": 1,
        }
    )
    assert len(run.invocations) == 2
    assert len(run.api_calls) == 2  # the creation and the event, each an API request

    bought, usage = bill([run], sleep_days=1 / 24)
    assert usage["API requests"] == 2
    assert bought.lines["API Gateway requests"] == 2 * price(api_price_key()).each
    assert bought.lines["Lambda requests"] == pytest.approx(4 * price("lambda.request").each)
    assert bought.lines["Scheduler invocations"] == 0  # the timeout's schedule never fired
    # the creation and the event's wake-up each invoked the runner directly: no SQS request
    assert usage["direct work"] == 2
    assert bought.lines["SQS requests"] == 0

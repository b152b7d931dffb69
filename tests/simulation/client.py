"""The API client the driver plays: it creates instances, sends events and control operations
through ApiFunction, retrying a 5xx or a dropped connection as a careful client does (an
event's retry reuses its ``Idempotency-Key``; a 409 or 404 after a failed attempt means that
attempt did it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from lambda_workflows.testing import Crash

from . import lambdas
from .model import event_payload
from .world import World

CLIENT_ATTEMPTS = 30
Call = Callable[..., Any]  # the driver's: call a handler as a container


class Client:
    """One run's client; ``anomalies`` collects what no client should ever get."""

    def __init__(self, world: World, call: Call, anomalies: list[str]) -> None:
        self.world = world
        self.call = call
        self.anomalies = anomalies
        self.numbers: Counter[tuple[str, str]] = Counter()  # events sent per instance, type
        self.answers: list[str] = []  # what each control operation ended with

    def create(self, workflow: str, iid: str, params: Any) -> None:
        body = {"instance_id": iid, "params": params}
        self._until_done(
            "POST", f"/workflows/{workflow}/instances", body, {201}, f"creating {iid}", {409}
        )

    def send_event(self, workflow: str, iid: str, event_type: str, key: str) -> bool:
        """Send the next event of ``event_type`` (``{"type", "n"}``); True once accepted."""
        self.numbers[(iid, event_type)] += 1
        payload = event_payload(event_type, self.numbers[(iid, event_type)])
        path = f"/workflows/{workflow}/instances/{iid}/events/{event_type}"
        headers = {"Idempotency-Key": key}
        skewed = self.world.faults.take_skew()
        for _ in range(CLIENT_ATTEMPTS):
            status, answer = self.api("POST", path, payload, headers, skewed=skewed)
            if status == 202:
                return True
            if status is None or status >= 500:
                continue
            self.anomalies.append(f"sending {payload} to {iid} answered {status}: {answer}")
            return False
        self.anomalies.append(f"the client gave up sending {payload} to {iid}")
        return False

    def control(self, workflow: str, iid: str, kind: str, from_step: str) -> bool:
        """Send a control operation; True once it was done (by this attempt or an earlier)."""
        path = f"/workflows/{workflow}/instances/{iid}"
        if kind == "delete":
            return self._until_done("DELETE", path, None, {200}, f"deleting {iid}", {404})
        body: dict[str, Any] = {"status": "restart"}
        done_before = {409}
        if kind == "terminate_rollback":
            body = {"status": "terminate", "rollback": True}
        elif kind == "restart_from":
            body["from_step"] = {"name": from_step}
            # a restart is not idempotent: retried after one that was done but not answered,
            # the step may be gone from the new generation (it kept nothing from there on)
            done_before.add(400)
        what = f"{kind} of {iid}"
        return self._until_done("PATCH", f"{path}/status", body, {200}, what, done_before)

    def _until_done(
        self, method: str, path: str, body: Any, ok: set[int], what: str, done_before: set[int]
    ) -> bool:
        """Send until it is done: ``ok``, or ``done_before`` after a failed attempt."""
        failed = False
        for attempt in range(1, CLIENT_ATTEMPTS + 1):
            status, answer = self.api(method, path, body)
            if status in ok or (status in done_before and failed):
                self.answers.append(f"{what}: {status} on attempt {attempt}")
                return True
            if status is None or status >= 500:
                failed = True
                continue
            self.anomalies.append(f"{what} answered {status}: {answer}")
            return False
        self.anomalies.append(f"the client gave up {what}")
        return False

    def api(
        self,
        method: str,
        path: str,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        skewed: bool = False,
    ) -> tuple[int | None, Any]:
        """One API request; None when the container died (API Gateway answers 502)."""
        invocation = self.world.faults.begin("api")
        container = "api-skewed" if skewed else "api"
        try:
            response = self.call(
                container, lambdas.api, lambdas.api_event(method, path, body, headers), None
            )
        except Crash:
            return None, None
        except BaseException as exc:
            self.anomalies.append(f"exception escaped the API handler ({method} {path}): {exc!r}")
            return None, None
        finally:
            self.world.faults.end(invocation)
        status = int(response["statusCode"])
        try:
            answer = json.loads(response.get("body") or "null")
        except ValueError:
            answer = response.get("body")
        if status >= 500 and not invocation.faults:
            self.anomalies.append(
                f"{method} {path} answered {status} with no fault injected: {answer}"
            )
        return status, answer

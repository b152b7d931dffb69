"""Step configuration: ``{"retries": {"limit", "delay", "backoff"}, "timeout"}``.

Defaults are Cloudflare's: 5 retries (6 attempts), 10 seconds delay, exponential backoff,
10 minutes timeout per attempt. Unknown keys are an error, so a typo never silently falls
back to a default.

``retries.delay`` is a duration or a *delay function* ``(ctx, error) -> duration``, called once
per failed attempt that will be retried; either way the delay is multiplied by the backoff.

``{"sensitive": "output"}`` marks the step's result as sensitive: ``run()`` gets it and it is
journaled as usual, but the status, the timeline and the API show ``"[REDACTED]"`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from .durations import parse_duration
from .errors import InvalidStepError
from .immutable import immutable

MAX_RETRY_LIMIT = 10_000
BACKOFFS = ("constant", "linear", "exponential")
SENSITIVE = "output"  # the one thing a step can mark sensitive: ``{"sensitive": "output"}``
# Delays are kept to the microsecond: float noise (3 × 0.2 = 0.6000000000000001) must not show
# in recorded retry times, and no clock here resolves finer.
DELAY_DIGITS = 6

DelayFunction = Callable[[Any, Exception], Any]
"""``retries.delay`` as a function: ``(ctx, error) -> duration`` (sync or async), where ``ctx``
is the failed attempt's StepContext and ``error`` the exception it raised."""


@immutable
class RetryConfig:
    """How a failing step is retried.

    ``delay`` is seconds, or a :data:`DelayFunction` evaluated once per failed attempt that is
    retried (its result is recorded with the attempt, so a replay never calls it again).
    """

    limit: int = 5
    delay: float | DelayFunction = 10.0
    backoff: str = "exponential"

    def delay_before(self, attempt: int, delay: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one.

        constant: delay; linear: delay·n; exponential: delay·2^(n-1).

        Args:
            attempt: the attempt that failed.
            delay: the base delay in seconds: what the delay function returned for this
                attempt; needed when ``self.delay`` is a function, else the fixed delay.

        Raises:
            ValueError: ``self.delay`` is a function and no ``delay`` was given.
        """
        if delay is None:
            if callable(self.delay):
                raise ValueError("a delay function's delay is computed per attempt; pass it")
            delay = self.delay
        if self.backoff == "constant":
            factor = 1.0
        elif self.backoff == "linear":
            factor = float(attempt)
        else:
            factor = float(2 ** (attempt - 1))
        return round(delay * factor, DELAY_DIGITS)


@immutable
class StepConfig:
    """A validated step configuration (``ctx.config``).

    ``sensitive``: the step's output is shown as ``"[REDACTED]"`` outside ``run()``.
    """

    retries: RetryConfig = RetryConfig()
    timeout: float = 600.0
    sensitive: bool = False

    def to_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "retries": {
                "limit": self.retries.limit,
                "delay": self.retries.delay,
                "backoff": self.retries.backoff,
            },
            "timeout": self.timeout,
        }
        if self.sensitive:
            config["sensitive"] = SENSITIVE
        return config


DEFAULT_CONFIG = StepConfig()


def parse_config(raw: Any) -> StepConfig:
    """Validate a user's step config; raise InvalidStepError naming the bad key or value."""
    if raw is None:
        return DEFAULT_CONFIG
    if isinstance(raw, StepConfig):
        return raw
    if not isinstance(raw, Mapping):
        raise InvalidStepError(
            f"step config must be a dict like {{'retries': {{'limit': 3}}, 'timeout': "
            f"'1 minute'}}, not {type(raw).__name__}"
        )
    _reject_unknown(raw, {"retries", "timeout", "sensitive"}, "step config")
    retries = DEFAULT_CONFIG.retries
    if "retries" in raw:
        retries = _parse_retries(raw["retries"])
    timeout = DEFAULT_CONFIG.timeout
    if "timeout" in raw:
        timeout = parse_duration(raw["timeout"], what="step timeout")
        if timeout <= 0:
            raise InvalidStepError("step timeout must be greater than zero")
    sensitive = "sensitive" in raw and _parse_sensitive(raw["sensitive"])
    return StepConfig(retries=retries, timeout=timeout, sensitive=sensitive)


def parse_rollback_config(raw: Any, step: str) -> StepConfig:
    """Validate a step's ``rollback_config``: ``retries`` and ``timeout`` only, with the same
    defaults as a step's (Cloudflare's: a rollback does not inherit its step's config).

    Raises:
        InvalidStepError: not a dict, an unknown key (``sensitive`` included), a bad value.
    """
    if raw is None:
        return DEFAULT_CONFIG
    if not isinstance(raw, Mapping):
        raise InvalidStepError(
            f"rollback_config of step {step!r} must be a dict like {{'retries': {{'limit': 3}}, "
            f"'timeout': '1 minute'}}, not {type(raw).__name__}"
        )
    _reject_unknown(raw, {"retries", "timeout"}, f"rollback_config of step {step!r}")
    return parse_config(raw)


def _parse_sensitive(raw: Any) -> bool:
    if not (isinstance(raw, str) and raw == SENSITIVE):
        raise InvalidStepError(
            f"step config 'sensitive' must be {SENSITIVE!r} (the step's output is then shown "
            f'as "[REDACTED]" in status and timeline), got {raw!r}; leave the key out for '
            "a step whose output may be shown"
        )
    return True


def _parse_retries(raw: Any) -> RetryConfig:
    if not isinstance(raw, Mapping):
        raise InvalidStepError(
            f"retries must be a dict with keys limit, delay, backoff, not {type(raw).__name__}"
        )
    _reject_unknown(raw, {"limit", "delay", "backoff"}, "retries")
    base = DEFAULT_CONFIG.retries
    limit = raw.get("limit", base.limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_RETRY_LIMIT:
        raise InvalidStepError(
            f"retries.limit must be an integer from 0 to {MAX_RETRY_LIMIT:,}, got {limit!r}"
        )
    delay = raw.get("delay", base.delay)
    if not callable(delay):
        delay = _fixed_delay(delay)
    backoff = raw.get("backoff", base.backoff)
    if backoff not in BACKOFFS:
        raise InvalidStepError(
            f"retries.backoff must be one of {', '.join(BACKOFFS)}, got {backoff!r}"
        )
    return RetryConfig(limit=limit, delay=delay, backoff=backoff)


def _fixed_delay(raw: Any) -> float:
    if not isinstance(raw, str | int | float | timedelta):
        raise InvalidStepError(
            "retries.delay must be a duration (a string like '10 seconds', a timedelta or a "
            "number of seconds) or a function (ctx, error) -> duration, not "
            f"{type(raw).__name__}"
        )
    return parse_duration(raw, what="retries.delay")


def _reject_unknown(raw: Mapping[Any, Any], known: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in raw if key not in known)
    if unknown:
        raise InvalidStepError(
            f"unknown key(s) {', '.join(map(repr, unknown))} in {where}; allowed: "
            f"{', '.join(sorted(known))}"
        )

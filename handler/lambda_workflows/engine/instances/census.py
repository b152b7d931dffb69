"""How many instances of a workflow have each status, and how many unfinished ones run on each
version: what ``describe`` (``GET /workflows/{name}``) and the workflow list show.

**Bounded.** A workflow keeps its finished instances for their retention (30 days by
default), so a busy one holds millions of them, and counting them one listing page after
another would outlast the API's 29 seconds (and read every one). So a census reads at most
:data:`CENSUS_LIMIT` instances a walk:

1. One walk of the workflow's whole listing, newest first. Every instance has exactly one
   status, so when the walk reaches the end (the common case) every count is exact, from as
   few requests as a listing of the workflow costs; one count per status would read the same
   entries in as many requests again per status.
2. Only when that walk stopped at the limit: each unfinished status is walked on its own
   listing (also bounded), so the counts that matter for operating the workflow, what is in
   flight and on which version (an old version can be removed once none of its instances is
   in flight), stay exact however many finished instances are kept, within a bound on the
   pages a walk reads: :data:`CENSUS_PAGES`. A store may answer a status-filtered page short
   (DynamoDB reads a bounded number of entries a page, since its listing index projects no
   status), so a walk of a rare status among many finished instances stops after that many
   pages, and its count is then a lower bound too. The finished statuses keep what the first
   walk saw among the newest instances: lower bounds.

Every count that is a lower bound is named in :attr:`Census.at_least`; the API shows them as
``instances_at_least``, the CLI and the dashboard as ``5000+``. A version's in-flight count is
a lower bound when an unfinished status is named there.
"""

from __future__ import annotations

from lambda_workflows.engine.immutable import immutable
from lambda_workflows.engine.model import FINISHED, InstanceStatus

from .ports import InstanceStore

__all__ = ["CENSUS_LIMIT", "CENSUS_PAGES", "Census", "take_census"]

CENSUS_LIMIT = 5_000
"""Instances one walk of a census reads at most (a few seconds of Queries on DynamoDB)."""

CENSUS_PAGES = 20
"""Pages one walk of a census reads at most: on DynamoDB, a status-filtered page reads at most
1,000 entries (:data:`lambda_workflows.aws.instance_listing.FILTERED_READ` or the page's limit),
so a walk reads at most 20,000 items, a few seconds of requests."""

_PAGE = 1000  # the largest page a store lists
UNFINISHED = tuple(
    s for s in InstanceStatus if s not in FINISHED and s is not InstanceStatus.UNKNOWN
)


@immutable
class Census:
    """The counts of one workflow's instances (see the module's docstring)."""

    by_status: dict[InstanceStatus, int]
    """Instances with each status (statuses with none are left out)."""
    in_flight: dict[str, int]
    """Unfinished instances on each version."""
    at_least: frozenset[InstanceStatus] = frozenset()
    """The statuses whose count is a lower bound (empty: every count is exact)."""


def take_census(store: InstanceStore, workflow: str) -> Census:
    """Count ``workflow``'s instances, reading at most :data:`CENSUS_LIMIT` instances a walk."""
    most = CENSUS_LIMIT
    whole = _walk(store, workflow, None, most)
    if not whole.at_least:
        return whole
    by_status = {s: n for s, n in whole.by_status.items() if s in FINISHED}
    in_flight: dict[str, int] = {}
    at_least = set(FINISHED)
    for status in UNFINISHED:
        part = _walk(store, workflow, status, most)
        by_status[status] = part.by_status.get(status, 0)
        for version, count in part.in_flight.items():
            in_flight[version] = in_flight.get(version, 0) + count
        at_least |= part.at_least
    return Census({s: n for s, n in by_status.items() if n}, in_flight, frozenset(at_least))


def _walk(store: InstanceStore, workflow: str, status: InstanceStatus | None, most: int) -> Census:
    """The counts of one listing (every instance, or those with ``status``), stopping once
    ``most`` were read or after :data:`CENSUS_PAGES` pages: then every status the listing
    holds is a lower bound."""
    by_status: dict[InstanceStatus, int] = {}
    in_flight: dict[str, int] = {}
    cursor: str | None = None
    seen = pages = 0
    while True:
        page = store.list_instances(workflow, status, cursor, max(1, min(_PAGE, most - seen)))
        for record in page.records:
            by_status[record.status] = by_status.get(record.status, 0) + 1
            if record.status not in FINISHED:
                version = record.workflow_version
                in_flight[version] = in_flight.get(version, 0) + 1
        seen += len(page.records)
        pages += 1
        cursor = page.cursor
        if cursor is None:
            return Census(by_status, in_flight)
        if seen >= most or pages >= CENSUS_PAGES:
            unread = frozenset(InstanceStatus) - {InstanceStatus.UNKNOWN}
            return Census(by_status, in_flight, unread if status is None else frozenset({status}))

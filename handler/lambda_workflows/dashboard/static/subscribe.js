// Follow an instance through its subscription (GET …/subscribe): long polls that each wait up
// to 20 s for the instance's next events, so a page learns what happens as it happens without
// reading the instance's whole status again. A failed request is tried again, later each time
// (doubling, up to `failingMax`); a 404 (the instance is gone) ends it.

import { api, paths } from "./api.js";

export const WAIT_SECONDS = 20;

/**
 * Call `onPage(page)` (async) with each answer that has news of the instance: new events (from
 * its first, or after `cursor`), or a status that moved (`page.status`), until it finishes or
 * `stop()` is called. `onProblem(error)` is told of a failed request (null once one succeeds
 * again). Returns {stop}.
 */
export function subscription(workflow, id, { onPage, onProblem, cursor = null, failingMax = 30000 }) {
  const aborter = new AbortController();
  let stopped = false;

  async function follow() {
    let failures = 0;
    let status = null;
    while (!stopped) {
      let page;
      try {
        page = await api("GET", paths.subscribe(workflow, id, { cursor, wait: WAIT_SECONDS }), undefined, { signal: aborter.signal });
      } catch (error) {
        if (stopped || error.name === "AbortError") return;
        onProblem(error);
        if (error.status === 404) return; // gone (or never was): nothing to follow
        failures += 1;
        await pause(Math.min(failingMax, 1000 * 2 ** failures));
        continue;
      }
      if (failures) onProblem(null);
      failures = 0;
      cursor = page.cursor;
      const news = page.events.length || page.status !== status;
      status = page.status;
      if (news && !stopped) await onPage(page);
      if (page.finished) return;
    }
  }

  function pause(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  follow();
  return {
    stop() {
      stopped = true;
      aborter.abort();
    },
  };
}

// What an event says of the instance's status, for the events that move it.
const STATUS_AFTER = {
  "instance.queued": "queued",
  "instance.started": "running",
  "instance.paused": "paused",
  "instance.resumed": "queued",
  "instance.complete": "complete",
  "instance.errored": "errored",
  "instance.terminated": "terminated",
  "step.started": "running",
  "rollback.started": "running",
  "step.retrying": "waiting",
  "sleep.started": "waiting",
  "wait.started": "waiting",
  "child.started": "waiting",
  "sleep.finished": "running",
  "wait.completed": "running",
  "wait.timed_out": "running",
  "child.completed": "running",
  "child.failed": "running",
};

const FINAL = new Set(["complete", "errored", "terminated"]);

/** The instance (an instance's answer) as a subscription's `page` leaves it: its events'
 * status, wake-up, output and error, then the status the page read (the truth: some moves are
 * no event). */
export function applyPage(instance, page) {
  const next = applyEvents(instance, page.events);
  if (page.status !== next.status) next.wake_at = null;
  next.status = page.status;
  return next;
}

function applyEvents(instance, events) {
  const next = { ...instance };
  for (const event of events) {
    const status = STATUS_AFTER[event.type];
    if (!status || (FINAL.has(next.status) && !event.type.startsWith("instance."))) continue;
    next.status = status;
    next.wake_at = event.wake_at || event.timeout_at || event.retry_at || null;
    if (FINAL.has(status)) {
      next.finished = event.timestamp;
      next.wake_at = null;
      if (status === "complete") next.output = event.output;
      if (event.error) next.error = { ...event.error, traceback: next.error?.traceback };
    } else if (event.type === "instance.queued") {
      next.finished = null;
      next.output = null;
      next.error = null;
    }
  }
  return next;
}

/** Whether `events` change the step timeline (anything but the instance's own transitions). */
export function changesSteps(events) {
  return events.some((event) => !event.type.startsWith("instance."));
}

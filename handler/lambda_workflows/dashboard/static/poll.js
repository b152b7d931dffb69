// Refresh a live page without a refresh storm: every `interval` while the tab is visible,
// backing off (doubling, up to `hiddenMax`) while it is hidden or while the API fails, and
// at once when the tab shows again.

/**
 * Poll `load` (async; resolves true while there is more to watch, false to stop).
 * Returns {now, stop}: `now()` loads at once (after an action), `stop()` ends polling.
 */
export function poller(load, { interval = 2000, hiddenMax = 60000, failingMax = 30000 } = {}) {
  let timer = null;
  let delay = interval;
  let failures = 0;
  let running = false;
  let again = false;
  let stopped = false;

  async function tick() {
    timer = null;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    let more = true;
    try {
      more = await load();
      failures = 0;
    } catch {
      failures += 1; // the page shows the error; keep trying, slower
    }
    running = false;
    if (stopped) return;
    if (again) {
      again = false;
      tick();
      return;
    }
    if (more) schedule();
  }

  function schedule() {
    if (document.hidden) delay = Math.min(hiddenMax, Math.max(interval, delay) * 2);
    else if (failures) delay = Math.min(failingMax, interval * 2 ** failures);
    else delay = interval;
    timer = setTimeout(tick, delay);
  }

  function now() {
    if (timer !== null) clearTimeout(timer);
    delay = interval;
    tick();
  }

  function visibility() {
    if (!document.hidden && timer !== null) now();
  }

  document.addEventListener("visibilitychange", visibility);
  return {
    now,
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      document.removeEventListener("visibilitychange", visibility);
    },
  };
}

// One instance: its status with the reason, params, output, error, the step timeline, and
// the controls (pause, resume, terminate, restart, send an event), each confirmed first.
// The page reads the instance once, then follows it through its subscription (subscribe.js):
// each batch of new events updates the status from the events themselves and, when steps
// moved, the timeline (GET …/steps); the whole status is never read again while it is open.
//
// The API's answer carries the first page of a long timeline (1,000 rows at most) with
// steps_total and steps_cursor: the count says "1000 of 25000" and "Load more steps" appends
// the next page (GET …/steps?cursor=). Loaded pages stay while the first page ends where it
// did; when the events say steps moved, the last one is read again, so new rows show.

import { api, paths, FINISHED } from "./api.js";
import { badge, duration, h, ms, pretty, when } from "./dom.js";
import { confirmAction } from "./confirm.js";
import { doneBox, errorBox } from "./notice.js";
import { applyPage, changesSteps, subscription } from "./subscribe.js";
import { createTimeline } from "./timeline.js";

const ACTIONS = {
  pause: {
    label: "Pause",
    question: "Pause this instance?",
    detail: "A running step finishes first; nothing new starts until it is resumed.",
    allowed: (s) => ["queued", "running", "waiting"].includes(s),
  },
  resume: {
    label: "Resume",
    question: "Resume this instance?",
    detail: "It goes on where it stopped; pending sleeps and retry delays move by the time it was paused.",
    allowed: (s) => ["paused", "waitingForPause"].includes(s),
  },
  terminate: {
    label: "Terminate",
    question: "Terminate this instance?",
    detail: "It stops for good: it can only be restarted from the top, not resumed.",
    allowed: (s) => !FINISHED.has(s),
    danger: true,
  },
  restart: {
    label: "Restart",
    question: "Restart this instance from the top?",
    detail: "run() starts again with the same id and params; every step runs again.",
    allowed: () => true,
    danger: true,
  },
};

/** Render the instance into `main`; returns a function that stops following it. */
export function renderInstance(main, workflow, id) {
  const view = layout(workflow, id);
  main.append(view.node);
  let following = null;
  let stopped = false;

  async function load() {
    try {
      view.instance = await api("GET", paths.instance(workflow, id));
      await readLastPageAgain(view, workflow, id, view.instance);
    } catch (error) {
      view.problem.replaceChildren(errorBox(error));
      if (error.status !== 404 && !stopped) setTimeout(load, 2000); // gone: nothing to watch
      return;
    }
    view.problem.replaceChildren();
    show(view, view.instance);
    follow();
  }

  /** Follow the instance while it is live (a finished one changes no more, until restarted). */
  function follow() {
    if (stopped || following || FINISHED.has(view.instance.status)) return;
    following = subscription(workflow, id, { onPage, onProblem });
  }

  async function onPage(page) {
    let instance = applyPage(view.instance, page);
    if (changesSteps(page.events)) instance = await readSteps(view, workflow, id, instance);
    view.instance = instance;
    show(view, instance);
    if (page.finished) following = null; // it ended its long polls
  }

  function onProblem(error) {
    view.problem.replaceChildren(...(error ? [errorBox(error)] : []));
  }

  wireControls(view, workflow, id, follow);
  view.more.addEventListener("click", () => loadMore(view, workflow, id));
  load();
  return () => {
    stopped = true;
    following?.stop();
  };
}

/** The instance with its timeline's first page read again (and the last page loaded past it,
 * see readLastPageAgain). */
async function readSteps(view, workflow, id, instance) {
  const page = await api("GET", paths.steps(workflow, id));
  const read = { ...instance, steps: page.steps, steps_cursor: page.cursor ?? undefined };
  read.steps_total = page.cursor ? page.total : undefined;
  await readLastPageAgain(view, workflow, id, read);
  return read;
}

/** Keep the pages loaded past the first while it ends where it did (else drop them); read the
 * last of them again while the instance is live, and once after it finished. */
async function readLastPageAgain(view, workflow, id, instance) {
  const pages = view.pages;
  if ((instance.steps_cursor ?? null) !== pages.after) {
    pages.after = instance.steps_cursor ?? null;
    pages.loaded = [];
    return;
  }
  const last = pages.loaded.at(-1);
  if (!last || last.final) return;
  const final = FINISHED.has(instance.status);
  try {
    const page = await api("GET", paths.steps(workflow, id, { cursor: last.cursor }));
    pages.loaded[pages.loaded.length - 1] = { cursor: last.cursor, steps: page.steps, next: page.cursor, total: page.total, final };
  } catch (error) {
    if (error.status !== 400) throw error;
    pages.loaded = []; // a stale cursor: restarted meanwhile, the first page starts again
  }
}

async function loadMore(view, workflow, id) {
  const pages = view.pages;
  const cursor = pages.loaded.length ? pages.loaded.at(-1).next : pages.after;
  if (!cursor || !view.instance) return;
  view.more.disabled = true;
  try {
    const page = await api("GET", paths.steps(workflow, id, { cursor }));
    const final = FINISHED.has(view.instance.status);
    pages.loaded.push({ cursor, steps: page.steps, next: page.cursor, total: page.total, final });
    view.problem.replaceChildren();
    show(view, view.instance);
  } catch (error) {
    view.problem.replaceChildren(errorBox(error));
    if (error.status === 400) pages.loaded = []; // a stale cursor: load from the first page
  } finally {
    view.more.disabled = false;
  }
}

function layout(workflow, id) {
  const field = (label, cls) => {
    const value = h("dd", { class: cls }, "\u00a0");
    return { node: [h("dt", null, label), value], value };
  };
  const f = {
    status: field("Status", "status-cell"),
    reason: field("Why", "reason"),
    created: field("Created (UTC)", "time"),
    finished: field("Finished (UTC)", "time"),
    took: field("Duration", "time"),
    wake: field("Next wake-up (UTC)", "time"),
  };
  const buttons = Object.entries(ACTIONS).map(([action, spec]) =>
    h("button", { type: "button", class: spec.danger ? "danger" : null, "data-action": action, disabled: true }, spec.label),
  );
  const eventType = h("input", { id: "event-type", name: "type", required: true, autocomplete: "off", spellcheck: "false", placeholder: "event type", oninput: () => { eventType.dataset.touched = "1"; } });
  const payload = h("textarea", { id: "event-payload", name: "payload", rows: 2, spellcheck: "false" }, "{}");
  const send = h("button", { type: "submit", id: "send-event", disabled: true }, "Send event");
  const eventForm = h("form", { class: "event-form", "aria-labelledby": "event-title" },
    h("h2", { id: "event-title" }, "Send an event"),
    h("label", { for: "event-type" }, "Type"), eventType,
    h("label", { for: "event-payload" }, "Payload (JSON)"), payload,
    h("div", { class: "send" }, send),
  );
  const result = h("div", { class: "result-slot", "aria-live": "polite" });
  const problem = h("div", { class: "problem-slot" });
  const data = h("section", { class: "data", "aria-label": "Params, output and error" }, h("p", { class: "muted" }, "\u00a0"));
  const timeline = createTimeline();
  const stepCount = h("span", { class: "muted" }, "");
  const more = h("button", { type: "button", class: "load-more", hidden: true }, "Load more steps");
  const live = h("span", { class: "live muted", "aria-live": "off" }, "\u00a0");
  const node = h("div", { class: "instance", "data-workflow": workflow, "data-instance": id },
    h("div", { class: "page-head" }, h("h1", { tabindex: "-1" }, "Instance ", h("span", { class: "mono" }, id)), live),
    problem,
    h("div", { class: "overview" },
      h("section", { class: "facts", "aria-label": "Status" }, h("dl", null, Object.values(f).map((x) => x.node))),
      data,
      h("section", { class: "controls", "aria-labelledby": "controls-title" },
        h("h2", { id: "controls-title" }, "Controls"), h("div", { class: "buttons" }, buttons), eventForm, result),
    ),
    h("section", { class: "steps", "aria-labelledby": "steps-title" }, h("h2", { id: "steps-title" }, "Steps ", stepCount), timeline.node,
      h("div", { class: "steps-more" }, more)),
  );
  const pages = { after: null, loaded: [] }; // the pages loaded past the first
  return { node, f, buttons, eventForm, eventType, payload, send, result, problem, data, timeline, stepCount, more, pages, live };
}

function show(view, answer) {
  const { f } = view;
  const instance = withLoadedSteps(view, answer);
  f.status.value.replaceChildren(badge(instance.status));
  f.reason.value.textContent = reason(instance);
  f.created.value.textContent = when(instance.created);
  f.finished.value.textContent = when(instance.finished);
  const created = ms(instance.created);
  const finished = ms(instance.finished);
  f.took.value.textContent = created !== null && finished !== null ? duration(finished - created) : "—";
  f.wake.value.textContent = when(instance.wake_at);
  view.live.textContent = FINISHED.has(instance.status) ? "finished" : "live: following";
  for (const button of view.buttons) button.disabled = !ACTIONS[button.dataset.action].allowed(instance.status);
  view.send.disabled = FINISHED.has(instance.status);
  const awaited = (instance.steps || []).find((s) => s.type === "waitForEvent" && s.status === "waiting");
  if (awaited?.event_type && !view.eventType.dataset.touched) view.eventType.value = awaited.event_type;
  const shown = JSON.stringify([instance.status, instance.params, instance.output, instance.error, instance.rollback]);
  if (view.shown !== shown) {
    view.shown = shown; // redrawn only when changed: an open traceback stays open
    view.data.replaceChildren(...dataBlocks(instance));
  }
  const rows = instance.steps.length;
  view.stepCount.textContent = instance.more ? `(${rows} of ${instance.total})` : `(${rows})`;
  view.more.hidden = !instance.more;
  if (view.timeline.update(instance) && !view.painted) {
    view.painted = true;
    // after the first full draw has been painted: what `make bench` times
    requestAnimationFrame(() => setTimeout(() => performance.mark("workflows:timeline-painted")));
  }
}

/** The instance with the rows of every page loaded past its first, how many rows its
 * timeline has (`total`) and whether a page is left to load (`more`). */
function withLoadedSteps(view, instance) {
  const loaded = view.pages.loaded;
  const steps = [...(instance.steps || []), ...loaded.flatMap((page) => page.steps)];
  const last = loaded.at(-1);
  const more = last ? last.next : instance.steps_cursor;
  const total = last ? last.total : instance.steps_total ?? steps.length;
  return { ...instance, steps, more: Boolean(more), total };
}

function reason(instance) {
  const steps = instance.steps || [];
  if (instance.error) return `${instance.error.name}: ${instance.error.message}`;
  if (instance.rollback?.status === "running") return `rolling back; it ends ${instance.rollback.ends_as}`;
  const pending = steps.find((s) => s.status === "waiting" || s.status === "retrying");
  if (instance.status === "waiting" && pending) {
    if (pending.type === "waitForEvent") return `waiting for an event of type "${pending.event_type ?? "?"}"`;
    if (pending.type === "sleep") return `sleeping until ${when(pending.wake_at || pending.end)}`;
    if (pending.type === "runWorkflow") return `waiting for child workflow ${pending.child?.workflow ?? "?"} ${pending.child?.id ?? ""}`;
    return `waiting to retry step "${pending.name}" (attempt ${pending.attempts} failed)`;
  }
  const why = {
    queued: "queued: a runner will pick it up",
    running: "running",
    waiting: "waiting",
    paused: "paused: resume it to go on",
    waitingForPause: "pausing: the running step finishes first",
    complete: "complete",
    terminated: "terminated",
  };
  return why[instance.status] || instance.status;
}

function dataBlocks(instance) {
  const blocks = [];
  if ("params" in instance) blocks.push(block("Params", pretty(instance.params)));
  if (instance.output !== null && instance.output !== undefined) blocks.push(block("Output", pretty(instance.output), "output"));
  if (instance.rollback) blocks.push(rollbackBlock(instance.rollback));
  if (instance.error) {
    const error = instance.error;
    blocks.push(h("section", { class: "block error" }, h("h3", null, "Error"),
      h("pre", { class: "error-text" }, `${error.name}: ${error.message}`),
      error.traceback ? h("details", { class: "traceback" }, h("summary", null, "Traceback"), h("pre", null, error.traceback)) : null,
    ));
  }
  if (!blocks.length) blocks.push(h("p", { class: "muted" }, FINISHED.has(instance.status) ? "No output." : "No output yet."));
  return blocks;
}

function rollbackBlock(rollback) {
  const failed = rollback.failed_step ? ` at "${rollback.failed_step.name}" #${rollback.failed_step.count}` : "";
  return h("section", { class: "block rollback" }, h("h3", null, "Rollback"),
    h("p", null, `${rollback.status}${failed}; the instance ends ${rollback.ends_as}. Cause: ${rollback.cause.name}: ${rollback.cause.message}`),
    rollback.error ? h("pre", { class: "error-text" }, `${rollback.error.name}: ${rollback.error.message}`) : null,
    rollback.error?.traceback ? h("details", { class: "traceback" }, h("summary", null, "Traceback"), h("pre", null, rollback.error.traceback)) : null,
  );
}

function block(title, text, cls) {
  return h("section", { class: `block ${cls || ""}` }, h("h3", null, title), h("pre", null, text));
}

function wireControls(view, workflow, id, follow) {
  for (const button of view.buttons) {
    button.addEventListener("click", async () => {
      const action = button.dataset.action;
      const spec = ACTIONS[action];
      if (!(await confirmAction(spec.question, `${id}: ${spec.detail}`, spec.label))) return;
      const answer = await act(view, () => api("PATCH", paths.status(workflow, id), { status: action }), (done) => `${spec.label}: the instance is now ${done.status}.`);
      if (answer && view.instance) {
        view.instance = { ...view.instance, status: answer.status }; // its events follow
        show(view, view.instance);
        follow(); // restarted: live again
      }
    });
  }
  view.eventForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const type = view.eventType.value.trim();
    let payload;
    try {
      payload = view.payload.value.trim() ? JSON.parse(view.payload.value) : null;
    } catch (error) {
      view.result.replaceChildren(errorBox({ status: 0, code: "invalid_json", message: `The payload is not JSON (${error.message}); nothing was sent.` }));
      view.payload.focus();
      return;
    }
    if (!type) return;
    const shown = JSON.stringify(payload);
    const detail = `${id} gets an event of type "${type}" with the payload ${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}.`;
    if (!(await confirmAction("Send this event?", detail, "Send event"))) return;
    await act(view, () => api("POST", paths.event(workflow, id, type), view.payload.value.trim() ? view.payload.value : "null"), (answer) => `Event "${answer.type}" accepted (event id ${answer.event_id}).`);
  });
}

async function act(view, call, said) {
  view.result.replaceChildren();
  try {
    const answer = await call();
    view.result.replaceChildren(doneBox(said(answer)));
    return answer;
  } catch (error) {
    view.result.replaceChildren(errorBox(error));
    return null;
  }
}

// The step timeline: one row per step (name, type, status, attempts, start, end) with its bar
// on a shared time axis. A row opens (click, Enter, Space) to show its attempts with their
// errors and tracebacks, a sleep's wake time, a wait's event type and received payload.
//
// Drawn for 1,000+ steps: every row is built into one DocumentFragment and attached at once,
// nothing reads layout while building, bar positions are percentages, off-screen rows skip
// rendering (content-visibility in the style sheet), and a row's details are built only when
// it is opened. An unchanged answer from a poll draws nothing.

import { clock, duration, h, ms, pretty } from "./dom.js";

const TYPE_LABEL = { do: "do", sleep: "sleep", waitForEvent: "waitForEvent", runWorkflow: "runWorkflow", rollback: "rollback" };

/** A timeline element; `update(instance)` draws the instance's steps into it. */
export function createTimeline() {
  const axis = h("div", { class: "axis", "aria-hidden": "true" });
  const head = h("div", { class: "tl-head" },
    h("span", { class: "c-name" }, "Step"), h("span", { class: "c-type" }, "Type"), h("span", { class: "c-status" }, "Status"),
    h("span", { class: "c-attempts" }, "Attempts"), h("span", { class: "c-start" }, "Start (UTC)"), h("span", { class: "c-end" }, "End (UTC)"),
    h("span", { class: "c-track" }, axis),
  );
  const rows = h("div", { class: "tl-rows" }, placeholder(3));
  const node = h("div", { class: "timeline", "aria-busy": "true" }, head, rows);
  let drawn = null;
  let steps = [];
  const where = { instance: "" }; // the instance's API path, for links to whole outputs

  rows.addEventListener("toggle", (event) => {
    const row = event.target;
    if (row.open && !row.dataset.built) buildBody(row, steps[Number(row.dataset.index)], where);
  }, true);
  rows.addEventListener("keydown", (event) => moveFocus(rows, event));

  function update(instance) {
    const signature = JSON.stringify([instance.status, instance.steps]);
    if (signature === drawn) return false;
    const first = drawn === null;
    drawn = signature;
    const open = new Set([...rows.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    const focused = document.activeElement?.closest?.(".step")?.dataset.key;
    steps = instance.steps || [];
    where.instance = `/workflows/${encodeURIComponent(instance.workflow)}/instances/${encodeURIComponent(instance.id)}`;
    const scale = timeScale(instance, steps);
    axis.replaceChildren(...ticks(scale));
    const fragment = document.createDocumentFragment();
    for (let i = 0; i < steps.length; i++) {
      const row = stepRow(steps[i], i, scale);
      if (open.has(row.dataset.key) || (first && opensByItself(steps[i]))) row.open = true;
      fragment.append(row);
    }
    if (!steps.length) fragment.append(h("p", { class: "muted empty" }, "No step has run yet."));
    rows.replaceChildren(fragment);
    for (const row of rows.querySelectorAll("details[open]")) buildBody(row, steps[Number(row.dataset.index)], where);
    if (focused) rows.querySelector(`details[data-key="${CSS.escape(focused)}"] > summary`)?.focus({ preventScroll: true });
    node.removeAttribute("aria-busy");
    node.dataset.rows = String(steps.length);
    return true;
  }

  return { node, update };
}

function opensByItself(step) {
  return step.status === "errored" || step.status === "retrying";
}

/** The axis: from the first known time to the last (the dev server skips idle time, so the
 * browser's clock says nothing about the instance's: only recorded times are used). */
function timeScale(instance, steps) {
  let lo = ms(instance.created);
  let hi = ms(instance.finished);
  for (const step of steps) {
    for (const t of [ms(step.start), ms(step.end), ms(step.wake_at)]) {
      if (t === null) continue;
      if (lo === null || t < lo) lo = t;
      if (hi === null || t > hi) hi = t;
    }
    for (const attempt of step.attempt_history || []) {
      const t = ms(attempt.end);
      if (t !== null && (hi === null || t > hi)) hi = t;
    }
  }
  if (lo === null) lo = 0;
  if (hi === null || hi <= lo) hi = lo + 1;
  return { lo, hi, span: hi - lo };
}

function at(scale, t) {
  return ((t - scale.lo) / scale.span) * 100;
}

function ticks(scale) {
  const step = niceStep(scale.span / 4);
  const out = [];
  for (let t = 0; t <= scale.span + 1e-9 && out.length < 8; t += step) {
    const tick = h("span", { class: "tick" }, t === 0 ? "0" : `+${duration(t)}`);
    tick.style.left = `${(t / scale.span) * 100}%`;
    out.push(tick);
  }
  return out;
}

function niceStep(raw) {
  const units = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000,
    900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000, 86400000];
  for (const unit of units) if (unit >= raw) return unit;
  return Math.ceil(raw / 86400000) * 86400000;
}

// One row's markup, cloned for every step and filled in: cheaper than building each node.
const ROW = document.createElement("template");
ROW.innerHTML = '<details class="step"><summary class="row">'
  + '<span class="c-name"><span class="name"></span><span class="note"></span></span>'
  + '<span class="c-type"></span><span class="c-status"><span class="status"></span></span>'
  + '<span class="c-attempts"></span><span class="c-start time"></span><span class="c-end time"></span>'
  + '<span class="c-track"></span></summary></details>';

function stepRow(step, index, scale) {
  // attempts left out of a long history (attempts_omitted) all failed: only the last succeeds
  const failed = (step.attempt_history || []).filter((a) => !a.success).length + (step.attempts_omitted || 0);
  const row = ROW.content.firstChild.cloneNode(true);
  row.className = `step type-${step.type} st-${step.status}`;
  row.dataset.key = `${step.count}:${step.name}`; // the count first: names may hold any character
  row.dataset.index = String(index);
  row.dataset.status = step.status;
  row.dataset.type = step.type;
  const [name, type, status, attempts, start, end, track] = row.firstChild.children;
  const [title, caption] = name.children;
  title.textContent = step.name;
  title.title = step.name;
  if (step.count > 1) title.append(h("span", { class: "count" }, ` #${step.count}`));
  caption.textContent = note(step, failed);
  type.textContent = TYPE_LABEL[step.type] || step.type;
  status.firstChild.className = `status status-${step.status}`;
  status.firstChild.textContent = step.status;
  attempts.textContent = String(step.attempts ?? 1);
  if (failed) attempts.append(h("span", { class: "failed" }, ` (${failed} failed)`));
  start.textContent = clock(step.start);
  end.textContent = step.type === "sleep" && step.status === "waiting" ? clock(step.wake_at) : clock(step.end);
  track.append(...bars(step, scale));
  return row;
}

function note(step, failed) {
  if (step.type === "waitForEvent") {
    const type = step.event_type ? `"${step.event_type}"` : "an event";
    if (step.status === "complete") return `received ${type}`;
    if (step.status === "errored") return `gave up waiting for ${type}`;
    return `awaits ${type}`;
  }
  if (step.type === "runWorkflow" && !step.error) {
    const child = step.child ? `${step.child.workflow} ${step.child.id}` : "a child workflow";
    return step.status === "complete" ? `${child} returned` : `runs ${child}`;
  }
  if (step.type === "sleep") {
    const wake = step.wake_at || step.end;
    if (!wake) return "sleeps";
    return step.status === "waiting" ? `wakes at ${clock(wake)}` : `woke at ${clock(wake)}`;
  }
  if (step.type === "rollback" && !step.error) return step.status === "complete" ? `rolled back "${step.name}"` : `rolling back "${step.name}"`;
  if (step.error) return `${step.error.name}: ${step.error.message}`;
  if (step.status === "retrying") return `retrying after ${failed} failed attempt${failed === 1 ? "" : "s"}`;
  if (failed) return `succeeded after ${failed} failed attempt${failed === 1 ? "" : "s"}`;
  return "";
}

function bars(step, scale) {
  const history = step.attempt_history || [];
  const start = ms(step.start);
  if (history.length > 1) return attemptBars(step, history, scale);
  if (start === null) return [];
  let end = ms(step.end);
  if (step.type === "sleep") end = ms(step.wake_at) ?? end;
  const open = end === null;
  const bar = span(`bar ${open ? "open" : ""}`, at(scale, start), at(scale, open ? scale.hi : end));
  bar.title = `${step.name}: ${step.status}${open ? "" : `, ${duration(end - start)}`}`;
  return [bar];
}

function attemptBars(step, history, scale) {
  const out = [];
  let previousEnd = null;
  for (const attempt of history) {
    const start = ms(attempt.start) ?? previousEnd;
    const end = ms(attempt.end);
    if (start === null || end === null) continue;
    if (previousEnd !== null && start > previousEnd) out.push(span("gap", at(scale, previousEnd), at(scale, start)));
    const bar = span(`bar ${attempt.success ? "ok" : "fail"}`, at(scale, start), at(scale, end));
    bar.title = `attempt ${attempt.attempt}: ${attempt.success ? "succeeded" : `${attempt.error?.name}: ${attempt.error?.message}`}`;
    out.push(bar);
    previousEnd = end;
  }
  if (step.status === "retrying" && previousEnd !== null) out.push(span("gap open", at(scale, previousEnd), 100));
  return out;
}

function span(className, left, right) {
  const el = document.createElement("span");
  el.className = className;
  // a bar narrower than its 3 px minimum still ends inside the track at 100%
  el.style.left = `calc(${left}% - ${(left * 0.03).toFixed(2)}px)`;
  el.style.width = `${Math.max(0, right - left)}%`;
  return el;
}

function buildBody(row, step, where) {
  if (!step) return;
  row.dataset.built = "1";
  const body = h("div", { class: "step-body" });
  if (step.type === "do" || step.type === "rollback") body.append(attemptList(step));
  if (step.type === "sleep") {
    body.append(h("p", null, `Sleeps from ${clock(step.start)} until ${clock(step.wake_at || step.end)} (${duration(ms(step.wake_at || step.end) - ms(step.start))}).`));
  }
  if (step.type === "waitForEvent") {
    body.append(h("p", null, "Awaits an event of type ", h("code", { class: "event-type" }, step.event_type || "(not recorded)"), step.status === "complete" ? ` — received at ${clock(step.end)}.` : "."));
    if (step.status === "complete") body.append(h("h4", null, "Payload"), h("pre", { class: "payload" }, pretty(step.output)));
  }
  if (step.type === "runWorkflow" && step.child) {
    const page = `#/workflows/${encodeURIComponent(step.child.workflow)}/instances/${encodeURIComponent(step.child.id)}`;
    body.append(h("p", null, "Child workflow: ", h("a", { href: page, class: "child-link" }, `${step.child.workflow} ${step.child.id}`), "."));
    if (step.status === "complete") body.append(h("h4", null, "Output"), h("pre", null, pretty(step.output)));
  }
  if (step.error) body.append(h("h4", null, "Error"), h("pre", { class: "error-text" }, `${step.error.name}: ${step.error.message}`));
  if (step.type === "do" && step.output !== null && step.output !== undefined) body.append(h("h4", null, "Output"), h("pre", null, pretty(step.output)));
  if (step.output_truncated) {
    const whole = `${where.instance}/steps/${encodeURIComponent(step.name)}?count=${step.count}`;
    body.append(h("p", { class: "muted" }, "The output is too large for this view: ", h("a", { href: whole }, "open it whole"), "."));
  }
  row.append(body);
}

function attemptList(step) {
  const history = step.attempt_history || [];
  if (!history.length) return h("p", { class: "muted" }, `${step.attempts ?? 1} attempt(s); no attempt history recorded.`);
  const items = [];
  let previousEnd = null;
  for (const attempt of history) {
    const start = ms(attempt.start);
    if (step.attempts_omitted && attempt === history[1]) { // the first attempt, then the newest
      items.push(h("li", { class: "attempts-omitted muted" }, `… ${step.attempts_omitted} more failed attempts, not shown here (the instance's history has every one)`));
      previousEnd = null;
    }
    if (previousEnd !== null && start !== null && start > previousEnd) {
      items.push(h("li", { class: "retry-delay" }, `retried after ${duration(start - previousEnd)}`));
    }
    const took = start !== null && ms(attempt.end) !== null ? duration(ms(attempt.end) - start) : "—";
    const head = `Attempt ${attempt.attempt} · ${clock(attempt.start)} → ${clock(attempt.end)} (${took}) · `;
    if (attempt.success) {
      items.push(h("li", { class: "attempt ok" }, head, "succeeded"));
    } else {
      const error = attempt.error || { name: "Error", message: "" };
      items.push(h("li", { class: "attempt fail" }, head, h("strong", null, `${error.name}: ${error.message}`),
        error.traceback ? h("details", { class: "traceback" }, h("summary", null, "Traceback"), h("pre", null, error.traceback)) : null,
      ));
    }
    previousEnd = ms(attempt.end);
  }
  return h("ol", { class: "attempts" }, items);
}

function moveFocus(rows, event) {
  const keys = { ArrowDown: 1, ArrowUp: -1, Home: "first", End: "last" };
  const move = keys[event.key];
  if (move === undefined || event.target.tagName !== "SUMMARY") return;
  const all = rows.querySelectorAll(":scope > details > summary");
  if (!all.length) return;
  const index = Array.prototype.indexOf.call(all, event.target);
  const next = move === "first" ? 0 : move === "last" ? all.length - 1 : Math.min(all.length - 1, Math.max(0, index + move));
  event.preventDefault();
  all[next].focus();
  all[next].scrollIntoView({ block: "nearest" });
}

function placeholder(n) {
  return Array.from({ length: n }, () => h("div", { class: "step placeholder", "aria-hidden": "true" }, h("div", { class: "row" }, "\u00a0")));
}

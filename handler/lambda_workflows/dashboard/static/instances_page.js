// A workflow's instances: newest first, filtered by status, a page at a time (the API's
// cursors), and a search by id.

import { api, paths, STATUSES } from "./api.js";
import { badge, duration, h, link, ms, routeTo, when } from "./dom.js";
import { errorBox } from "./notice.js";

const PAGE_SIZE = 25;
// cursors of the pages before the one shown, per workflow and status: "Newer" goes back
const trails = new Map();

/** Render the list into `main`; returns a function that stops its work. */
export function renderInstances(main, workflow, params) {
  let live = true;
  const status = params.get("status") || "";
  const cursor = params.get("cursor") || "";
  const trailKey = `${workflow}\n${status}`;
  const trail = trails.get(trailKey) || [];
  trails.set(trailKey, trail);
  if (!cursor) trail.length = 0;

  const filter = h("select", { id: "status-filter", name: "status", onchange: () => go(filter.value, "") },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s, selected: s === status }, s)),
  );
  const search = h("input", { id: "id-search", name: "id", type: "search", placeholder: "instance id", autocomplete: "off", required: true, spellcheck: "false" });
  const problem = h("div", { class: "problem-slot" });
  const body = h("tbody", null, placeholderRows(5));
  const table = h("table", { class: "instances", "aria-busy": "true" },
    h("caption", { class: "visually-hidden" }, `Instances of ${workflow}, newest first`),
    h("thead", null, h("tr", null, ["Instance", "Status", "Created (UTC)", "Finished (UTC)", "Duration"].map((c) => h("th", { scope: "col" }, c)))),
    body,
  );
  const newer = h("button", { type: "button", disabled: !cursor, onclick: () => go(status, trail.pop() || "") }, "← Newer");
  const older = h("button", { type: "button", disabled: true }, "Older →");
  const pageNote = h("span", { class: "muted page-note" }, "\u00a0");

  main.append(
    h("div", { class: "page-head" },
      h("h1", { tabindex: "-1" }, "Instances of ", h("span", { class: "mono" }, workflow)),
      link(`${routeTo(workflow)}/diagram`, "Diagram"),
    ),
    h("div", { class: "toolbar" },
      h("label", null, "Status ", filter),
      h("form", { class: "search", role: "search", onsubmit: find }, h("label", { for: "id-search" }, "Find by id "), search, h("button", { type: "submit" }, "Open")),
      h("button", { type: "button", onclick: () => load() }, "Refresh"),
    ),
    problem,
    h("div", { class: "table-wrap" }, table),
    h("div", { class: "pager" }, newer, pageNote, older),
  );

  function go(newStatus, newCursor) {
    const query = new URLSearchParams();
    if (newStatus) query.set("status", newStatus);
    if (newCursor) query.set("cursor", newCursor);
    const text = query.toString();
    location.hash = `${routeTo(workflow)}${text ? `?${text}` : ""}`;
  }

  async function find(event) {
    event.preventDefault();
    const id = search.value.trim();
    if (!id) return;
    problem.replaceChildren();
    try {
      await api("GET", paths.instance(workflow, id));
      location.hash = routeTo(workflow, id);
    } catch (error) {
      if (live) problem.replaceChildren(errorBox(error));
    }
  }

  async function load() {
    problem.replaceChildren();
    let page;
    try {
      page = await api("GET", paths.instances(workflow, { status, cursor, limit: PAGE_SIZE }));
    } catch (error) {
      if (!live) return;
      problem.replaceChildren(errorBox(error));
      body.replaceChildren();
      table.removeAttribute("aria-busy");
      return;
    }
    if (!live) return;
    const rows = page.instances.map((item) => row(workflow, item));
    // a page of a rare status may come back short, even empty, with a cursor: the listing
    // reads a bounded number of instances a page (docs/architecture.md), older pages may hold more
    const none = status ? `No ${status} instance${page.cursor ? " on this page; older pages may hold some" : ""}.` : "No instance yet.";
    body.replaceChildren(...(rows.length ? rows : [h("tr", null, h("td", { colspan: 5, class: "muted" }, none))]));
    table.removeAttribute("aria-busy");
    pageNote.textContent = `${page.instances.length} shown${trail.length ? `, page ${trail.length + 1}` : ""}`;
    older.disabled = !page.cursor;
    older.onclick = page.cursor ? () => { trail.push(cursor); go(status, page.cursor); } : null;
  }

  load();
  return () => {
    live = false;
  };
}

function row(workflow, item) {
  const created = ms(item.created);
  const finished = ms(item.finished);
  const took = created !== null && finished !== null ? duration(finished - created) : "—";
  return h("tr", { "data-instance": item.id },
    h("th", { scope: "row" }, link(routeTo(workflow, item.id), item.id)),
    h("td", null, badge(item.status)),
    h("td", { class: "time" }, when(item.created)),
    h("td", { class: "time" }, when(item.finished)),
    h("td", { class: "time" }, took),
  );
}

function placeholderRows(n) {
  return Array.from({ length: n }, () => h("tr", { class: "placeholder", "aria-hidden": "true" }, Array.from({ length: 5 }, () => h("td", null, "\u00a0"))));
}

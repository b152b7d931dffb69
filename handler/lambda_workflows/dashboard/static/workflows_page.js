// Registered workflows, each with its instances counted by status.

import { api, FINISHED, paths, STATUSES } from "./api.js";
import { h, link, routeTo } from "./dom.js";
import { errorBox } from "./notice.js";

/** Render the list into `main`; returns a function that stops its work. */
export function renderWorkflows(main) {
  let live = true;
  const list = h("ul", { class: "cards", "aria-busy": "true" }, placeholderCards(6));
  const problem = h("div", { class: "problem-slot" });
  const refresh = h("button", { type: "button", onclick: () => load() }, "Refresh");
  main.append(
    h("div", { class: "page-head" }, h("h1", { tabindex: "-1" }, "Workflows"), refresh),
    problem,
    list,
  );

  async function load() {
    problem.replaceChildren();
    let names;
    try {
      names = (await api("GET", paths.workflows())).workflows;
    } catch (error) {
      if (live) problem.replaceChildren(errorBox(error));
      list.replaceChildren();
      return;
    }
    if (!live) return;
    if (!names.length) {
      list.replaceChildren(h("li", { class: "card" }, "No workflow is registered: start the server with WORKFLOWS=name=module:Class."));
      list.removeAttribute("aria-busy");
      return;
    }
    const cards = names.map((name) => card(name));
    list.replaceChildren(...cards.map((c) => c.node));
    list.removeAttribute("aria-busy");
    await Promise.all(cards.map((c) => c.fill()));
  }

  load();
  return () => {
    live = false;
  };
}

function card(name) {
  const about = h("p", { class: "about" }, "\u00a0");
  const counts = h("p", { class: "counts" }, h("span", { class: "muted" }, "counting…"));
  const versions = h("p", { class: "versions muted" });
  const heading = h("h2", null, link(routeTo(name), name), " ", h("a", { class: "card-link", href: `${routeTo(name)}/diagram` }, "diagram"));
  const node = h("li", { class: "card", "data-workflow": name }, heading, about, counts, versions);
  async function fill() {
    let details;
    try {
      details = await api("GET", paths.workflow(name));
    } catch (error) {
      // an API without GET /workflows/{name} (404) still lists the names: counts stay unknown
      counts.replaceChildren(h("span", { class: "muted" }, error.status === 404 ? "counts not available from this API" : error.message));
      return;
    }
    about.textContent = details.description || (details.class_name ? `${details.module}.${details.class_name}` : "\u00a0");
    about.title = details.class_name ? `${details.module}.${details.class_name}` : "";
    // a busy workflow's counts can be lower bounds (the API reads a bounded number): "5000+"
    const atLeast = new Set(details.instances_at_least || []);
    const plus = (s) => (atLeast.has(s) ? "+" : "");
    const chips = STATUSES.filter((s) => details.instances?.[s]).map((s) =>
      h("a", { class: `chip status-${s}`, href: `${routeTo(name)}?status=${s}` }, `${details.instances[s]}${plus(s)} ${s}`),
    );
    const inFlightPlus = [...atLeast].some((s) => !FINISHED.has(s)) ? "+" : "";
    counts.replaceChildren(...(chips.length ? chips : [h("span", { class: "muted" }, "no instances")]));
    // several versions deployed at once: each with its instances still in flight, so you know
    // when an old one can be removed
    const deployed = details.versions || [];
    if (deployed.length > 1 || deployed.some((v) => !v.class_name)) {
      versions.textContent = "versions: " + deployed
        .map((v) => `${v.version}${v.class_name ? "" : " (not deployed)"}: ${v.in_flight}${inFlightPlus} in flight`)
        .join(" · ");
    }
  }
  return { node, fill };
}

function placeholderCards(n) {
  return Array.from({ length: n }, () =>
    h("li", { class: "card placeholder", "aria-hidden": "true" }, h("h2", null, "\u00a0"), h("p", { class: "about" }, "\u00a0"), h("p", { class: "counts" }, "\u00a0")),
  );
}

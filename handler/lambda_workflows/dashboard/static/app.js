// The dashboard's entry point: hash routes to pages, the breadcrumb, focus on navigation.
//   #/                                  registered workflows
//   #/workflows/{name}[?status=&cursor=] a workflow's instances
//   #/workflows/{name}/instances/{id}   one instance
//   #/workflows/{name}/diagram          the steps of its run(), drawn from its source

import { h, link, routeTo } from "./dom.js";
import { renderWorkflows } from "./workflows_page.js";
import { renderInstances } from "./instances_page.js";
import { renderInstance } from "./instance_page.js";
import { renderDiagram } from "./diagram_page.js";

const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
let dispose = () => {};
let firstRoute = true;

function parse(hash) {
  const [path, query = ""] = hash.replace(/^#/, "").split("?", 2);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query);
  if (parts.length === 0) return { page: "workflows" };
  if (parts[0] === "workflows" && parts.length === 2) return { page: "instances", workflow: parts[1], params };
  if (parts[0] === "workflows" && parts.length === 3 && parts[2] === "diagram") return { page: "diagram", workflow: parts[1] };
  if (parts[0] === "workflows" && parts.length === 4 && parts[2] === "instances") {
    return { page: "instance", workflow: parts[1], id: parts[3] };
  }
  return { page: "missing", hash };
}

function setCrumbs(route) {
  const items = [h("li", null, link("#/", "Workflows"))];
  if (route.workflow) items.push(h("li", null, link(routeTo(route.workflow), route.workflow)));
  if (route.id) items.push(h("li", null, link(routeTo(route.workflow, route.id), route.id)));
  if (route.page === "diagram") items.push(h("li", null, link(`${routeTo(route.workflow)}/diagram`, "diagram")));
  items[items.length - 1].firstChild.setAttribute("aria-current", "page");
  crumbs.replaceChildren(...items);
  const page = route.page === "diagram" ? "diagram" : route.id;
  document.title = [page, route.workflow, "workflows"].filter(Boolean).join(" · ");
}

function route() {
  dispose();
  dispose = () => {};
  const where = parse(location.hash);
  setCrumbs(where);
  main.replaceChildren();
  try {
    if (where.page === "workflows") dispose = renderWorkflows(main) || dispose;
    else if (where.page === "instances") dispose = renderInstances(main, where.workflow, where.params) || dispose;
    else if (where.page === "instance") dispose = renderInstance(main, where.workflow, where.id) || dispose;
    else if (where.page === "diagram") dispose = renderDiagram(main, where.workflow) || dispose;
    else main.append(h("h1", { tabindex: "-1" }, "Not found"), h("p", null, "No page here. ", link("#/", "See the workflows.")));
  } finally {
    // keyboard and screen-reader users land on the new page's heading, not the old link
    if (!firstRoute) main.querySelector("h1")?.focus({ preventScroll: false });
    firstRoute = false;
  }
}

window.addEventListener("hashchange", route);
route();

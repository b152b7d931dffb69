// A workflow's diagram: the steps its run() takes, drawn from its source by the server that
// has it (lambda-workflows dev, or lambda-workflows ui with WORKFLOWS set), with an outline for reading.

import { api, paths } from "./api.js";
import { h, link, routeTo } from "./dom.js";
import { drawDiagram } from "./diagram_svg.js";
import { errorBox } from "./notice.js";

const KINDS = { branch: "branch", loop: "loop", parallel: "in parallel", race: "race", try: "try", call: "call" };

/** Render the diagram into `main`; returns a function that stops its work. */
export function renderDiagram(main, workflow) {
  let live = true;
  const about = h("p", { class: "muted diagram-about" }, "\u00a0");
  const problem = h("div", { class: "problem-slot" });
  const canvas = h("div", { class: "diagram-wrap", "aria-busy": "true" });
  const outline = h("details", { class: "diagram-outline" }, h("summary", null, "Outline"));
  main.append(
    h("div", { class: "page-head" },
      h("h1", { tabindex: "-1" }, "Diagram of ", h("span", { class: "mono" }, workflow)),
      link(routeTo(workflow), "Instances"),
    ),
    about, problem, canvas, outline,
  );

  api("GET", paths.diagram(workflow)).then(
    (diagram) => {
      if (!live) return;
      const where = `${diagram.class_name} in ${diagram.module}, run() at line ${diagram.line}`;
      about.textContent = `${where} · ${diagram.steps} step call${diagram.steps === 1 ? "" : "s"} · drawn from the source`;
      canvas.replaceChildren(drawDiagram(diagram));
      canvas.removeAttribute("aria-busy");
      outline.append(h("ol", null, diagram.nodes.map(item)));
      for (const note of diagram.notes || []) problem.append(h("p", { class: "muted" }, note));
    },
    (error) => {
      if (!live) return;
      about.textContent = "\u00a0";
      problem.replaceChildren(errorBox(error));
      canvas.replaceChildren();
      canvas.removeAttribute("aria-busy");
      outline.hidden = true;
    },
  );
  return () => {
    live = false;
  };
}

/** One node of the outline: a step and its settings, or a container and its paths. */
function item(node) {
  if (node.kind === "step") {
    const said = [h("code", null, node.label), ` ${node.method}`];
    if (node.detail) said.push(` · ${node.detail}`);
    if (node.rollback) said.push(` · rollback ${node.rollback}`);
    const inner = node.paths?.[0]?.nodes || [];
    return h("li", { "data-line": node.line }, said, inner.length ? h("ol", null, inner.map(item)) : null);
  }
  const paths = (node.paths || []).map((p) =>
    h("li", null, p.label ? h("code", null, p.label) : "path", p.nodes.length ? h("ol", null, p.nodes.map(item)) : h("span", { class: "muted" }, ": no step")),
  );
  return h("li", { "data-line": node.line }, `${KINDS[node.kind] || node.kind} `, h("code", null, node.label), paths.length ? h("ul", null, paths) : null);
}

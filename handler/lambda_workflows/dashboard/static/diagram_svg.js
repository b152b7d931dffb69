// A workflow's diagram as SVG, from GET /_dashboard/workflows/{name}/diagram: steps top to
// bottom, a branch / gather / race / try as columns between a split and a join, a loop or a
// called helper in a frame, a step's own inner steps in a frame under it. No library: each
// node is laid out to a width and height first, then drawn at its place. Labels are monospace,
// so their width is known without measuring; long ones are cut, whole in their tooltip.

const NS = "http://www.w3.org/2000/svg";
const CHAR = 7.3; // px per character at 12px monospace
const SMALL = 6.7; // px per character at 11px monospace
const STEP_H = 46;
const GAP = 26; // between two nodes of a sequence: the arrow
const PAD = 14;
const PILL_H = 24;
const LABEL_H = 22;
const COL_GAP = 28;
const MIN_COL = 96;
const NAME_MAX = 36;
const MARGIN = 16;
const METHODS = { do: "do", sleep: "sleep", sleep_until: "sleep until", wait_for_event: "wait for event", run_workflow: "run workflow" };
const HEADERS = {
  branch: (n) => n.label,
  parallel: (n) => `in parallel · ${n.label}`,
  race: (n) => `race · ${n.label}`,
  try: () => "try",
};

/** The SVG element of `diagram` (the route's JSON). */
export function drawDiagram(diagram) {
  const start = pill("run()", "d-end");
  const end = pill("return", "d-end");
  const body = sequence(diagram.nodes);
  const inner = { w: Math.max(body.w, start.w), h: start.h + GAP + body.h + (diagram.nodes.length ? GAP : 0) + end.h };
  const width = Math.ceil(inner.w + 2 * MARGIN);
  const height = Math.ceil(inner.h + 2 * MARGIN);
  const title = `Diagram of ${diagram.workflow}: ${diagram.steps} step${diagram.steps === 1 ? "" : "s"}`;
  const svg = el("svg", {
    class: "diagram", xmlns: NS, width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title,
  });
  svg.append(el("title", null, title), defs());
  const g = el("g", null);
  const cx = width / 2;
  let y = MARGIN;
  start.draw(g, cx - start.w / 2, y);
  y += start.h;
  if (diagram.nodes.length) {
    arrow(g, cx, y, y + GAP);
    y += GAP;
    body.draw(g, cx - body.w / 2, y);
    y += body.h;
  }
  arrow(g, cx, y, y + GAP);
  end.draw(g, cx - end.w / 2, y + GAP);
  svg.append(g);
  return svg;
}

// --- layout: each returns {w, h, draw(g, x, y)} with (x, y) its top left ---------------------

function layout(node) {
  if (node.kind === "step") return node.paths?.length ? framed(step(node), node.paths[0].nodes, "inside", "steps its callback takes") : step(node);
  if (node.kind === "loop") return framed(null, node.paths[0].nodes, "loop", `↻ ${node.label}`, node.line);
  if (node.kind === "call") return node.paths?.length ? framed(null, node.paths[0].nodes, "call", node.label, node.line) : pill(node.label, "d-call-again", `${node.label}: called again (recursion): its steps are drawn once, above`);
  return fork(node);
}

function sequence(nodes) {
  const items = nodes.map(layout);
  const w = Math.max(0, ...items.map((i) => i.w));
  const h = items.reduce((sum, i) => sum + i.h, 0) + GAP * Math.max(0, items.length - 1);
  return {
    w, h,
    draw(g, x, y) {
      const cx = x + w / 2;
      let top = y;
      items.forEach((item, k) => {
        if (k > 0) arrow(g, cx, top - GAP, top);
        item.draw(g, cx - item.w / 2, top);
        top += item.h + GAP;
      });
    },
  };
}

function step(node) {
  const name = cut(node.label, NAME_MAX);
  const kind = METHODS[node.method] || node.method;
  const detail = cut(node.detail ? `${kind} · ${node.detail}` : kind, NAME_MAX + 24);
  const undo = node.rollback ? ` ↩ ${cut(node.rollback, 20)}` : "";
  const w = Math.max(150, name.length * CHAR + 28, (detail.length + undo.length) * SMALL + 28);
  return {
    w, h: STEP_H,
    draw(g, x, y) {
      const box = el("g", { class: `d-step d-${node.method}`, "data-step": node.label, "data-method": node.method, "data-line": node.line });
      box.append(
        el("title", null, tooltip(node)),
        el("rect", { x, y, width: w, height: STEP_H, rx: 8 }),
        el("text", { x: x + 12, y: y + 19, class: "d-name" }, name),
      );
      const second = el("text", { x: x + 12, y: y + 36, class: "d-detail" }, detail);
      if (undo) second.append(el("tspan", { class: "d-undo" }, undo));
      box.append(second);
      g.append(box);
    },
  };
}

function pill(text, cls, hint) {
  const shown = cut(text, 56);
  const w = shown.length * CHAR + 24;
  return {
    w, h: PILL_H,
    draw(g, x, y) {
      const node = el("g", { class: `d-pill ${cls}` });
      if (hint || shown !== text) node.append(el("title", null, hint || text));
      node.append(el("rect", { x, y, width: w, height: PILL_H, rx: PILL_H / 2 }), el("text", { x: x + w / 2, y: y + 16, "text-anchor": "middle" }, shown));
      g.append(node);
    },
  };
}

/** A frame around a sequence: a loop (with its way back), a helper called, a step's insides. */
function framed(head, nodes, kind, label, line) {
  const body = sequence(nodes);
  const header = cut(label, 56);
  const gutter = kind === "loop" ? 20 : 0;
  const headH = head ? head.h + 10 : 0;
  const w = Math.max(body.w, header.length * SMALL, head ? head.w - 2 * PAD : 0) + 2 * PAD + gutter;
  const h = headH + LABEL_H + body.h + 2 * PAD - 4;
  return {
    w, h,
    draw(g, x, y) {
      const frame = el("g", { class: `d-frame d-${kind}`, "data-kind": kind });
      if (line) frame.append(el("title", null, `${label} (line ${line})`));
      const top = y + headH;
      frame.append(el("rect", { x, y: head ? y + head.h / 2 : y, width: w, height: h - (head ? head.h / 2 : 0), rx: 10 }));
      g.append(frame);
      if (head) head.draw(frame, x + (w - head.w) / 2, y);
      frame.append(el("text", { x: x + PAD + gutter, y: top + 15, class: "d-frame-label" }, header));
      const bodyTop = top + LABEL_H + PAD - 4;
      body.draw(frame, x + gutter + (w - gutter - body.w) / 2, bodyTop);
      if (gutter) {
        // the way back to the top: the loop's body runs again
        const lx = x + PAD;
        const path = `M ${lx + 8} ${bodyTop + body.h} H ${lx} V ${bodyTop} H ${lx + 8}`;
        frame.append(el("path", { d: path, class: "d-back", "marker-end": "url(#d-arrow)" }));
      }
    },
  };
}

/** Columns between a split and a join: a branch's arms, a gather's or race's awaitables. */
function fork(node) {
  const paths = node.paths.map((p) => ({ label: cut(p.label, 44), full: p.label, body: sequence(p.nodes), empty: !p.nodes.length }));
  const labelled = paths.some((p) => p.label);
  const cols = paths.map((p) => Math.max(p.body.w, p.label ? p.label.length * SMALL + 16 : 0, MIN_COL));
  const span = cols.reduce((a, b) => a + b, 0) + COL_GAP * Math.max(0, cols.length - 1);
  const head = pill((HEADERS[node.kind] || HEADERS.branch)(node), `d-fork-head d-${node.kind}-head`, `${node.label} (line ${node.line})`);
  const tallest = Math.max(0, ...paths.map((p) => p.body.h));
  const split = 16;
  const labelH = labelled ? LABEL_H : 0;
  const w = Math.max(head.w, span);
  const h = head.h + split + labelH + 10 + Math.max(tallest, 24) + 18;
  return {
    w, h,
    draw(g, x, y) {
      const group = el("g", { class: `d-fork d-${node.kind}`, "data-kind": node.kind });
      g.append(group);
      const cx = x + w / 2;
      head.draw(group, cx - head.w / 2, y);
      const splitY = y + head.h + split;
      const joinY = y + h - 6;
      const bodyTop = splitY + labelH + 10;
      line(group, cx, y + head.h, cx, splitY);
      let left = x + (w - span) / 2;
      const centers = cols.map((c) => {
        const center = left + c / 2;
        left += c + COL_GAP;
        return center;
      });
      const bar = node.kind === "parallel" ? "d-bar d-bar-parallel" : "d-bar";
      line(group, centers[0], splitY, centers[centers.length - 1], splitY, bar);
      line(group, centers[0], joinY, centers[centers.length - 1], joinY, bar);
      line(group, cx, joinY, cx, y + h);
      paths.forEach((p, k) => {
        const c = centers[k];
        const path = el("g", { class: "d-path", "data-path": p.full, "data-empty": p.empty ? "true" : null });
        group.append(path);
        if (p.empty) {
          line(path, c, splitY, c, joinY, "d-line d-skip");
        } else {
          line(path, c, splitY, c, bodyTop);
          p.body.draw(path, c - p.body.w / 2, bodyTop);
          line(path, c, bodyTop + p.body.h, c, joinY);
        }
        if (p.label) {
          const lw = p.label.length * SMALL + 12;
          const chip = el("g", { class: "d-path-label" }, el("title", null, p.full));
          chip.append(el("rect", { x: c - lw / 2, y: splitY + 3, width: lw, height: LABEL_H - 6, rx: 4 }), el("text", { x: c, y: splitY + 15, "text-anchor": "middle" }, p.label));
          path.append(chip);
        }
      });
    },
  };
}

// --- drawing ---------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined && value !== false) node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(child); // text goes in as text, never as markup
  return node;
}

function line(g, x1, y1, x2, y2, cls = "d-line") {
  g.append(el("line", { x1, y1, x2, y2, class: cls }));
}

function arrow(g, x, y1, y2) {
  g.append(el("line", { x1: x, y1, x2: x, y2: y2 - 2, class: "d-line", "marker-end": "url(#d-arrow)" }));
}

function defs() {
  const marker = el("marker", { id: "d-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "d-arrowhead" }));
  return el("defs", null, marker);
}

function cut(text, max) {
  const one = String(text ?? "");
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

function tooltip(node) {
  const lines = [`${METHODS[node.method] || node.method} "${node.label}"`];
  if (node.detail) lines.push(node.detail);
  if (node.rollback) lines.push(`rollback: ${node.rollback}`);
  lines.push(`line ${node.line}`);
  return lines.join("\n");
}

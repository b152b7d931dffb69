// Building DOM nodes and formatting values. Text always goes in as text (never as HTML):
// step names, ids, payloads and tracebacks are the user's data.

/**
 * Create an element: h("a", {href: "#/", class: "x"}, "text", child, [more, children]).
 * Attributes whose value is null, undefined or false are left out; true sets an empty one.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Milliseconds since the epoch of an ISO 8601 string; null for null. */
export function ms(iso) {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** "2026-12-03 13:53:17" (UTC, as the API records it), or "—". */
export function when(iso) {
  if (!iso) return "—";
  return iso.replace("T", " ").replace(/\.\d+Z$|Z$/, "");
}

/** "13:53:17.407" (UTC): the time of day, for rows of one instance. */
export function clock(iso) {
  if (!iso) return "—";
  const match = /T(\d\d:\d\d:\d\d(?:\.\d+)?)/.exec(iso);
  return match ? match[1] : iso;
}

/** A duration in milliseconds, readable: "12 ms", "1.5 s", "3 min 4 s", "2 h 5 min", "3 d 1 h". */
export function duration(millis) {
  if (millis === null || millis === undefined || Number.isNaN(millis)) return "—";
  if (millis < 1) return "<1 ms";
  if (millis < 1000) return `${Math.round(millis)} ms`;
  const s = millis / 1000;
  if (s < 60) return `${s < 10 && !Number.isInteger(s) ? s.toFixed(1) : Math.round(s)} s`;
  const units = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];
  const parts = [];
  let rest = Math.round(s);
  for (const [name, size] of units) {
    if (rest >= size || parts.length) {
      parts.push(`${Math.floor(rest / size)} ${name}`);
      rest %= size;
    }
    if (parts.length === 2) break;
  }
  if (parts.length === 2 && parts[1].startsWith("0 ")) parts.pop(); // "3 h", not "3 h 0 min"
  return parts.join(" ");
}

/** JSON for a <pre>: pretty, or the text itself. */
export function pretty(value) {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A status badge: <span class="status status-waiting">waiting</span>. */
export function badge(status) {
  return h("span", { class: `status status-${status}` }, status);
}

/** Hash route link: link("#/workflows/x", "x"). */
export function link(href, ...children) {
  return h("a", { href }, ...children);
}

/** The hash path of a workflow's instances, or of one instance. */
export function routeTo(workflow, instanceId) {
  const base = `#/workflows/${encodeURIComponent(workflow)}`;
  return instanceId === undefined ? base : `${base}/instances/${encodeURIComponent(instanceId)}`;
}

// Messages shown in the page: the API's errors (verbatim) and what an action did.

import { h } from "./dom.js";

/** The API's error, its message verbatim, announced to screen readers. */
export function errorBox(error) {
  const status = error.status ? `${error.status} ${error.code}` : error.code || "error";
  return h("div", { class: "problem", role: "alert" }, h("code", { class: "problem-code" }, status), " ", h("span", { class: "api-error" }, error.message));
}

/** A short confirmation that an action went through. */
export function doneBox(text) {
  return h("div", { class: "done", role: "status" }, text);
}

// The HTTP API, called on the origin that served the page (lambda-workflows dev serves both).

/** A refusal or failure of the API: status 0 when it did not answer at all. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/**
 * Call the API and return its JSON answer. A non-2xx answer throws an ApiError whose message
 * is the API's own `error.message`, verbatim.
 */
export async function api(method, path, body, { signal } = {}) {
  const init = { method, headers: { Accept: "application/json" }, signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error; // the page stopped it: no error to show
    throw new ApiError(0, "unreachable", `The API did not answer (${error.message}); is the server still running?`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = data && typeof data === "object" ? data.error : null;
    if (error && typeof error.message === "string") {
      throw new ApiError(response.status, error.code || `http_${response.status}`, error.message);
    }
    throw new ApiError(response.status, `http_${response.status}`, `HTTP ${response.status}: ${text.slice(0, 300)}`);
  }
  return data;
}

const enc = encodeURIComponent;

export const paths = {
  workflows: () => "/workflows",
  workflow: (name) => `/workflows/${enc(name)}`,
  instances: (name, { status, cursor, limit } = {}) => {
    const query = new URLSearchParams();
    if (status) query.set("status", status);
    if (cursor) query.set("cursor", cursor);
    if (limit) query.set("limit", String(limit));
    const text = query.toString();
    return `/workflows/${enc(name)}/instances${text ? `?${text}` : ""}`;
  },
  instance: (name, id) => `/workflows/${enc(name)}/instances/${enc(id)}`,
  // a page of an instance's steps past the first (which the instance's own answer carries)
  steps: (name, id, { cursor, limit } = {}) => {
    const query = new URLSearchParams();
    if (cursor) query.set("cursor", cursor);
    if (limit) query.set("limit", String(limit));
    const text = query.toString();
    return `/workflows/${enc(name)}/instances/${enc(id)}/steps${text ? `?${text}` : ""}`;
  },
  // the instance's events after `cursor`, the request held up to `wait` seconds for a new one
  subscribe: (name, id, { cursor, wait } = {}) => {
    const query = new URLSearchParams();
    if (cursor) query.set("cursor", cursor);
    if (wait) query.set("wait", String(wait));
    const text = query.toString();
    return `/workflows/${enc(name)}/instances/${enc(id)}/subscribe${text ? `?${text}` : ""}`;
  },
  status: (name, id) => `/workflows/${enc(name)}/instances/${enc(id)}/status`,
  event: (name, id, type) => `/workflows/${enc(name)}/instances/${enc(id)}/events/${enc(type)}`,
  // served by lambda-workflows dev and lambda-workflows ui, not by the deployed API: drawn from the source
  diagram: (name) => `/_dashboard/workflows/${enc(name)}/diagram`,
};

/** Instance statuses, in the order the pages list them. */
export const STATUSES = ["queued", "running", "waiting", "paused", "waitingForPause", "errored", "terminated", "complete"];

/** Statuses after which nothing runs again: no polling, no pause/resume/terminate/events. */
export const FINISHED = new Set(["complete", "errored", "terminated"]);

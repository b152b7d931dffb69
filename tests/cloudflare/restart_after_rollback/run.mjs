// Cloudflare's own engine on a recorded scenario: run the saga of worker.mjs with step "three"
// failing (it rolls back), then restart it from step "two" and record which callbacks and
// rollbacks run. Prints one JSON document: the <scenario>.json files beside this script.
//
// To record again (outside the repository; never commit node_modules):
//   mkdir /tmp/cf && cd /tmp/cf && npm install miniflare@4.20260730.0
//   cp <this folder>/worker.mjs <this folder>/run.mjs . && node run.mjs passes-after-restart
// Scenarios: passes-after-restart ("three" passes after the restart), fails-again-after-restart.
import { Miniflare, Log, LogLevel } from "miniflare";
import { readFileSync } from "node:fs";

const calls = [];
class Capture extends Log {
  constructor() { super(LogLevel.INFO); }
  log(message) {
    for (const line of String(message).split("\n")) {
      const at = line.indexOf("CALL ");
      if (at >= 0) calls.push(JSON.parse(line.slice(at + 5)));
    }
  }
}

const mf = new Miniflare({
  log: new Capture(),
  handleRuntimeStdio(stdout, stderr) {
    for (const stream of [stdout, stderr]) stream.on("data", (chunk) => {
      for (const line of String(chunk).split("\n")) {
        const at = line.indexOf("CALL ");
        if (at >= 0) calls.push(JSON.parse(line.slice(at + 5)));
      }
    });
  },
  modules: true,
  scriptPath: "worker.mjs",
  script: readFileSync("worker.mjs", "utf8"),
  compatibilityDate: "2026-07-30",
  kvNamespaces: ["FLAGS"],
  workflows: { SAGA: { name: "saga", className: "Saga" } },
});

const call = async (op, params = {}) => {
  const url = new URL(`http://localhost/${op}`);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await mf.dispatchFetch(url);
  const text = await res.text();
  if (!res.ok) throw new Error(`${op}: ${res.status} ${text}`);
  return JSON.parse(text);
};
const settle = async (id) => {
  for (let i = 0; i < 200; i++) {
    const s = await call("status", { id });
    if (["complete", "errored", "terminated"].includes(s.status)) return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("instance did not settle");
};
const phase = async (name, act, id) => {
  const before = calls.length;
  await act();
  await new Promise((r) => setTimeout(r, 300));
  const status = await settle(id);
  await new Promise((r) => setTimeout(r, 300));
  return { phase: name, status: status.status, output: status.output ?? null,
           error: status.error ?? null, calls: calls.slice(before) };
};

const scenario = process.argv[2] ?? "passes-after-restart";
const id = "saga-1";
const phases = [];
try {
  await call("fail");
  phases.push(await phase("first run: three fails, the saga rolls back",
    () => call("create", { id }), id));
  if (scenario === "passes-after-restart") await call("pass");
  phases.push(await phase(`restart from step two (three ${scenario === "passes-after-restart" ? "passes" : "fails again"})`,
    () => call("restart", { id, from: JSON.stringify({ name: "two" }) }), id));
  console.log(JSON.stringify({ miniflare: "4.20260730.0", node: process.version, scenario, phases }, null, 2));
} finally {
  await mf.dispose();
}

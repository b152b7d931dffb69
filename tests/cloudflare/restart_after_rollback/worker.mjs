// A saga of three steps, each registering a rollback; step "three" fails while the KV flag
// "fail" is set. Every callback and rollback that runs logs one JSON line ("CALL ...").
import { WorkflowEntrypoint } from "cloudflare:workers";

const trace = (what, step, extra = {}) =>
  console.log("CALL " + JSON.stringify({ what, step, ...extra }));

export class Saga extends WorkflowEntrypoint {
  async run(event, step) {
    const noRetry = { retries: { limit: 0, delay: 0 } };
    const undo = (name) => ({
      rollback: async ({ output, error }) => {
        trace("rollback", name, { output, error: error?.message });
      },
    });
    const one = await step.do("one", noRetry, async () => {
      const value = "one@" + crypto.randomUUID().slice(0, 8);
      trace("callback", "one", { value });
      return value;
    }, undo("one"));
    const two = await step.do("two", noRetry, async () => {
      const value = "two@" + crypto.randomUUID().slice(0, 8);
      trace("callback", "two", { value });
      return value;
    }, undo("two"));
    const three = await step.do("three", noRetry, async () => {
      const failing = await this.env.FLAGS.get("fail");
      trace("callback", "three", { failing: failing !== null });
      if (failing !== null) throw new Error("three failed");
      return "three";
    }, undo("three"));
    return { one, two, three };
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const id = url.searchParams.get("id");
    const op = url.pathname.slice(1);
    if (op === "fail") { await env.FLAGS.put("fail", "1"); return Response.json({}); }
    if (op === "pass") { await env.FLAGS.delete("fail"); return Response.json({}); }
    if (op === "create") return Response.json({ id: (await env.SAGA.create({ id })).id });
    const instance = await env.SAGA.get(id);
    if (op === "status") return Response.json(await instance.status());
    if (op === "restart") {
      const from = JSON.parse(url.searchParams.get("from"));
      await instance.restart(from ? { from } : undefined);
      return Response.json({});
    }
    return new Response("unknown op", { status: 404 });
  },
};

/**
 * The TypeScript library's conformance worker: the standard test recipes of conformance/README.md
 * served by the library's Worker. Started by conformance/clients/typescript/worker with
 *   --lease S --poll S --concurrency N --grace S      (PGFLIGHT_DSN: where to connect)
 */
import { appendFileSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { type Json, Registry, Worker } from "../src/index.js";

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number`);
  return v;
}

type Obj = { [k: string]: Json };
const obj = (input: Json): Obj => (input !== null && typeof input === "object" && !Array.isArray(input) ? input : {});

const registry = new Registry()
  .add("noop", (ctx) => ({ n: obj(ctx.input).n ?? null }))
  .add("sleep", async (ctx) => {
    const seconds = Number(obj(ctx.input).seconds);
    await sleep(seconds * 1000, undefined, { signal: ctx.signal });
    return { slept: seconds };
  })
  .add("fail_always", (ctx) => {
    throw new Error(`boom on attempt ${ctx.attemptNo}`);
  })
  .add("fan_out", async (ctx) => {
    const n = Number(obj(ctx.input).n);
    await ctx.spawn(Array.from({ length: n }, (_, i) => ({ key: `c${String(i).padStart(4, "0")}`, recipe: "child", input: { i } })));
    const children = await ctx.children();
    const sum = children.reduce((s, c) => s + Number(obj(c.result).double), 0);
    return { children: children.length, sum };
  })
  .add("child", (ctx) => ({ double: Number(obj(ctx.input).i) * 2 }))
  .add("effect", async (ctx) => {
    const { counter, crash_on_attempt } = obj(ctx.input);
    const receipt = await ctx.effect("count", () => {
      appendFileSync(String(counter), `${ctx.attemptId}\n`);
      return { calls: readFileSync(String(counter), "utf8").trim().split("\n").length };
    });
    if (ctx.attemptNo === crash_on_attempt) process.kill(process.pid, "SIGKILL"); // between the effect and the completion
    return { receipt, attempt: ctx.attemptNo };
  })
  .add(
    "typed",
    (ctx) => ({ n: ctx.input.n }),
    {
      validate: (input: Json): { n: number } => {
        const n = obj(input).n;
        if (typeof n !== "number" || !Number.isInteger(n)) throw new TypeError(`n must be an integer, not ${JSON.stringify(n)}`);
        return { n };
      },
    },
  );

registry
  .add("approval", async (ctx) => {
    const decision = await ctx.requestApproval(String(obj(ctx.input).gate), { request: { asked_by: "conformance" } });
    return { decision, attempt: ctx.attemptNo };
  })
  .add("wait_event", async (ctx) => {
    const { name, key } = obj(ctx.input);
    const payload = await ctx.waitEvent(String(name), String(key));
    return { payload, attempt: ctx.attemptNo };
  })
  .add("slow", async (ctx) => {
    const progress = ctx.stream("progress");
    progress.write(`start ${ctx.attemptNo}`);
    await progress.flush();
    await sleep(Number(obj(ctx.input).seconds) * 1000); // heedless of a lost lease: its later writes must be refused
    progress.write(`end ${ctx.attemptNo}`);
    await progress.flush();
    const receipt = await ctx.effect("done", () => ({ by_attempt: ctx.attemptNo }));
    return { receipt, attempt: ctx.attemptNo };
  })
  .add("hang", () => new Promise<never>(() => undefined)) // a hung call: only the deadline ends this attempt
  .add("invalid_result", () => ({ bad: "nul\u0000" })); // jsonb refuses U+0000

const dsn = process.env.PGFLIGHT_DSN;
if (!dsn) throw new Error("PGFLIGHT_DSN is not set");
const worker = new Worker({
  connectionString: dsn,
  registry,
  leaseS: flag("lease", 30),
  pollS: flag("poll", 2),
  concurrency: flag("concurrency", 4),
  graceS: flag("grace", 10),
});
await worker.run();
process.exit(0);

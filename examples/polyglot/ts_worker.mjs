// The TypeScript half of the mixed deployment: serves recipe `shout` with the TypeScript worker
// library (clients/typescript, built by scripts/setup). PGFLIGHT_DSN says where to connect.
import { Registry, Worker } from "../../clients/typescript/dist/src/index.js";

const registry = new Registry().add("shout", (ctx) => ({ word: String(ctx.input.word).toUpperCase(), by: "typescript" }));
await new Worker({ connectionString: process.env.PGFLIGHT_DSN, registry, concurrency: 4, leaseS: 10 }).run();
process.exit(0);

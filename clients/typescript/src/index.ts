/**
 * pgflight's worker library for Node.js: a typed client of the worker-lane SQL API
 * ({@link PgflightClient}), recipes ({@link Registry}, {@link StepContext}) and the worker
 * runtime ({@link Worker}).
 */
export * from "./client.js";
export * from "./dsn.js";
export * from "./errors.js";
export * from "./json.js";
export * from "./recipes.js";
export * from "./streams.js";
export * from "./worker.js";

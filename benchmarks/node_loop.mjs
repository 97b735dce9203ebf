// A user's own Node loop, for benchmarks/node_loop.py: the same SDK call as the ai adapter's
// default chat cell (generateObject, a zod schema, @ai-sdk/openai chat), the provider and model
// built once, called N times against one provider run. Prints one JSON line: each call's wall
// milliseconds and this process's CPU microseconds over the timed calls.
//
//   node benchmarks/node_loop.mjs BASE_URL CALLS WARMUP SCHEMA_JSON PROMPT
import { register } from "node:module";

register("../node/resolve.mjs", import.meta.url); // the locked node/node_modules, as the worker uses
const { generateObject } = await import("ai");
const { createOpenAI } = await import("@ai-sdk/openai");
const { z } = await import("zod");

const [baseURL, calls, warmup, schemaJson, prompt] = process.argv.slice(2);
const model = createOpenAI({ baseURL, apiKey: "sk-misfit-bench-local" }).chat("gpt-4o-mini");
const schema = z.fromJSONSchema(JSON.parse(schemaJson));
console.warn = () => {}; // generateObject's deprecation notice, printed on every call

for (let i = 0; i < Number(warmup); i++) await generateObject({ model, schema, prompt, schemaName: "Person" });
const times = [];
const cpu = process.cpuUsage();
for (let i = 0; i < Number(calls); i++) {
  const started = performance.now();
  await generateObject({ model, schema, prompt, schemaName: "Person" });
  times.push(performance.now() - started);
}
const used = process.cpuUsage(cpu);
process.stdout.write(JSON.stringify({ times, cpu_us: used.user + used.system }) + "\n");

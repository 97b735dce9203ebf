// The OpenAI Agents SDK for TypeScript (@openai/agents) driver: one cell per request from the Node
// worker (node/worker.mjs). An Agent with outputType set to a zod schema, run once with run()
// (or run(..., {stream: true}), the stream read to its end), on the OpenAI client built once per
// base URL (a worker slot's), over Chat Completions or Responses. It reports what reached the
// caller: result.finalOutput, the error, and the run's usage. Cells and notes: adapter.py;
// source lines: research.md.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import OpenAI from "openai";
import * as agents from "@openai/agents";
import { z } from "zod";

const { Agent, run, setTracingDisabled, OpenAIChatCompletionsModel, OpenAIResponsesModel } = agents;
const require = createRequire(new URL("../../node/package.json", import.meta.url));
const MESSAGE_LIMIT = 4000;

function versionOf(name) {
  const main = require.resolve(name);
  const marker = `/node_modules/${name}/`;
  return JSON.parse(readFileSync(`${main.slice(0, main.lastIndexOf(marker) + marker.length)}package.json`, "utf8"))
    .version;
}

export const SDK_VERSION = versionOf("@openai/agents");
setTracingDisabled(true); // the default exporter posts spans to api.openai.com

const clients = new Map();
const agentsByCell = new Map();
const schemas = new Map();

function client(endpoint) {
  let made = clients.get(endpoint.root);
  if (made === undefined) {
    made = new OpenAI({ baseURL: `${endpoint.root}/v1`, apiKey: endpoint.api_key });
    clients.set(endpoint.root, made);
  }
  return made;
}

function schemaOf(request) {
  let schema = schemas.get(request.task);
  if (schema === undefined) {
    schema = z.fromJSONSchema(request.schema);
    schemas.set(request.task, schema);
  }
  return schema;
}

function agentFor(request) {
  // One Agent per (cell, task, base URL), reused as a user's loop reuses it: it holds no run state.
  const { cell, endpoint } = request;
  const key = `${cell.protocol} ${cell.variant} ${request.task} ${endpoint.root}`;
  let agent = agentsByCell.get(key);
  if (agent === undefined) {
    const openai = client(endpoint);
    const model =
      cell.protocol === "openai-chat"
        ? new OpenAIChatCompletionsModel(openai, endpoint.openai_model)
        : new OpenAIResponsesModel(openai, endpoint.openai_model);
    agent = new Agent({ name: "extractor", instructions: "Answer with the requested object.", model,
                        outputType: schemaOf(request) });
    agentsByCell.set(key, agent);
  }
  return agent;
}

function errorType(error) {
  const name = error?.constructor?.name ?? typeof error;
  if (agents[name] === error?.constructor) return `@openai/agents.${name}`;
  if (OpenAI[name] === error?.constructor) return `openai.${name}`;
  return `node.${name}`;
}

function usageOf(state) {
  const usage = state?.usage;
  if (usage == null) return null;
  return { input_tokens: usage.inputTokens ?? null, output_tokens: usage.outputTokens ?? null };
}

export async function run_(request) {
  const agent = agentFor(request);
  const stream = request.cell.variant === "stream";
  let result;
  try {
    result = await run(agent, request.prompt, { stream });
    if (stream) {
      for await (const _event of result) {
        // a streaming caller reads the events as they come
      }
      await result.completed;
      if (result.error) throw result.error;
    }
    const output = result.finalOutput; // parsed (JSON.parse, then zod) when read: agent.mjs:549-557
    const details = { sdk_requests: String(result.state.usage.requests) };
    return report(output == null ? { kind: "none" } : { kind: "json", data: output }, null, usageOf(result.state), details);
  } catch (error) {
    const exception = { type: errorType(error), message: String(error?.message ?? error).slice(0, MESSAGE_LIMIT) };
    return report({ kind: "none" }, exception, usageOf(error?.state ?? result?.state), {});
  }
}

export { run_ as run };

function report(output, exception, usage, details) {
  return { output, exception, usage, fallback: false, planned_calls: 0, details, tool_invocations: [] };
}

// The Vercel AI SDK (`ai`) driver: one cell per request from the Node worker (node/worker.mjs).
// It builds the call the way a TypeScript user writes it (a zod schema, the provider built once
// and reused: here once per worker slot's base URL), calls the SDK once and reports what reached
// the caller: the object, the error, the usage the SDK reported. It never parses, retries or
// reclassifies on the SDK's behalf. Cells and their notes: adapters/ai/adapter.py; the source
// lines each prediction rests on: adapters/ai/research.md.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as ai from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { z } from "zod";

const { generateObject, streamObject, generateText, Output } = ai;
const require = createRequire(new URL("../../node/package.json", import.meta.url));

function versionOf(name) {
  // The package's own package.json ("exports" hides it from require.resolve in some packages).
  const main = require.resolve(name);
  const root = main.slice(0, main.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
  return JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
}

export const SDK_VERSION = versionOf("ai");
export const COMPANIONS = {
  "@ai-sdk/openai": versionOf("@ai-sdk/openai"),
  "@ai-sdk/anthropic": versionOf("@ai-sdk/anthropic"),
  zod: versionOf("zod"),
};

export const HARDENED_MAX_RETRIES = 4; // mirrored in adapter.py (HARDENED_MAX_RETRIES)
const MESSAGE_LIMIT = 4000;

const providers = new Map();
const schemas = new Map();

function model(cell, endpoint) {
  // A user builds the provider once; a worker slot's cells share one base URL (stable route).
  const key = `${cell.protocol} ${endpoint.root}`;
  let made = providers.get(key);
  if (made === undefined) {
    made =
      cell.protocol === "anthropic-messages"
        ? createAnthropic({ baseURL: `${endpoint.root}/v1`, apiKey: endpoint.api_key })
        : createOpenAI({ baseURL: `${endpoint.root}/v1`, apiKey: endpoint.api_key });
    providers.set(key, made);
  }
  if (cell.protocol === "openai-chat") return made.chat(endpoint.openai_model);
  if (cell.protocol === "openai-responses") return made.responses(endpoint.openai_model);
  return made(endpoint.anthropic_model);
}

function schemaOf(request) {
  // The task's output type as zod, converted once from the JSON schema its pydantic model
  // declares (zod's own z.fromJSONSchema), so the two languages hold one type.
  let schema = schemas.get(request.task);
  if (schema === undefined) {
    schema = z.fromJSONSchema(request.schema);
    schemas.set(request.task, schema);
  }
  return schema;
}

function providerOptions(cell) {
  // Anthropic: tool mode is the SDK's 'json' tool, native its output_config.format; the
  // default ('auto') picks outputFormat for this model (research.md), so native sets nothing.
  if (cell.protocol === "anthropic-messages" && cell.mode === "tool") {
    return { anthropic: { structuredOutputMode: "jsonTool" } };
  }
  return undefined;
}

function callOptions(request) {
  const { cell, endpoint } = request;
  const options = {
    model: model(cell, endpoint),
    prompt: request.prompt,
    providerOptions: providerOptions(cell),
  };
  if (cell.variant === "hardened") options.maxRetries = HARDENED_MAX_RETRIES;
  return options;
}

async function call(request) {
  const { cell } = request;
  const schema = schemaOf(request);
  const options = callOptions(request);
  if (cell.variant === "stream") {
    const result = streamObject({ ...options, schema, schemaName: request.schema_name });
    for await (const _partial of result.partialObjectStream) {
      // a streaming caller reads the partial objects as they come
    }
    const object = await result.object;
    return { object, usage: await result.usage, finishReason: await result.finishReason, entry: "streamObject" };
  }
  if (cell.variant === "generate_text") {
    const result = await generateText({ ...options, output: Output.object({ schema, name: request.schema_name }) });
    // The caller holds the result: its usage is there even when reading `output` throws
    // (NoOutputGeneratedError when no output was parsed, index.js:3216-3219).
    const seen = { usage: result.usage, finishReason: result.finishReason, entry: "generateText" };
    try {
      return { ...seen, object: result.output };
    } catch (error) {
      return { ...seen, error };
    }
  }
  const result = await generateObject({ ...options, schema, schemaName: request.schema_name });
  return { object: result.object, usage: result.usage, finishReason: result.finishReason, entry: "generateObject" };
}

function errorType(error) {
  const name = error?.constructor?.name ?? typeof error;
  return ai[name] === error?.constructor ? `ai.${name}` : `node.${name}`;
}

function usageOf(usage) {
  if (usage == null) return null;
  return { input_tokens: usage.inputTokens ?? null, output_tokens: usage.outputTokens ?? null };
}

export async function run(request) {
  const retries = String(request.cell.variant === "hardened" ? HARDENED_MAX_RETRIES : 2);
  const details = { sdk_transport_retries: retries };
  try {
    const done = await call(request);
    if (done.finishReason != null) details.stop_reason = String(done.finishReason);
    if (done.error !== undefined) return raised(done.error, usageOf(done.usage), details);
    return report({ kind: "json", data: done.object }, null, usageOf(done.usage), details);
  } catch (error) {
    if (error?.finishReason != null) details.stop_reason = String(error.finishReason);
    // NoObjectGeneratedError carries the usage of the answer it rejected (research.md)
    return raised(error, usageOf(error?.usage), details);
  }
}

function raised(error, usage, details) {
  const exception = { type: errorType(error), message: String(error?.message ?? error).slice(0, MESSAGE_LIMIT) };
  return report({ kind: "none" }, exception, usage, details);
}

function report(output, exception, usage, details) {
  if (output.kind === "json" && output.data == null) output = { kind: "none" };
  return { output, exception, usage, fallback: false, planned_calls: 0, details, tool_invocations: [] };
}

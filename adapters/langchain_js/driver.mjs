// The LangChain.js driver (@langchain/core, @langchain/openai, @langchain/anthropic): one cell per
// request from the Node worker (node/worker.mjs). It builds the chat model once per base URL (a
// worker slot's) as a user's loop builds it once, asks it for a zod schema with
// model.withStructuredOutput(schema, {name, method}) in the cell's method (functionCalling: tool,
// jsonSchema: native, jsonMode: prompted), and invokes it once (default), streams it to its last
// chunk (stream), or invokes it under the Runnable's documented withRetry (hardened). It reports
// what reached the caller: the object, the error, and the usage the chat model's callbacks saw.
// It never parses, retries or reclassifies on LangChain's behalf. Cells: adapter.py; source
// lines: research.md.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { ChatOpenAI } from "@langchain/openai";
import { ChatAnthropic } from "@langchain/anthropic";
import * as parsers from "@langchain/core/output_parsers";
import * as errors from "@langchain/core/errors";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";

// LangSmith tracing is off unless these say otherwise; stated, so no run ever posts traces.
process.env.LANGSMITH_TRACING = "false";
process.env.LANGCHAIN_TRACING_V2 = "false";

const require = createRequire(new URL("../../node/package.json", import.meta.url));
const MESSAGE_LIMIT = 4000;
export const HARDENED_ATTEMPTS = 3; // mirrored in adapter.py (HARDENED_ATTEMPTS)
const METHODS = { tool: "functionCalling", native: "jsonSchema", prompted: "jsonMode" };

function versionOf(name) {
  const main = require.resolve(name);
  const marker = `/node_modules/${name}/`;
  return JSON.parse(readFileSync(`${main.slice(0, main.lastIndexOf(marker) + marker.length)}package.json`, "utf8"))
    .version;
}

export const SDK_VERSION = versionOf("@langchain/core");
export const COMPANIONS = {
  "@langchain/openai": versionOf("@langchain/openai"),
  "@langchain/anthropic": versionOf("@langchain/anthropic"),
  zod: versionOf("zod"),
};

const models = new Map();
const schemas = new Map();

function chatModel(cell, endpoint) {
  const key = `${cell.protocol} ${endpoint.root}`;
  let made = models.get(key);
  if (made === undefined) {
    made =
      cell.protocol === "anthropic-messages"
        ? new ChatAnthropic({ model: endpoint.anthropic_model, apiKey: endpoint.api_key,
                              anthropicApiUrl: endpoint.root })
        : new ChatOpenAI({ model: endpoint.openai_model, apiKey: endpoint.api_key,
                           configuration: { baseURL: `${endpoint.root}/v1` },
                           useResponsesApi: cell.protocol === "openai-responses" });
    models.set(key, made);
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

function structured(request) {
  const { cell, endpoint } = request;
  const runnable = chatModel(cell, endpoint).withStructuredOutput(schemaOf(request), {
    name: request.schema_name,
    method: METHODS[cell.mode],
  });
  return cell.variant === "hardened" ? runnable.withRetry({ stopAfterAttempt: HARDENED_ATTEMPTS }) : runnable;
}

function usageCollector() {
  // What a user adds to see the tokens: a callback on the chat model's end (every attempt).
  const seen = { input_tokens: 0, output_tokens: 0, calls: 0 };
  const handler = {
    handleLLMEnd(output) {
      for (const generation of (output?.generations ?? []).flat()) {
        const usage = generation?.message?.usage_metadata;
        if (usage == null) continue;
        seen.calls += 1;
        seen.input_tokens += usage.input_tokens ?? 0;
        seen.output_tokens += usage.output_tokens ?? 0;
      }
    },
  };
  const usage = () => (seen.calls === 0 ? null : { input_tokens: seen.input_tokens, output_tokens: seen.output_tokens });
  return { handler, usage };
}

function errorType(error) {
  const type = error?.constructor;
  const name = type?.name ?? typeof error;
  if (parsers[name] === type || errors[name] === type) return `@langchain/core.${name}`;
  if (z[name] === type || name === "$ZodError") return `zod.${name}`;
  if (OpenAI[name] === type) return `openai.${name}`;
  if (Anthropic[name] === type) return `@anthropic-ai/sdk.${name}`;
  return `node.${name}`;
}

export async function run(request) {
  const runnable = structured(request);
  const { handler, usage } = usageCollector();
  const options = { callbacks: [handler] };
  const details = { method: METHODS[request.cell.mode] };
  try {
    let object;
    if (request.cell.variant === "stream") {
      const chunks = await runnable.stream(request.prompt, options);
      let count = 0;
      for await (const chunk of chunks) {
        object = chunk; // a streaming caller keeps the latest object
        count += 1;
      }
      details.stream_chunks = String(count);
    } else {
      object = await runnable.invoke(request.prompt, options);
    }
    return report(object == null ? { kind: "none" } : { kind: "json", data: object }, null, usage(), details);
  } catch (error) {
    const exception = { type: errorType(error), message: String(error?.message ?? error).slice(0, MESSAGE_LIMIT) };
    return report({ kind: "none" }, exception, usage(), details);
  }
}

function report(output, exception, usage, details) {
  return { output, exception, usage, fallback: false, planned_calls: 0, details, tool_invocations: [] };
}

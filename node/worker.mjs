// The Node worker: drives one TypeScript SDK's driver (adapters/<sdk>/driver.mjs), one cell at a
// time, over the JSON-lines protocol of the Python release workers (bench/releases/protocol.py):
// it says {"ready": true, "sdk_version": ...} once the SDK is imported, then answers each request
// line with {"result": {...}} (the AdapterResult's JSON form) or {"harness": {...}} (an error
// that escaped the driver). Protocol lines go to fd 1 only through send(); whatever the SDK
// prints (console.log included) goes to stderr, the run's sdk.log. It exits when its stdin
// closes, whatever it is doing: no worker outlives the process that started it.
//
//   node node/worker.mjs adapters/ai/driver.mjs
import { register } from "node:module";
import { writeSync } from "node:fs";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { resolve as resolvePath } from "node:path";

const MESSAGE_LIMIT = 4000;
const PROTOCOL_FD = 1;

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function send(message) {
  // Whole, however long: on a pipe a write may take part of the line or none (EAGAIN, the pipe
  // full while the parent is busy), so the rest is written until it is all out.
  let rest = Buffer.from(JSON.stringify(message) + "\n");
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(PROTOCOL_FD, rest));
    } catch (error) {
      if (error.code !== "EAGAIN") throw error;
      Atomics.wait(PAUSE, 0, 0, 1); // 1 ms, then again
    }
  }
}

function protectProtocol() {
  // The SDK's own prints must never reach the protocol stream.
  const toStderr = (...args) => console.error(...args);
  console.log = console.info = console.debug = toStderr;
  process.stdout.write = process.stderr.write.bind(process.stderr);
}

function harness(error) {
  const type = error?.constructor?.name ?? typeof error;
  return {
    harness: {
      type: `node.${type}`,
      message: String(error?.message ?? error).slice(0, MESSAGE_LIMIT),
      traceback: String(error?.stack ?? error).slice(-MESSAGE_LIMIT),
    },
  };
}

async function main(driverPath) {
  protectProtocol();
  register("./resolve.mjs", import.meta.url);
  let driver;
  try {
    driver = await import(pathToFileURL(resolvePath(driverPath)).href);
    await driver.ready?.();
  } catch (error) {
    send({ ready: false, error: `${error?.name ?? "Error"}: ${error?.message ?? error}` });
    process.exit(1);
  }
  send({ ready: true, sdk_version: driver.SDK_VERSION, node: process.version });
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("close", () => process.exit(0)); // the parent closed stdin (or died): stop now
  for await (const line of lines) {
    if (!line.trim()) continue;
    let reply;
    try {
      reply = { result: await driver.run(JSON.parse(line)) };
    } catch (error) {
      reply = harness(error);
    }
    send(reply);
  }
}

await main(process.argv[2]);

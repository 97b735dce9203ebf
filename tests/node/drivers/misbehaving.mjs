// A driver that misbehaves on purpose, by the cell's variant, for tests/node/test_node_pool.py:
// the worker's supervision is what is under test, not an SDK.
import { writeSync } from "node:fs";

export const SDK_VERSION = "0.0.0-test";

export async function run(request) {
  const variant = request.cell.variant;
  if (variant === "garbage") writeSync(1, "this line is not the protocol's JSON\n");
  if (variant === "die") process.exit(7);
  if (variant === "hang") await new Promise(() => {});
  if (variant === "throw") throw new TypeError("the driver's own bug");
  if (variant === "big") {
    // an answer far past a pipe's buffer (64 KiB), written while the parent may be busy
    return { output: { kind: "json", data: { pid: process.pid, text: "x".repeat(4 << 20) } },
             exception: null, usage: null, fallback: false, planned_calls: 0, details: {}, tool_invocations: [] };
  }
  console.log("printed by the SDK: must reach stderr, not the protocol");
  return {
    output: { kind: "json", data: { pid: process.pid } },
    exception: null, usage: null, fallback: false, planned_calls: 0, details: {}, tool_invocations: [],
  };
}

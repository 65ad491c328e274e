// Drives `elench mcp` with the official MCP TypeScript SDK, as a TypeScript agent (or the MCP
// Inspector) does: connect over stdio, list the tools, make calls that succeed and calls that
// fail. The SDK checks every result that carries `structuredContent` against the tool's
// `outputSchema` and throws (-32602) when it does not match, so a failure must reach the
// agent as a tool result it accepts: `isError: true` and the error in its text.
//
// Run by tests/it/mcp.rs, which makes the store, the keys and the tree and passes them in
// the environment: ELENCH_BIN, ELENCH_TEST_STORE, ELENCH_TEST_TREE, ELENCH_TEST_AGENT_KEY.
// Prints one line per check; exits 1 when any check failed.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v;
}

const bin = need("ELENCH_BIN");
const store = need("ELENCH_TEST_STORE");
const tree = need("ELENCH_TEST_TREE");
const agentKey = need("ELENCH_TEST_AGENT_KEY");

let passed = 0;
let failed = 0;

function check(ok, what, detail) {
  if (ok) {
    passed += 1;
    console.log(`ok: ${what}`);
  } else {
    failed += 1;
    console.log(`FAILED: ${what}${detail === undefined ? "" : `: ${detail}`}`);
  }
  return ok;
}

async function connect(extra) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ["--store", store, "mcp", "--at", tree, ...extra],
    env: { ...process.env },
    stderr: "inherit",
  });
  const client = new Client({ name: "elench-ts-test", version: "0" });
  await client.connect(transport);
  return client;
}

/** A call that must succeed: the SDK has checked its structured content against the schema. */
async function ok(client, name, args) {
  let r;
  try {
    r = await client.callTool({ name, arguments: args });
  } catch (e) {
    check(false, `${name} succeeds`, `the SDK threw: ${e}`);
    return null;
  }
  if (!check(r.isError !== true, `${name} succeeds`, JSON.stringify(r))) return null;
  check(
    typeof r.structuredContent === "object" && r.structuredContent !== null,
    `${name} carries structured content`,
    JSON.stringify(r),
  );
  return r.structuredContent;
}

/** A call that must fail as a tool result the SDK accepts, with elench's error code. */
async function err(client, name, args, code) {
  const what = `${name} ${JSON.stringify(args)} fails with ${code}`;
  let r;
  try {
    r = await client.callTool({ name, arguments: args });
  } catch (e) {
    const c = e instanceof McpError ? ` (code ${e.code})` : "";
    check(false, what, `the SDK threw${c}: ${e.message}`);
    return null;
  }
  if (!check(r.isError === true, `${what}: isError`, JSON.stringify(r))) return null;
  check(
    r.structuredContent === undefined,
    `${what}: no structured content (the output schema describes success only)`,
    JSON.stringify(r.structuredContent),
  );
  const text = r.content?.[0]?.type === "text" ? r.content[0].text : undefined;
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    check(false, `${what}: its text is JSON`, `${e}: ${text}`);
    return null;
  }
  check(body?.error?.code === code, `${what}: error.code`, text);
  check(
    typeof body?.error?.message === "string" && body.error.message.length > 0,
    `${what}: error.message`,
    text,
  );
  check(
    typeof body?.error?.suggestion === "string" && body.error.suggestion.length > 0,
    `${what}: error.suggestion`,
    text,
  );
  check(Array.isArray(body?.warnings), `${what}: warnings`, text);
  return body.error;
}

async function main() {
  // A server that may claim.
  const c = await connect(["--key", agentKey]);
  const tools = (await c.listTools()).tools;
  const names = tools.map((t) => t.name);
  check(
    JSON.stringify(names) ===
      JSON.stringify([
        "claims_for", "status", "blast", "why", "show", "log", "trust_show", "claim", "gate",
      ]),
    "tools/list names the tools",
    JSON.stringify(names),
  );
  check(
    tools.every((t) => t.outputSchema?.type === "object"),
    "every tool has an output schema",
  );
  // The team's trust as the store holds it (no policy here): the SDK checks the result
  // against the tool's output schema.
  const trust = await ok(c, "trust_show", {});
  check(trust && typeof trust === "object", "trust_show answers", JSON.stringify(trust));

  const a = await ok(c, "claim", {
    text: "parse reads the first byte",
    anchor: ["src/lib.rs:1-3"],
    predicate: 'exists("src/lib.rs")',
    timestamp: 1700000000,
  });
  check(a?.effect === "created", "claim creates", JSON.stringify(a));
  const aId = a?.id ?? "cl_0000";
  const b = await ok(c, "claim", { text: "parse never panics", depends_on: [aId.slice(0, 10)] });
  const bId = b?.id ?? "cl_0000";
  const st = await ok(c, "status", { ids: [aId, bId] });
  check(st?.claims?.length === 2, "status gives both claims", JSON.stringify(st));
  const blast = await ok(c, "blast", { id: aId });
  check(blast?.count === 1, "blast counts the claim built on it", JSON.stringify(blast));
  const why = await ok(c, "why", { from: bId, to: aId });
  check(why?.length === 1, "why finds the step", JSON.stringify(why));
  await ok(c, "show", { id: aId });
  const log = await ok(c, "log", { limit: 1 });
  check(log?.pagination?.has_more === true, "log pages", JSON.stringify(log));
  const about = await ok(c, "claims_for", { paths: ["src/lib.rs"] });
  check(about?.claims?.[0]?.id === aId, "claims_for names the anchored claim", JSON.stringify(about));
  const gate = await ok(c, "gate", { policy_toml: "[rules]\nmax_unevaluated = 0\n" });
  check(gate?.pass === false, "a gate that refuses the tree is an answer", JSON.stringify(gate));
  // A revoked claim's violation with its falsified root, and a policy file's place: the SDK
  // checks them against the output schema.
  await ok(c, "claim", { text: "parse is total", anchor: ["src/lib.rs:2-3"], depends_on: [aId] });
  await ok(c, "claim", { kind: "falsification", target: [aId], text: "it reads two" });
  writeFileSync(join(tree, "release.toml"), '[rules]\nforbid = ["revoked"]\nmin_in_scope = 9\n');
  const fell = await ok(c, "gate", { policy: "release.toml" });
  check(
    fell?.violations?.some((v) => v.roots?.[0]?.id === aId) &&
      fell?.policy_place?.path === "release.toml",
    "a gate places a revoked claim's root and the policy",
    JSON.stringify(fell),
  );

  // Failures, each a tool result the SDK takes as it is.
  await err(c, "status", { ids: ["cl_" + "0".repeat(63) + "9"] }, "NOT_FOUND");
  await err(c, "show", { id: "cl_0123abcd" }, "NOT_FOUND");
  await err(c, "why", { from: aId }, "BAD_ARGUMENTS");
  await err(c, "claim", { text: "x", producer: "someone-else" }, "BAD_ARGUMENTS");
  await err(c, "claim", { kind: "verification", target: [aId] }, "ROLE_VIOLATION");
  await err(c, "claim", { text: "bad", predicate: "exists(" }, "PREDICATE_PARSE_ERROR");
  await err(c, "gate", { policy_toml: "[rules\n" }, "BAD_POLICY");
  // The session goes on after failures.
  const again = await ok(c, "status", { ids: [aId] });
  check(again?.claims?.[0]?.id === aId, "the session goes on after failures", JSON.stringify(again));
  await c.close();

  // A read-only server: a tool that would change the log is not served (a protocol error
  // the SDK reports as one, naming --read-only), and a read that fails is a tool result.
  const r = await connect(["--read-only"]);
  const ro = (await r.listTools()).tools.map((t) => t.name);
  check(!ro.includes("claim"), "--read-only does not list claim", JSON.stringify(ro));
  try {
    const res = await r.callTool({ name: "claim", arguments: { text: "x" } });
    check(false, "claim under --read-only is refused", JSON.stringify(res));
  } catch (e) {
    check(
      e instanceof McpError && e.code === -32602 && /--read-only/.test(e.message),
      "claim under --read-only is refused, naming --read-only",
      `${e}`,
    );
  }
  await err(r, "status", { ids: ["cl_0123abcd"] }, "NOT_FOUND");
  await r.close();
}

try {
  await main();
} catch (e) {
  check(false, "the session runs", e?.stack ?? `${e}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

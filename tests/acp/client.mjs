// A whole ACP session driven by the official TypeScript SDK (@agentclientprotocol/sdk,
// ClientApp over ndJsonStream) against `pith acp`, for tests/cli_acp.rs. The script plays
// the editor: it answers permission questions, cancels, loads the session in a second
// connection, and sends a malformed line. It prints one JSON report on stdout: every
// line pith wrote to its stdout, and per phase the updates, questions and answers seen.
// Every message pith sends is also checked against the protocol's schema as the SDK
// publishes it (its zod schemas, generated from schema.json): notifications and requests
// by method, responses by the method of the request they answer, errors as JSON-RPC
// errors. The Rust test judges the report.
//
// Environment: PITH_TEST_ACP_SDK (the SDK's package directory), PITH_BIN, PITH_ACP_CWD,
// PITH_ACP_MODEL; everything else (keys, base URLs, PITH_HOME) is passed on to pith.

import { spawn } from "node:child_process";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.PITH_TEST_ACP_SDK;
const sdk = await import(pathToFileURL(`${sdkDir}/dist/v1/stable/acp.js`).href);
const zod = await import(pathToFileURL(`${sdkDir}/dist/v1/schema/zod.gen.js`).href);
const cwd = process.env.PITH_ACP_CWD;
const report = { stdout: [], uncorrelated: [], phases: {}, exits: [], schema: { checked: 0, errors: [] } };

/// The schema of the result of each request the client sends (extension methods have
/// none in the protocol's schema).
const resultSchemas = {
  initialize: zod.zInitializeResponse,
  "session/new": zod.zNewSessionResponse,
  "session/load": zod.zLoadSessionResponse,
  "session/list": zod.zListSessionsResponse,
  "session/set_mode": zod.zSetSessionModeResponse,
  "session/prompt": zod.zPromptResponse,
  "session/resume": zod.zResumeSessionResponse,
  "session/close": zod.zCloseSessionResponse,
  "session/delete": zod.zDeleteSessionResponse,
  "session/set_config_option": zod.zSetSessionConfigOptionResponse,
};
const messageSchemas = {
  "session/update": zod.zSessionNotification,
  "session/request_permission": zod.zRequestPermissionRequest,
};

/// Checks one message pith sent; `sent` maps the client's request ids to methods.
function checkSchema(message, sent) {
  let schema = null;
  let value = null;
  if (typeof message.method === "string") {
    schema = messageSchemas[message.method];
    value = message.params;
    if (!schema) {
      report.schema.errors.push({ unknownMethod: message.method });
      return;
    }
  } else if (message.error !== undefined) {
    schema = zod.zError;
    value = message.error;
  } else {
    const method = sent.get(message.id);
    if (method && method.startsWith("_")) return;
    schema = resultSchemas[method];
    value = message.result;
    if (!schema) {
      report.schema.errors.push({ unknownResponse: message.id, method });
      return;
    }
  }
  const checked = schema.safeParse(value);
  report.schema.checked += 1;
  if (!checked.success) {
    report.schema.errors.push({ message, issues: checked.error.issues });
  }
}

let phase = "setup";
let onUpdate = () => {};
const answers = [];

function record(kind, value) {
  (report.phases[phase] ??= []).push({ kind, ...value });
}

/// Starts `pith acp` and a client connected to it; `op` gets the agent context.
async function connection(op) {
  const child = spawn(process.env.PITH_BIN, ["acp", "--model", process.env.PITH_ACP_MODEL], {
    cwd,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  let buffered = "";
  let open = true;
  const sent = new Map();
  const lastIds = new Map();
  const input = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (data) => {
        buffered += data.toString("utf8");
        let end;
        while ((end = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, end);
          buffered = buffered.slice(end + 1);
          report.stdout.push(line);
          let message = null;
          try {
            message = JSON.parse(line);
          } catch {
            // Kept in report.stdout: the test fails on it.
          }
          // An error answering no request (a line that was not JSON) has `id: null`; it
          // belongs to no call of the SDK, so it is recorded here instead.
          if (message) checkSchema(message, sent);
          if (message && message.id === null) {
            report.uncorrelated.push(message);
            continue;
          }
          if (open) controller.enqueue(new TextEncoder().encode(line + "\n"));
        }
      });
      child.stdout.on("end", () => {
        if (open) controller.close();
        open = false;
      });
    },
    cancel() {
      open = false;
    },
  });
  const output = new WritableStream({
    write(chunk) {
      for (const line of new TextDecoder().decode(chunk).split("\n")) {
        try {
          const message = JSON.parse(line);
          if (message.method !== undefined && message.id !== undefined) {
            sent.set(message.id, message.method);
            lastIds.set(message.method, message.id);
          }
        } catch {
          // Not a whole message: nothing to note.
        }
      }
      return new Promise((resolve, reject) =>
        child.stdin.write(chunk, (error) => (error ? reject(error) : resolve())),
      );
    },
  });
  const app = sdk
    .client()
    .onNotification("session/update", ({ params }) => {
      record("update", { update: params.update, sessionId: params.sessionId });
      onUpdate(params.update);
    })
    .onRequest("session/request_permission", ({ params }) => {
      const optionId = answers.shift() ?? "reject";
      record("permission", { request: params, answer: optionId });
      return { outcome: { outcome: "selected", optionId } };
    });
  const result = await app.connectWith(sdk.ndJsonStream(output, input), (ctx) =>
    op(ctx, child, lastIds),
  );
  child.stdin.end();
  report.exits.push(await exited);
  return result;
}

async function attempt(what, call) {
  try {
    const value = await call();
    record("ok", { what, value });
    return value;
  } catch (error) {
    record("error", { what, code: error.code, message: error.message, data: error.data });
    return null;
  }
}

const initialize = {
  protocolVersion: 1,
  clientCapabilities: {
    fs: { readTextFile: false, writeTextFile: false },
    terminal: false,
    session: { compaction: {}, notices: {} },
  },
  clientInfo: { name: "pith-acp-test", version: "1.0.0" },
};

let sessionId = null;
await connection(async (ctx, child) => {
  phase = "initialize";
  await attempt("initialize", () => ctx.request("initialize", initialize));

  phase = "new";
  const created = await attempt("session/new", () =>
    ctx.request("session/new", { cwd, mcpServers: [] }),
  );
  sessionId = created.sessionId;

  // A write (allowed once), a command (rejected), then an automatic compaction.
  phase = "tools";
  answers.push("allow-once", "reject");
  await attempt("prompt", () =>
    ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "write the file, then run a command" }],
    }),
  );

  // An automatic compaction cancelled alone: the turn goes on.
  phase = "cancel-compaction";
  onUpdate = (update) => {
    if (update.sessionUpdate === "compaction_update" && update.status === "in_progress") {
      onUpdate = () => {};
      attempt("_pith/cancel_compaction", () =>
        ctx.request("_pith/cancel_compaction", { sessionId }),
      );
    }
  };
  await attempt("prompt", () =>
    ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "read it again" }],
    }),
  );

  // The turn cancelled while the answer streams.
  phase = "cancel-turn";
  onUpdate = (update) => {
    if (update.sessionUpdate === "agent_message_chunk") {
      onUpdate = () => {};
      ctx.notify("session/cancel", { sessionId });
    }
  };
  await attempt("prompt", () =>
    ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "tell me a long story" }],
    }),
  );
  onUpdate = () => {};

  // Malformed input: a line that is not JSON, a prompt without its fields, an unknown
  // mode, an unknown session; then the connection still answers.
  phase = "malformed";
  child.stdin.write("this is not json\n");
  await attempt("prompt without params", () => ctx.request("session/prompt", {}));
  await attempt("unknown mode", () =>
    ctx.request("session/set_mode", { sessionId, modeId: "yolo" }),
  );
  await attempt("unknown session", () =>
    ctx.request("session/set_mode", { sessionId: "no-such-session", modeId: "full" }),
  );
  await attempt("set_mode full", () =>
    ctx.request("session/set_mode", { sessionId, modeId: "full" }),
  );
});

// A second connection loads the session: the transcript comes back as updates.
await connection(async (ctx) => {
  phase = "load";
  await attempt("initialize", () => ctx.request("initialize", initialize));
  await attempt("session/load", () =>
    ctx.request("session/load", { sessionId, cwd, mcpServers: [] }),
  );
  await attempt("session/list", () => ctx.request("session/list", { cwd }));
});

// A third connection: the 2026 stable methods. Resume (no replay), an option changed, the
// list, a prompt cancelled by `$/cancel_request`, then close and delete.
await connection(async (ctx, child, lastIds) => {
  phase = "stable";
  await attempt("initialize", () => ctx.request("initialize", initialize));
  await attempt("session/resume", () =>
    ctx.request("session/resume", { sessionId, cwd, mcpServers: [] }),
  );
  await attempt("session/set_config_option", () =>
    ctx.request("session/set_config_option", { sessionId, configId: "reasoning", value: "low" }),
  );
  await attempt("session/list", () => ctx.request("session/list", { cwd }));
  onUpdate = (update) => {
    if (update.sessionUpdate === "agent_message_chunk") {
      onUpdate = () => {};
      ctx.notify("$/cancel_request", { requestId: lastIds.get("session/prompt") });
    }
  };
  await attempt("prompt", () =>
    ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "another long story" }],
    }),
  );
  onUpdate = () => {};
  await attempt("session/close", () => ctx.request("session/close", { sessionId }));
  await attempt("session/delete", () => ctx.request("session/delete", { sessionId }));
  await attempt("session/list after delete", () => ctx.request("session/list", { cwd }));
});

process.stdout.write(JSON.stringify(report) + "\n");

// fixture-server.mjs — the downstream MCP server behind `toolgate serve` in
// the conformance test (tests/integration/mcp_conformance.sh).  toolgate
// bridges it with prefix "" (tests/mcp/conformance.yaml), so the conformance
// suite's server scenarios find the tools they call under their own names,
// and every call they make goes through the gate and its bridge: the content
// blocks, log notifications, progress, and elicitation and sampling requests
// the suite checks are relayed by toolgate, not answered by this file.
//
// Owns: exactly the tools the server scenarios of @modelcontextprotocol/
// conformance call, with the content and behaviour each scenario checks,
// on the official SDK (McpServer over stdio).  Must not: write anything but
// MCP on stdout, or answer for toolgate (it knows nothing of the gate).
//
//   node fixture-server.mjs          serve on stdin/stdout until stdin closes

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/v4";

// A 1x1 red PNG.
const PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

// A WAV file: 8 kHz, mono, 16-bit PCM, `samples` samples of silence.
function wavBase64(samples) {
  const data = samples * 2;
  const b = Buffer.alloc(44 + data);
  b.write("RIFF", 0);
  b.writeUInt32LE(36 + data, 4);
  b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16); // fmt chunk size
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // channels
  b.writeUInt32LE(8000, 24); // sample rate
  b.writeUInt32LE(16000, 28); // byte rate
  b.writeUInt16LE(2, 32); // block align
  b.writeUInt16LE(16, 34); // bits per sample
  b.write("data", 36);
  b.writeUInt32LE(data, 40);
  return b.toString("base64");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ type: "text", text: t });
const NO_ARGS = { type: "object", properties: {}, additionalProperties: false };

const server = new McpServer(
  { name: "toolgate-conformance-fixture", version: "1.0.0" },
  { capabilities: { logging: {}, tools: { listChanged: true } } },
);

// Ask the client of this call (through toolgate, the client of the call
// upstream) for something; refuse as the spec says when it cannot answer.
async function ask(extra, capability, method, params, schema) {
  if (!server.server.getClientCapabilities()?.[capability])
    throw new Error(`the client did not declare the ${capability} capability`);
  return extra.sendRequest({ method, params }, schema);
}

const elicitationDone = (r) =>
  `Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`;

// One row per tool: the definition listed as is (inputSchema verbatim, so
// JSON Schema 2020-12 keywords reach the client), and what a call does.
const tools = [
  {
    name: "test_simple_text",
    description: "Returns one text block.",
    annotations: { readOnlyHint: true },
    run: async () => ({ content: [text("This is a simple text response for testing.")] }),
  },
  {
    name: "test_image_content",
    description: "Returns one image block (a 1x1 PNG).",
    annotations: { readOnlyHint: true },
    run: async () => ({ content: [{ type: "image", data: PNG_BASE64, mimeType: "image/png" }] }),
  },
  {
    name: "test_audio_content",
    description: "Returns one audio block (a short WAV).",
    annotations: { readOnlyHint: true },
    run: async () => ({
      content: [{ type: "audio", data: wavBase64(8), mimeType: "audio/wav" }],
    }),
  },
  {
    name: "test_embedded_resource",
    description: "Returns one embedded text resource.",
    annotations: { readOnlyHint: true },
    run: async () => ({
      content: [
        {
          type: "resource",
          resource: {
            uri: "test://embedded-resource",
            mimeType: "text/plain",
            text: "This is an embedded resource content.",
          },
        },
      ],
    }),
  },
  {
    name: "test_multiple_content_types",
    description: "Returns a text, an image and an embedded resource block.",
    annotations: { readOnlyHint: true },
    run: async () => ({
      content: [
        text("Multiple content types test:"),
        { type: "image", data: PNG_BASE64, mimeType: "image/png" },
        {
          type: "resource",
          resource: {
            uri: "test://mixed-content-resource",
            mimeType: "application/json",
            text: JSON.stringify({ test: "data", value: 123 }),
          },
        },
      ],
    }),
  },
  {
    name: "test_tool_with_logging",
    description: "Sends three info log messages, 50 ms apart, while it runs.",
    annotations: { readOnlyHint: true },
    run: async (args, extra) => {
      const steps = ["Tool execution started", "Tool processing data", "Tool execution completed"];
      for (const [i, data] of steps.entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({
          method: "notifications/message",
          params: { level: "info", logger: "fixture", data },
        });
      }
      return { content: [text("Tool with logging executed successfully")] };
    },
  },
  {
    name: "test_tool_with_progress",
    description: "Reports progress 0, 50 and 100 of 100, 50 ms apart, when asked to.",
    annotations: { readOnlyHint: true },
    run: async (args, extra) => {
      const token = extra._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (token !== undefined)
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress, total: 100, message: `step ${progress}/100` },
          });
      }
      // The SDK client handles a notification a tick later than the
      // response that follows it at once, and drops it then: pause first.
      await sleep(50);
      return { content: [text("Tool with progress executed successfully")] };
    },
  },
  {
    name: "test_error_handling",
    description: "Always fails.",
    annotations: { readOnlyHint: true },
    run: async () => {
      throw new Error("This tool intentionally returns an error for testing");
    },
  },
  {
    name: "test_reconnection",
    description:
      "Answers after 100 ms (SEP-1699: closing the stream mid-call is the front server's part).",
    annotations: { readOnlyHint: true },
    run: async () => {
      await sleep(100);
      return { content: [text("Reconnection test completed successfully.")] };
    },
  },
  {
    name: "test_sampling",
    description: "Asks the client's LLM to complete the prompt (sampling/createMessage).",
    inputSchema: {
      type: "object",
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"],
    },
    run: async (args, extra) => {
      const r = await ask(
        extra,
        "sampling",
        "sampling/createMessage",
        {
          messages: [{ role: "user", content: text(args.prompt) }],
          maxTokens: 100,
        },
        CreateMessageResultSchema,
      );
      const answer = Array.isArray(r.content)
        ? r.content.map((c) => c.text ?? "").join("")
        : (r.content?.text ?? "");
      return { content: [text(`LLM response: ${answer}`)] };
    },
  },
  {
    name: "test_elicitation",
    description: "Asks the user for a username and an email (elicitation/create).",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"],
    },
    run: async (args, extra) => {
      const r = await ask(
        extra,
        "elicitation",
        "elicitation/create",
        {
          mode: "form",
          message: args.message,
          requestedSchema: {
            type: "object",
            properties: {
              username: { type: "string", description: "User's response" },
              email: { type: "string", description: "User's email address" },
            },
            required: ["username", "email"],
          },
        },
        ElicitResultSchema,
      );
      return {
        content: [
          text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`),
        ],
      };
    },
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Asks for a form whose every primitive field has a default (SEP-1034).",
    run: async (args, extra) => {
      const r = await ask(
        extra,
        "elicitation",
        "elicitation/create",
        {
          mode: "form",
          message: "Please review the fields; each has a default",
          requestedSchema: {
            type: "object",
            properties: {
              name: { type: "string", description: "User name", default: "John Doe" },
              age: { type: "integer", description: "User age", default: 30 },
              score: { type: "number", description: "User score", default: 95.5 },
              status: {
                type: "string",
                description: "User status",
                enum: ["active", "inactive", "pending"],
                default: "active",
              },
              verified: { type: "boolean", description: "Verification status", default: true },
            },
            required: [],
          },
        },
        ElicitResultSchema,
      );
      return { content: [text(elicitationDone(r))] };
    },
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Asks for a form with the five enum shapes of SEP-1330.",
    run: async (args, extra) => {
      const titled = (prefix, titles) =>
        titles.map((title, i) => ({ const: `value${i + 1}`, title: `${title} ${prefix}` }));
      const r = await ask(
        extra,
        "elicitation",
        "elicitation/create",
        {
          mode: "form",
          message: "Please pick from each list",
          requestedSchema: {
            type: "object",
            properties: {
              untitledSingle: {
                type: "string",
                description: "Pick one",
                enum: ["option1", "option2", "option3"],
              },
              titledSingle: {
                type: "string",
                description: "Pick one (titled)",
                oneOf: titled("Option", ["First", "Second", "Third"]),
              },
              legacyEnum: {
                type: "string",
                description: "Pick one (legacy titles)",
                enum: ["opt1", "opt2", "opt3"],
                enumNames: ["Option One", "Option Two", "Option Three"],
              },
              untitledMulti: {
                type: "array",
                description: "Pick some",
                minItems: 1,
                maxItems: 3,
                items: { type: "string", enum: ["option1", "option2", "option3"] },
              },
              titledMulti: {
                type: "array",
                description: "Pick some (titled)",
                minItems: 1,
                maxItems: 3,
                items: { anyOf: titled("Choice", ["First", "Second", "Third"]) },
              },
            },
            required: [],
          },
        },
        ElicitResultSchema,
      );
      return { content: [text(elicitationDone(r))] };
    },
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Takes arguments described with JSON Schema 2020-12 keywords (SEP-1613).",
    annotations: { readOnlyHint: true },
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
    run: async (args) => ({ content: [text(`called with ${JSON.stringify(args)}`)] }),
  },
];

// McpServer routes each call to its row (and turns a throw into an isError
// result); its own listing would re-derive the schemas, so tools/list
// answers from the rows instead.  The arguments are not checked here: the
// gate validates them against the listed schema before forwarding.
for (const t of tools)
  server.registerTool(
    t.name,
    { description: t.description, inputSchema: z.looseObject({}), annotations: t.annotations },
    (args, extra) => t.run(args, extra),
  );
server.server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: tools.map(({ name, description, annotations, inputSchema }) => ({
    name,
    description,
    inputSchema: inputSchema ?? NO_ARGS,
    ...(annotations && { annotations }),
  })),
}));

await server.connect(new StdioServerTransport());
// stdin closed: the bridge is shutting us down
process.stdin.on("end", () => server.close().finally(() => process.exit(0)));

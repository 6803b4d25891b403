// The differential harness's JS scenario: LangGraph's JS SDK (the Client of
// @langchain/langgraph-sdk, from tests/js/node_modules) against one server.
//   node js_client.mjs <tests/js folder> <apiUrl> <token>
// Prints one JSON object: each step's events ([event, data]) or result, or its error.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [jsDir, apiUrl, token] = process.argv.slice(2);
const entry = join(jsDir, "node_modules/@langchain/langgraph-sdk/dist/index.js");
const { Client } = await import(pathToFileURL(entry).href);
const client = new Client({ apiUrl, defaultHeaders: { Authorization: `Bearer ${token}` } });

const out = {};

// of a message event's metadata, its node (as the Python scenarios compare it)
const shown = (part) =>
  part.event === "messages" && Array.isArray(part.data)
    ? [part.data[0], { langgraph_node: part.data[1]?.langgraph_node }]
    : part.data;

async function events(name, stream) {
  const seen = [];
  try {
    for await (const part of stream) seen.push([part.event, shown(part)]);
  } catch (error) {
    seen.push(["<raised>", String(error?.status ?? error?.name ?? error)]);
  }
  out[name] = seen;
}

async function result(name, work) {
  try {
    out[name] = { ok: await work };
  } catch (error) {
    out[name] = { status: error?.status ?? null, raised: error?.name ?? String(error) };
  }
}

const say = (text) => ({ messages: [{ role: "user", content: text }] });

// a tool-calling agent, streamed as a chat UI streams it
const agent = await client.threads.create();
await events(
  "agent stream",
  client.runs.stream(agent.thread_id, "agent", {
    input: say("weather in Lima"),
    streamMode: ["values", "messages-tuple"],
  }),
);
await result("agent state", client.threads.getState(agent.thread_id).then((s) => s.values));

// an interrupt and its resume with a Command
const review = await client.threads.create();
await events(
  "ask",
  client.runs.stream(review.thread_id, "hitl", { input: { topic: "js" }, streamMode: "updates" }),
);
await result("thread", client.threads.get(review.thread_id).then((t) => [t.status, t.interrupts]));
await events(
  "resume",
  client.runs.stream(review.thread_id, "hitl", {
    command: { resume: "yes" },
    streamMode: "updates",
  }),
);

// a run's result, and a failing one
await result("wait", client.runs.wait(null, "chat", { input: say("from js") }));
await result("wait fails", client.runs.wait(null, "fails", { input: {} }));

// errors as the JS SDK raises them
await result("missing thread", client.threads.get("00000000-0000-0000-0000-0000000000ab"));
await result("copy of another's", client.threads.copy("00000000-0000-0000-0000-0000000000ab"));

console.log(JSON.stringify(out));

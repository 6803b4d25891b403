// The LangGraph JS SDK's Client (not the hook) against a server: node client.mjs <apiUrl>
//
// 1. lg_chat: create a thread, stream a run (values + messages-tuple), read the state, then
//    joinStream the finished run with Last-Event-ID "-1" (replay everything).
// 2. lg_hitl: stream until the interrupt, read the thread and its state, resume with
//    command.resume as a new stream run, read the history.
//
// Prints one JSON object on stdout; tests/test_lg_js.py asserts on it. Every HTTP call the
// SDK makes is recorded too (method, path, Last-Event-ID, status, headers that matter).
// On a failure it still prints what it saw, with "error" set in the failed scenario's part
// (or at the top for a time-out), and exits 1.
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.argv[2];
const TIMEOUT_MS = Number(process.argv[3] ?? 60_000);
if (!apiUrl) {
  console.error("usage: node client.mjs <apiUrl> [timeout ms]");
  process.exit(2);
}

const out = { api_url: apiUrl, requests: [] };

// Record every request the SDK sends (it calls the global fetch at request time).
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = new URL(typeof input === "string" ? input : input.url);
  const headers = new Headers(init.headers ?? {});
  const entry = {
    method: (init.method ?? "GET").toUpperCase(),
    path: url.pathname,
    query: url.search,
    last_event_id: headers.get("last-event-id"),
    body: typeof init.body === "string" ? safeJson(init.body) : null,
  };
  out.requests.push(entry);
  const response = await realFetch(input, init);
  entry.status = response.status;
  entry.content_type = response.headers.get("content-type");
  entry.location = response.headers.get("location");
  entry.content_location = response.headers.get("content-location");
  return response;
};

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function finish(code) {
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(code));
}

const timer = setTimeout(() => {
  out.error = `timed out after ${TIMEOUT_MS} ms (stage: ${out.stage})`;
  finish(1);
}, TIMEOUT_MS);

// Appends to `events` as parts arrive, so a stream that fails or hangs still shows its start.
async function collect(iterable, events) {
  for await (const part of iterable) {
    events.push({ event: part.event, id: part.id ?? null, data: part.data });
  }
}

const client = new Client({ apiUrl });

async function chat() {
  const result = {};
  out.chat = result;
  out.stage = "chat: create thread";
  const thread = await client.threads.create();
  result.thread_id = thread.thread_id;

  out.stage = "chat: stream";
  result.events = [];
  await collect(
    client.runs.stream(thread.thread_id, "lg_chat", {
      input: { messages: [{ role: "user", content: "hi" }] },
      // a chunk every 120 ms: longer than a server's token-coalescing interval (outlast's
      // default is 100 ms), so the reply arrives as several message chunks
      config: { configurable: { delay: 0.12 } },
      streamMode: ["values", "messages-tuple"],
      onRunCreated: (meta) => {
        result.run_created = meta;
      },
    }),
    result.events,
  );

  out.stage = "chat: getState";
  result.state = await client.threads.getState(thread.thread_id);

  out.stage = "chat: joinStream -1";
  const runId = result.run_created?.run_id;
  if (!runId) throw new Error("onRunCreated was never called (no Content-Location?)");
  result.joined = [];
  await collect(
    client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }),
    result.joined,
  );
}

async function hitl() {
  const result = {};
  out.hitl = result;
  out.stage = "hitl: create thread";
  const thread = await client.threads.create();
  result.thread_id = thread.thread_id;

  out.stage = "hitl: stream to the interrupt";
  result.first = { events: [] };
  await collect(
    client.runs.stream(thread.thread_id, "lg_hitl", {
      input: { topic: "x" },
      streamMode: ["values", "updates"],
      onRunCreated: (meta) => {
        result.first.run_created = meta;
      },
    }),
    result.first.events,
  );

  out.stage = "hitl: thread and state at the interrupt";
  result.thread_at_interrupt = await client.threads.get(thread.thread_id);
  result.state_at_interrupt = await client.threads.getState(thread.thread_id);

  out.stage = "hitl: resume";
  result.resume = { events: [] };
  await collect(
    client.runs.stream(thread.thread_id, "lg_hitl", {
      command: { resume: "yes" },
      streamMode: ["values"],
      onRunCreated: (meta) => {
        result.resume.run_created = meta;
      },
    }),
    result.resume.events,
  );

  out.stage = "hitl: history";
  result.history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
  result.thread_after = await client.threads.get(thread.thread_id);
}

// Each scenario runs even when the other failed; its error is kept in its own part.
let failed = false;
for (const [name, scenario] of [
  ["chat", chat],
  ["hitl", hitl],
]) {
  try {
    await scenario();
  } catch (err) {
    failed = true;
    out[name] ??= {};
    out[name].error = `${out.stage}: ${err?.name ?? "Error"}: ${err?.message ?? String(err)}`;
  }
}
out.stage = "done";
clearTimeout(timer);
finish(failed ? 1 : 0);

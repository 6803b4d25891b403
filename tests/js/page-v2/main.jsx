// A minimal chat on the newest useStream hook, @langchain/react's, which speaks LangGraph's
// thread protocol v2: commands to POST /threads/{t}/commands (run.start, input.respond)
// and the thread's events from POST /threads/{t}/stream/events (SSE).
//
// Query string:
//   apiUrl        the LangGraph API (another origin than this page)
//   assistantId   a graph name (lg_chat, lg_hitl)
//   field         "messages" (default): submit {messages: [human]}; otherwise {[field]: text}
//   configurable  JSON sent as submit's config.configurable (e.g. {"delay":0.2})
//   threadId      set by the page itself once the hook names a thread, so a reload
//                 hydrates that thread and rejoins its run in flight
//
// For the tests: window.__aiTexts records every distinct text the last AI message showed,
// window.__textsById every distinct text each AI message showed (by message id),
// window.__created every run the hook reported as created, window.__completed every run
// end it reported, window.__reconnects the stream reconnections it made.
import { useStream } from "@langchain/react";
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import {
  apiUrl,
  assistantId,
  configurable,
  field,
  params,
  setThreadInUrl,
  textOf,
  ChatView,
} from "../common.jsx";

window.__aiTexts = [];
window.__textsById = {};
window.__created = [];
window.__completed = [];
window.__reconnects = [];

function typeOf(message) {
  return typeof message.getType === "function" ? message.getType() : message.type;
}

function App() {
  const [threadId, setThreadId] = useState(params.get("threadId"));
  const [text, setText] = useState("");
  const [error, setError] = useState(null);

  const stream = useStream({
    apiUrl,
    assistantId,
    messagesKey: "messages",
    threadId,
    onThreadId: (id) => {
      setThreadId(id);
      setThreadInUrl(id);
    },
    onCreated: (meta) => window.__created.push(meta),
    onCompleted: (meta) => window.__completed.push(meta),
    onReconnect: (info) => window.__reconnects.push({ attempt: info.attempt }),
  });

  const messages = stream.messages;
  const interrupt = stream.interrupt;
  const lastAi = [...messages].reverse().find((m) => typeOf(m) === "ai");
  const lastAiText = lastAi ? textOf(lastAi) : null;

  useEffect(() => {
    const seen = window.__aiTexts;
    if (lastAiText != null && seen[seen.length - 1] !== lastAiText) seen.push(lastAiText);
  }, [lastAiText]);

  useEffect(() => {
    for (const m of messages) {
      if (typeOf(m) !== "ai") continue;
      const seen = (window.__textsById[m.id ?? "?"] ??= []);
      const text = textOf(m);
      if (seen[seen.length - 1] !== text) seen.push(text);
    }
  }, [messages]);

  const fail = (err) => setError(String(err?.message ?? err));

  const submit = (event) => {
    event.preventDefault();
    const input =
      field === "messages" ? { messages: [{ type: "human", content: text }] } : { [field]: text };
    const options = configurable ? { config: { configurable } } : undefined;
    setError(null);
    setText("");
    stream.submit(input, options).catch(fail);
  };

  const approve = () => {
    setError(null);
    stream.respond("approved").catch(fail);
  };

  const status = [
    `thread ${threadId ?? "-"}`,
    stream.isLoading ? "loading" : "idle",
    interrupt ? "interrupted" : null,
    error || stream.error ? "error" : null,
  ];

  return (
    <ChatView
      title={`useStream (protocol v2) · ${assistantId}`}
      status={status}
      stream={stream}
      text={text}
      setText={setText}
      submit={submit}
      approve={approve}
      error={error}
      typeOf={typeOf}
    />
  );
}

createRoot(document.getElementById("root")).render(<App />);

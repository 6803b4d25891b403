// A minimal chat on the legacy useStream hook of @langchain/langgraph-sdk/react.
//
// Query string:
//   apiUrl        the LangGraph API (another origin than this page)
//   assistantId   a graph name (lg_chat, lg_hitl)
//   field         "messages" (default): submit {messages: [human]}; otherwise {[field]: text}
//   configurable  JSON sent as submit's config.configurable (e.g. {"delay":0.2})
//   threadId      set by the page itself once a thread exists, so a reload finds the thread
//                 and reconnectOnMount can rejoin the run it remembers in sessionStorage
//
// For the tests, window.__aiTexts records every distinct text the last AI message showed
// and window.__created every run the hook reported as created.
import { useStream } from "@langchain/langgraph-sdk/react";
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
window.__created = [];

function App() {
  const [threadId, setThreadId] = useState(params.get("threadId"));
  const [text, setText] = useState("");
  // after a reload, the run reconnectOnMount is about to rejoin
  const [runId, setRunId] = useState(() =>
    threadId ? window.sessionStorage.getItem(`lg:stream:${threadId}`) : null,
  );
  const [error, setError] = useState(null);

  const stream = useStream({
    apiUrl,
    assistantId,
    messagesKey: "messages",
    reconnectOnMount: true,
    threadId,
    onThreadId: (id) => {
      setThreadId(id);
      setThreadInUrl(id);
    },
    onCreated: (meta) => {
      window.__created.push(meta);
      setRunId(meta.run_id);
    },
    onError: (err) => setError(String(err?.message ?? err)),
  });

  const messages = stream.messages;
  const interrupt = stream.interrupt;
  const lastAi = [...messages].reverse().find((m) => m.type === "ai");
  const lastAiText = lastAi ? textOf(lastAi) : null;

  useEffect(() => {
    const seen = window.__aiTexts;
    if (lastAiText != null && seen[seen.length - 1] !== lastAiText) seen.push(lastAiText);
  }, [lastAiText]);

  const submit = (event) => {
    event.preventDefault();
    const input =
      field === "messages" ? { messages: [{ type: "human", content: text }] } : { [field]: text };
    const options = configurable ? { config: { configurable } } : undefined;
    setError(null);
    setText("");
    stream.submit(input, options);
  };

  const approve = () => {
    setError(null);
    stream.submit(undefined, { command: { resume: "approved" } });
  };

  const status = [
    `thread ${threadId ?? "-"}`,
    `run ${runId ?? "-"}`,
    stream.isLoading ? "loading" : "idle",
    interrupt ? "interrupted" : null,
    error || stream.error ? "error" : null,
  ];

  return (
    <ChatView
      title={`useStream · ${assistantId}`}
      status={status}
      stream={stream}
      text={text}
      setText={setText}
      submit={submit}
      approve={approve}
      error={error}
      typeOf={(m) => m.type}
    />
  );
}

createRoot(document.getElementById("root")).render(<App />);

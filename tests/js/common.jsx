// What both test pages (page/, the legacy useStream; page-v2/, the protocol-v2 one) share:
// their query string, how a message is shown, the thread kept in the URL, the page itself.

export const params = new URLSearchParams(window.location.search);
export const apiUrl = params.get("apiUrl");
export const assistantId = params.get("assistantId") ?? "lg_chat";
export const field = params.get("field") ?? "messages";
export const configurable = params.get("configurable")
  ? JSON.parse(params.get("configurable"))
  : null;

export function textOf(message) {
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) {
    return message.content
      .map((part) => (typeof part === "string" ? part : (part.text ?? "")))
      .join("");
  }
  return "";
}

// The page keeps its thread in the URL, so a reload finds the thread again.
export function setThreadInUrl(threadId) {
  const next = new URLSearchParams(window.location.search);
  if (threadId) next.set("threadId", threadId);
  else next.delete("threadId");
  window.history.replaceState(null, "", `${window.location.pathname}?${next}`);
}

// The page both hooks drive: status, the input, the messages, the interrupt and its
// Approve, the state. The tests read it by data-testid.
export function ChatView({ title, status, stream, text, setText, submit, approve, error, typeOf }) {
  const interrupt = stream.interrupt;
  const failure = error ?? stream.error?.message ?? stream.error;
  return (
    <main>
      <h1>{title}</h1>
      <p className="status" data-testid="status">
        {status.filter(Boolean).join(" · ")}
      </p>
      <p>
        isLoading: <span data-testid="loading">{String(stream.isLoading)}</span>
      </p>
      <form onSubmit={submit}>
        <textarea
          data-testid="input"
          value={text}
          onChange={(event) => setText(event.target.value)}
          placeholder={field === "messages" ? "Say something" : field}
        />
        <button type="submit" data-testid="submit" disabled={!text || stream.isLoading}>
          Send
        </button>
      </form>
      <ul data-testid="messages">
        {stream.messages.map((m, i) => (
          <li key={m.id ?? i} data-testid="message" data-type={typeOf(m)} data-id={m.id ?? ""}>
            <span data-testid="message-text">{textOf(m)}</span>
          </li>
        ))}
      </ul>
      {interrupt ? (
        <div className="interrupt" data-testid="interrupt">
          <p>The graph asks:</p>
          <pre data-testid="interrupt-value">{JSON.stringify(interrupt.value ?? interrupt)}</pre>
          <button type="button" data-testid="approve" onClick={approve}>
            Approve
          </button>
        </div>
      ) : null}
      <h2>State</h2>
      <pre data-testid="values">{JSON.stringify(stream.values ?? {}, null, 1)}</pre>
      {failure ? <pre data-testid="error">{String(failure)}</pre> : null}
    </main>
  );
}

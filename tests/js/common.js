// What both test pages (page/, the legacy useStream; page-v2/, the protocol-v2 one) read
// from their query string, and how they show a message and remember their thread.

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

// The outlast console: a list of runs and a run page, on the public API only.
// The page never goes silent: it always says whether its connection is live, reconnecting
// (and when it tries next), resumed (and how much it caught up), or gone.
"use strict";

const $ = (sel) => document.querySelector(sel);
const TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);
const EVENT_TYPES = [
  "run.created", "run.started", "run.resumed", "run.queued", "run.waiting", "run.requeued",
  "run.released", "run.cancelling", "run.completed", "run.failed", "run.cancelled",
  "node.updated", "custom", "message.delta", "wait.started", "wait.renewed", "wait.ended",
  "wait.probe_failed", "stream", "activity", "supervisor.verdict", "budget.checkpoint", "effect.started", "effect.done",
  "effect.replayed", "effect.unknown", "effect.failed", "effect.compensated", "gap", "snapshot",
];

// -- small helpers -------------------------------------------------------------------

function key() { return localStorage.getItem("outlast.key") || ""; }

async function api(path, options = {}) {
  const headers = Object.assign({ "Content-Type": "application/json" }, options.headers || {});
  if (key()) headers.Authorization = "Bearer " + key();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
  if (!response.ok) {
    // Errors are shown as the API wrote them (RFC 9457 problem details).
    const err = new Error(body && body.detail ? `${body.title}: ${body.detail}` : `HTTP ${response.status}`);
    err.status = response.status;
    throw err;
  }
  return body;
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${s.toFixed(0)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function until(iso) {
  if (!iso) return "";
  const s = (Date.parse(iso) - Date.now()) / 1000;
  return s >= 0 ? `in ${s.toFixed(0)} s` : `expired ${(-s).toFixed(0)} s ago`;
}

function text(value, max = 300) {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s && s.length > max ? s.slice(0, max) + "…" : s || "";
}

function dl(pairs) {
  const box = document.createElement("dl");
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    if (v instanceof Node) dd.append(v); else dd.textContent = String(v);
    box.append(dt, dd);
  }
  return box;
}

function setConn(state, detail) {
  const conn = $("#conn");
  conn.dataset.state = state;
  $("#conn-text").textContent = detail ? `${state}: ${detail}` : state;
}

// -- routing ------------------------------------------------------------------------

let view = null;

function route() {
  if (view) view.stop();
  const match = location.hash.match(/^#\/runs\/([0-9a-f-]{36})$/);
  view = match ? new RunPage(match[1]) : new RunList();
  view.start();
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  const input = $("#api-key");
  input.value = key();
  input.addEventListener("change", () => {
    localStorage.setItem("outlast.key", input.value.trim());
    route();
  });
  route();
});

// -- the runs list ------------------------------------------------------------------

class RunList {
  constructor() {
    this.status = new URLSearchParams(location.hash.split("?")[1] || "").get("status") || "";
    this.timer = null;
    this.updated = null;
    this.runs = [];
  }

  start() {
    $("#run-view").hidden = true;
    $("#list-view").hidden = false;
    for (const button of document.querySelectorAll("#filters button")) {
      button.classList.toggle("active", button.dataset.status === this.status);
      button.onclick = () => { location.hash = button.dataset.status ? `#/?status=${button.dataset.status}` : "#/"; };
    }
    this.poll();
    this.ticker = setInterval(() => this.render(), 1000);
  }

  stop() { clearTimeout(this.timer); clearInterval(this.ticker); }

  async poll() {
    try {
      const query = this.status ? `?status=${this.status}&limit=100` : "?limit=100";
      this.runs = (await api(`/v1/runs${query}`)).runs;
      this.updated = Date.now();
      setConn("live", "runs refresh every 2 s");
    } catch (err) {
      if (err.status === 401) {
        setConn("offline", "this server needs an API key: type it in the top right");
        $("#api-key").focus();
      } else {
        setConn("offline", `${err.message}; retrying in 2 s`);
      }
    }
    this.render();
    this.timer = setTimeout(() => this.poll(), 2000);
  }

  render() {
    const body = $("#runs tbody");
    body.replaceChildren();
    for (const run of this.runs) {
      const row = document.createElement("tr");
      row.dataset.run = run.id;
      const wait = run.status === "waiting" ? run.wait : null;
      const cells = [
        Object.assign(document.createElement("a"), { href: `#/runs/${run.id}`, textContent: run.id.slice(0, 8) }),
        Object.assign(document.createElement("span"), { className: `badge ${run.status}`, textContent: run.status }),
        run.graph, run.thread_id.slice(0, 8), ago(run.created_at),
        wait ? wait.kind : "", wait ? ago(wait.since) : "",
      ];
      for (const cell of cells) {
        const td = document.createElement("td");
        td.append(cell);
        row.append(td);
      }
      body.append(row);
    }
    $("#list-empty").hidden = this.runs.length > 0;
    $("#list-updated").textContent = this.updated ? `updated ${ago(new Date(this.updated).toISOString())} ago` : "loading…";
  }
}

// -- the run page -------------------------------------------------------------------

class RunPage {
  constructor(id) {
    this.id = id;
    this.lastSeq = 0;
    this.seen = new Set();
    this.duplicates = 0;
    this.snap = null;
    this.source = null;
    this.dropped = false;
    this.dropSeq = 0;
    this.openBox = null;
    this.runBox = null;
    this.messages = new Map();
    this.retryMs = 2000;
    this.backoff = 1;
  }

  start() {
    $("#list-view").hidden = true;
    $("#run-view").hidden = false;
    $("#run-id").textContent = this.id;
    $("#timeline").replaceChildren();
    $("#action-error").hidden = true;
    $("#cancel").onclick = () => this.cancel();
    $("#answer-form").onsubmit = (e) => { e.preventDefault(); this.answer(); };
    this.refresh();
    this.open();
    this.ticker = setInterval(() => { this.renderPanels(); this.maybeRefresh(); }, 1000);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.ticker);
    clearTimeout(this.reopenTimer);
    clearInterval(this.countdown);
    if (this.source) this.source.close();
  }

  // The stream: EventSource resumes with Last-Event-ID by itself after a network error;
  // when it gives up (an HTTP error), we reopen it with ?after= and say when. With an
  // API key, the stream opens with a token minted for it: a key never goes in a URL
  // (it would be in every access log). A token that expired is an HTTP error too: the
  // reopen mints another.
  async open() {
    const params = new URLSearchParams();
    if (this.lastSeq) params.set("after", String(this.lastSeq));
    setConn(this.lastSeq ? "reconnecting" : "connecting", "opening the stream");
    if (key()) {
      try {
        const minted = await api(`/v1/runs/${this.id}/stream-token`, { method: "POST" });
        params.set("stream_token", minted.token);
      } catch (err) {
        if (!this.stopped) this.failed(null);
        return;
      }
      if (this.stopped || this.ended) return;  // left or ended while the token came
    }
    const url = `/v1/runs/${this.id}/events${params.toString() ? "?" + params : ""}`;
    const source = new EventSource(url);
    this.source = source;
    source.onopen = () => this.opened();
    source.onerror = () => this.failed(source);
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (msg) => this.receive(type, msg));
    }
  }

  async opened() {
    this.backoff = 1;
    clearInterval(this.countdown);
    if (!this.dropped) { setConn("live", `from event #${this.lastSeq + 1}`); return; }
    this.dropped = false;
    const before = this.dropSeq;
    this.caught = 0;  // counted by receive() from here on
    const seam = this.addSeam(`connection resumed after #${before}; catching up…`);
    setConn("resumed", `catching up from #${before + 1}…`);
    try {
      const target = (await api(`/v1/runs/${this.id}`)).last_seq;
      const check = setInterval(() => {
        if (this.lastSeq >= target || this.ended) {
          clearInterval(check);
          const caught = `caught up ${this.caught} events (to #${target})`;
          seam.textContent = `connection resumed after #${before}: ${caught}`;
          if (this.ended) return;  // the run's end says more than the resume
          setConn("resumed", caught);
          setTimeout(() => { if (!this.dropped && !this.ended) setConn("live", `at event #${this.lastSeq}`); }, 4000);
        }
      }, 100);
    } catch (_) { /* the next error says it */ }
  }

  failed(source) {
    if (this.ended) return;
    if (!this.dropped) { this.dropped = true; this.dropSeq = this.lastSeq; }
    if (source && source.readyState === EventSource.CONNECTING) {
      this.say(`reconnecting`, this.retryMs / 1000);
      return;
    }
    // Closed for good (an HTTP error), or no token could be minted: reopen ourselves,
    // with growing pauses.
    if (source) source.close();
    const wait = Math.min(10, this.backoff);
    this.backoff *= 2;
    this.say("reconnecting", wait);
    this.reopenTimer = setTimeout(() => this.open(), wait * 1000);
  }

  say(state, seconds) {
    clearInterval(this.countdown);
    const at = Date.now() + seconds * 1000;
    const tick = () => {
      const left = Math.max(0, (at - Date.now()) / 1000);
      setConn(state, `connection lost after #${this.lastSeq}; next try in ${left.toFixed(0)} s`);
    };
    tick();
    this.countdown = setInterval(tick, 500);
  }

  receive(type, msg) {
    let payload;
    try { payload = JSON.parse(msg.data); } catch (_) { return; }
    if (type === "snapshot") { this.addSnapshot(payload.data); this.apply(payload.data); return; }
    const seq = payload.seq;
    if (typeof seq === "number") {
      if (this.seen.has(seq) || seq <= this.lastSeq) { this.duplicates++; return; }
      this.seen.add(seq);
      this.lastSeq = seq;
      if (type !== "gap") this.caught = (this.caught || 0) + 1;
    }
    if (type === "gap") { this.addGap(payload); return; }
    this.add(payload);
    if (TERMINAL.has(type)) {
      this.ended = true;
      this.source.close();
      clearInterval(this.countdown);
      setConn("ended", `${type.slice(4)}; all ${this.lastSeq} events received`);
    }
    if (!type.startsWith("message.")) this.soon();
  }

  // -- the timeline: grouped by node, one row per event, model output coalesced --------

  // Events between two node.updated belong to the node that finished at the second one
  // (they happened while it ran): an open group collects them and takes the node's name,
  // first from whatever names a node and finally from the node.updated that closes it.
  group(label) {
    const box = document.createElement("div");
    box.className = "group";
    const head = document.createElement("div");
    head.className = "node";
    head.textContent = label;
    box.append(head);
    $("#timeline").append(box);
    return box;
  }

  place(event) {
    const d = event.data || {};
    const runLevel = /^(run|wait)\./.test(event.type);
    if (runLevel) {
      if (!this.runBox || this.runBox !== $("#timeline").lastElementChild) this.runBox = this.group("run");
      this.openBox = null;
      return this.runBox;
    }
    if (!this.openBox) { this.openBox = this.group("running…"); this.openBox.named = false; }
    const node = d.node || (event.type === "activity" ? d.name : undefined);
    // node.updated has the last word: an activity report written late on a starved
    // machine can still carry the name of the node that finished just before
    if (node && (!this.openBox.named || event.type === "node.updated")) {
      this.openBox.querySelector(".node").textContent = `node ${node}`;
      this.openBox.named = true;
    }
    return this.openBox;
  }

  row(event, cls, summary) {
    const row = document.createElement("div");
    row.className = `ev ${cls || ""}`;
    row.dataset.seq = event.seq;
    row.dataset.type = event.type;
    const time = event.time ? new Date(event.time).toLocaleTimeString() : "";
    for (const [c, t] of [["seq", `#${event.seq}`], ["time", time], ["type", event.type], ["text", summary]]) {
      const span = document.createElement("span");
      span.className = c;
      span.textContent = t;
      row.append(span);
    }
    $("#timeline-count").textContent = `${this.seen.size} events`;
    return row;
  }

  add(event) {
    const d = event.data || {};
    const box = this.place(event);
    if (event.type === "message.delta") {
      const id = d.id || "?";
      let row = this.messages.get(id);
      if (!row || row.parentNode !== box) {
        row = this.row(event, "model", "");
        this.messages.set(id, row);
        box.append(row);
      } else {
        row.dataset.seqs = (row.dataset.seqs || row.dataset.seq) + "," + event.seq;
      }
      const calls = (d.tool_call_chunks || []).map((c) => (c.name ? ` → ${c.name}(` : "") + (c.args || "")).join("");
      row.querySelector(".text").textContent += (d.content || "") + calls;
      row.querySelector(".type").textContent = "model output";
      return;
    }
    box.append(this.row(event, classOf(event.type), summarize(event.type, d)));
    if (event.type === "node.updated") this.openBox = null;
  }

  addGap(event) {
    const gap = event.data || {};
    const box = document.createElement("div");
    box.className = "gap";
    box.dataset.type = "gap";
    box.textContent =
      `gap: events #${(gap.requested_after || 0) + 1}–#${event.seq} were pruned by retention ` +
      `and cannot be shown; the oldest kept is #${gap.oldest_available ?? "none"}. A fresh snapshot follows.`;
    $("#timeline").append(box);
    this.openBox = null;
  }

  addSnapshot(snap) {
    const box = document.createElement("div");
    box.className = "seam";
    box.dataset.type = "snapshot";
    box.textContent = `fresh snapshot: ${snap.status}, last event #${snap.last_seq}`;
    $("#timeline").append(box);
  }

  addSeam(message) {
    const box = document.createElement("div");
    box.className = "seam";
    box.dataset.type = "resumed";
    box.textContent = message;
    $("#timeline").append(box);
    this.openBox = null;
    return box;
  }

  // -- the panels: snapshot (status, wait, activity, budget) and what is preserved ------

  soon() {
    if (this.pending) return;
    this.pending = setTimeout(() => { this.pending = null; this.refresh(); }, 250);
  }

  maybeRefresh() {
    if (!this.snap || this.ended) return;
    if (Date.now() - (this.refreshedAt || 0) > 3000) this.refresh();
  }

  async refresh() {
    this.refreshedAt = Date.now();
    try {
      this.apply(await api(`/v1/runs/${this.id}`));
      this.preserved = await api(`/v1/runs/${this.id}/preserved`);
    } catch (err) {
      if (err.status === 404) this.showError(err.message);
    }
    this.renderPanels();
  }

  apply(snap) {
    const waitBefore = this.snap && this.snap.wait ? this.snap.wait.id : null;
    this.snap = snap;
    const status = $("#status");
    status.textContent = snap.status;
    status.className = `badge ${snap.status}`;
    $("#run-meta").textContent =
      `graph ${snap.graph} · thread ${snap.thread_id.slice(0, 8)} · attempt ${snap.attempts}/${snap.max_attempts}` +
      (snap.model ? ` · model ${snap.model}` : "");
    $("#cancel").disabled = ["completed", "failed", "cancelled"].includes(snap.status);
    const wait = snap.status === "waiting" ? snap.wait : null;
    if ((wait && wait.id) !== waitBefore) this.renderForm(wait);
    if (snap.result !== null && snap.result !== undefined) {
      $("#result-panel").hidden = false;
      $("#result").textContent = JSON.stringify(snap.result, null, 2);
    }
    this.renderPanels();  // the wait's description and its form appear together
  }

  renderPanels() {
    const snap = this.snap;
    if (!snap) return;
    const wait = snap.status === "waiting" ? snap.wait : null;
    $("#wait-body").replaceChildren(wait ? dl([
      ["kind", wait.kind],
      ["question", wait.prompt ? text(wait.prompt) : ""],
      ["object", wait.object ? text(wait.object) : ""],
      ["since", `${new Date(wait.since).toLocaleTimeString()} (${ago(wait.since)})`],
      ["last signal", wait.last_signal_at ? ago(wait.last_signal_at) + " ago" : "none yet"],
      ["lease", wait.lease_expires_at ? `expires ${until(wait.lease_expires_at)}, ${wait.renewals} renewals` : "none (it holds no worker)"],
      ["deadline", wait.deadline ? until(wait.deadline) : ""],
    ]) : document.createTextNode(snap.status === "queued" ? "a worker (queued)" : "nothing"));
    const act = snap.activity;
    const health = act ? Object.assign(document.createElement("span"), { className: `health-${act.health}`, textContent: act.health }) : null;
    $("#activity-body").replaceChildren(act ? dl([
      ["what", `${act.kind} ${act.name}`],
      ["health", health],
      ["started", ago(act.started_at) + " ago"],
      ["last sign", act.last_signal_at ? ago(act.last_signal_at) + " ago" : ""],
      ["lease", `expires ${until(act.lease_expires_at)}, ${act.renewals} renewals`],
      ["note", act.note || ""],
    ]) : document.createTextNode(snap.status === "running" ? "between steps" : "nothing"));
    const budget = snap.budget;
    if (budget && budget.limits) {
      const rows = Object.entries(budget.limits).map(([dim, lim]) => {
        const used = (budget.usage || {})[dim] ?? 0;
        return [dim, `${Number(used).toFixed(dim === "wall_time" || dim === "cost" ? 2 : 0)} used · soft ${lim.soft ?? "—"} · hard ${lim.hard ?? "—"}`];
      });
      $("#budget-body").replaceChildren(dl(rows));
    }
    const p = this.preserved;
    if (p) {
      $("#preserved-body").replaceChildren(dl([
        ["checkpoints", `${p.checkpoints}${p.more ? "+" : ""}`],
        ["last one", p.last_checkpoint_at ? `${new Date(p.last_checkpoint_at).toLocaleTimeString()} (${ago(p.last_checkpoint_at)} ago)` : "none yet"],
        ["effects recorded", `${p.effects} (${p.effects_done} done)`],
        ["events", `${snap.last_seq} in the log`],
      ]));
    }
  }

  renderForm(wait) {
    const form = $("#answer-form");
    const answerable = wait && ["human", "auth", "budget", "reconciliation"].includes(wait.kind);
    form.hidden = !answerable;
    $("#answer-result").textContent = "";
    if (!answerable) { this.form = null; return; }
    this.form = SchemaForm.build(wait);
    this.form.waitId = wait.id;
    $("#answer-fields").replaceChildren(this.form.node);
  }

  async answer() {
    const out = $("#answer-result");
    try {
      await api(`/v1/runs/${this.id}/input`, {
        method: "POST",
        body: JSON.stringify({ wait_id: this.form.waitId, value: this.form.read() }),
      });
      out.textContent = "answer sent; the run is queued to go on";
      $("#action-error").hidden = true;
      this.soon();
    } catch (err) {
      this.showError(err.message);
    }
  }

  async cancel() {
    const ok = window.confirm(
      "Cancel this run? Cancelling stops the run for good (cooperatively, at its next step).\n\n" +
      "Closing this page does NOT cancel anything: the run goes on without you, and you can come back."
    );
    if (!ok) return;
    try {
      await api(`/v1/runs/${this.id}/cancel`, { method: "POST", body: JSON.stringify({ reason: "cancelled from the console" }) });
      this.soon();
    } catch (err) {
      this.showError(err.message);
    }
  }

  showError(message) {
    const box = $("#action-error");
    box.textContent = message;
    box.hidden = false;
  }
}

function classOf(type) {
  if (type === "supervisor.verdict") return "verdict";
  if (type.startsWith("effect.")) return "effect";
  if (TERMINAL.has(type)) return "terminal";
  return "";
}

function summarize(type, d) {
  switch (type) {
    case "node.updated": {
      const messages = (d.update && d.update.messages) || [];
      const parts = messages.map((m) => {
        if (m.tool_calls && m.tool_calls.length) {
          return m.tool_calls.map((c) => `→ ${c.name}(${text(c.args, 120)})`).join(" ");
        }
        if (m.type === "tool") return `${m.name || "tool"} ⇒ ${text(m.content, 160)}`;
        return text(m.content, 200);
      });
      return parts.length ? parts.join(" | ") : text(d.update, 200);
    }
    case "wait.started": return `${d.wait.kind}: ${text(d.wait.prompt || d.wait.object, 160)}`;
    case "wait.ended": return `${d.kind} ended by ${d.how}`;
    case "supervisor.verdict": return `tier ${d.tier} · ${d.verdict} · ${d.reason} (trigger ${d.trigger})`;
    case "budget.checkpoint": return `${d.level} limit of ${d.dimension}: ${d.used} / ${d.limit}`;
    case "activity": return `${d.kind || ""} ${d.name || ""} · ${d.health || ""} · ${d.renewals ?? 0} renewals${d.note ? " · " + d.note : ""}`;
    case "run.started": return `attempt ${d.attempt}`;
    case "run.failed": return text(d.error || d, 200);
    default:
      if (type === "effect.compensated") return `${d.effect_tool} undone by ${d.reconciled ? "hand" : d.tool}`;
      if (type.startsWith("effect.")) return `${d.tool} ${d.status}${d.reconciled ? " (reconciled)" : ""}`;
      return text(d, 160);
  }
}

"use strict";
// The page of `lens serve`: a view of the agent's progress events and of its answer (lens/faces/_serve.py).
// Every text that comes from a document, a file name or the model enters the page as a text node (append of a
// string, textContent), never as markup: nothing here parses data as HTML.

const SVG = "http://www.w3.org/2000/svg";
const state = { source: null, current: null, folder: null, busy: false, stages: [] };

function $(id) {
  return document.getElementById(id);
}

// An element with a class and children: strings become text nodes.
function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path, options) {
  const response = await fetch(path, options);
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    body = null;
  }
  if (!response.ok) throw new Error((body && body.error) || `${response.status} ${response.statusText}`);
  return body;
}

function setStatus(text) {
  $("status").textContent = text;
}

function showError(message) {
  const box = $("error");
  box.replaceChildren(el("strong", null, "lens: "), message);
  box.hidden = false;
}

function setBusy(busy) {
  state.busy = busy;
  $("submit").disabled = busy;
  $("cancel").disabled = !busy;
}

function when(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

function short(text, n) {
  return text.length <= n ? text : text.slice(0, n - 1) + "…";
}

// ---------------------------------------------------------------- folders and history

async function loadFolders() {
  const data = await api("/api/folders");
  const select = $("folder");
  select.replaceChildren();
  for (const f of data.folders) {
    const option = el("option", null, f.exists ? f.name : `${f.name} (gone)`);
    option.value = f.path;
    option.title = f.path;
    select.append(option);
  }
  if (data.one_at_a_time) $("ask").dataset.oneAtATime = "1";
}

async function loadHistory() {
  let data;
  try {
    data = await api("/api/history");
  } catch (e) {
    $("history-note").textContent = e.message;
    $("history-note").hidden = false;
    return;
  }
  if (data.note) {
    $("history-note").textContent = data.note;
    $("history-note").hidden = false;
  }
  const list = $("past");
  list.replaceChildren();
  for (const h of data.questions) {
    const link = el(
      "a",
      "past",
      el("span", "when", when(h.asked_at)),
      el("span", "q", h.question),
      el("span", "a", h.status === "answered" ? h.answer || "(no answer found)" : h.status),
    );
    if (h.changed) link.append(el("span", "changed", "changed"));
    link.href = "#";
    link.dataset.id = h.id;
    link.addEventListener("click", (e) => {
      e.preventDefault();
      reopen(h.id);
    });
    list.append(el("li", null, link));
  }
}

async function reopen(id) {
  let entry;
  try {
    entry = await api(`/api/history/${encodeURIComponent(id)}`);
  } catch (e) {
    showError(e.message);
    return;
  }
  stopWatching();
  reset();
  location.hash = encodeURIComponent(id);
  $("question").value = entry.question;
  chooseFolder(entry.folder);
  state.folder = entry.folder;
  if (entry.detail) drawSearch(entry.detail);
  if (entry.status === "answered") {
    drawAnswer(entry.result, entry.folder, entry.changes, null);
    setStatus(`asked ${when(entry.asked_at)} · Ask again to see what changed`);
  } else {
    setStatus(`asked ${when(entry.asked_at)} · ${entry.status}: ${entry.message || ""}`);
  }
}

function chooseFolder(path) {
  for (const option of $("folder").options) if (option.value === path) option.selected = true;
}

// ---------------------------------------------------------------- asking and watching

function reset() {
  $("error").hidden = true;
  $("search").hidden = true;
  $("answer").hidden = true;
  $("document").hidden = true;
  $("requirements").replaceChildren();
  $("stages").replaceChildren();
  $("answer").replaceChildren();
  state.stages = [];
}

function stopWatching() {
  if (state.source) state.source.close();
  state.source = null;
  state.current = null;
  setBusy(false);
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  const folder = $("folder").value;
  if (!question || state.busy) return;
  stopWatching();
  reset();
  setBusy(true);
  setStatus("asking…");
  try {
    const started = await api("/api/questions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question, folder }),
    });
    watch(started.id, folder);
  } catch (e) {
    setBusy(false);
    setStatus("");
    showError(e.message);
  }
}

function watch(id, folder) {
  state.current = id;
  state.folder = folder;
  location.hash = encodeURIComponent(id);
  setBusy(true);
  const source = new EventSource(`/api/questions/${encodeURIComponent(id)}/events`);
  state.source = source;
  const data = (e) => JSON.parse(e.data);
  source.addEventListener("accepted", (e) => {
    state.folder = data(e).folder; // the folder its citations are opened in
  });
  source.addEventListener("queued", (e) => setStatus(data(e).message));
  source.addEventListener("starting", (e) => setStatus(data(e).message));
  source.addEventListener("progress", (e) => onProgress(data(e)));
  source.addEventListener("answer", (e) => {
    finish(source);
    onAnswer(data(e));
  });
  source.addEventListener("cancelled", (e) => {
    finish(source);
    setStatus(data(e).message);
    loadHistory();
  });
  source.addEventListener("failed", (e) => {
    finish(source);
    setStatus("failed");
    showError(data(e).message);
    loadHistory();
  });
  source.onerror = () => {
    if (state.source !== source) return;
    if (source.readyState === EventSource.CLOSED) {
      finish(source);
      showError("lost the connection to lens serve (is it still running?)");
    } else {
      setStatus("connection lost; reconnecting…");
    }
  };
}

function finish(source) {
  source.close();
  if (state.source === source) state.source = null;
  setBusy(false);
}

async function cancel() {
  if (!state.current) return;
  setStatus("cancelling: the question stops before its next LLM call…");
  try {
    await api(`/api/questions/${encodeURIComponent(state.current)}/cancel`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
  } catch (e) {
    showError(e.message);
  }
}

function onProgress(p) {
  setStatus(p.line);
  const name = p.stage === "round" ? `round ${p.round}/${p.max_rounds}` : p.stage;
  if (state.stages[state.stages.length - 1] !== name) {
    state.stages.push(name);
    $("stages").append(el("li", null, `${name} · ${p.elapsed_s.toFixed(1)} s`));
  }
  $("search").hidden = false;
  if (p.detail) drawSearch(p.detail);
}

// ---------------------------------------------------------------- the search: requirements, readings, beliefs

function drawSearch(detail) {
  $("search").hidden = false;
  const box = $("requirements");
  box.replaceChildren();
  for (const req of detail.requirements) {
    const card = el("article", "requirement");
    card.dataset.id = req.id;
    const title = el("h3", null, el("span", "rid", req.id), " ", req.text);
    if (req.value) title.append(" → ", el("strong", null, req.value));
    card.append(title);
    if (req.cues.length) card.append(el("p", "cues", "cues: " + req.cues.join(" · ")));
    const belief = detail.beliefs[req.id];
    if (belief) card.append(el("div", "charts", beliefBars(belief), glrChart(req.id, detail, belief)));
    const readings = [];
    for (const r of detail.rounds) for (const x of r.readings) if (x.requirement === req.id) readings.push({ ...x, round: r.round });
    if (readings.length) {
      const list = el("ol", "readings");
      for (const x of readings) list.append(readingItem(x));
      card.append(list);
    } else {
      card.append(el("p", "muted", req.depends_on ? `waits for ${req.depends_on}` : "nothing read yet"));
    }
    box.append(card);
  }
}

function readingItem(x) {
  const verdict = x.reply === null ? "noreply" : x.confirmed ? "confirmed" : "unconfirmed";
  const item = el("li", "reading " + verdict, el("span", "round", `round ${x.round}`), " ");
  const at = `${x.path} ${x.sentence_place || x.place}`;
  const where = x.title && !x.path.endsWith(x.title) ? `${x.title} (${at})` : at;
  item.append(
    docLink(where, {
      folder: state.folder,
      path: x.path,
      doc_id: x.doc_id,
      sentence: x.sentence,
      first: x.sentences[0],
      last: x.sentences[1],
      sha256: x.sha256,
    }),
    " ",
  );
  if (x.reply === null) item.append(el("span", "verdict", "no usable reply"));
  else if (x.sentence_text === undefined) item.append(el("span", "verdict", "named no sentence"));
  else {
    item.append("named ", el("q", null, x.sentence_text), " ");
    item.append(el("span", "verdict", x.confirmed ? `confirmed${x.value ? ": " + x.value : ""}` : "not confirmed"));
  }
  return item;
}

// the candidate windows' posteriors (and "elsewhere"), confirmed ones marked
function beliefBars(belief) {
  const rows = belief.candidates.map((c) => ({ label: c.title || c.path, where: `${c.path} ${c.place}`, p: c.posterior, confirmed: c.confirmed }));
  rows.push({ label: "elsewhere", where: "documents not yet among the candidates", p: belief.elsewhere, confirmed: false, elsewhere: true });
  const width = 420;
  const height = 8 + rows.length * 18;
  const chart = svg("svg", { class: "bars", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
  chart.append(svg("title", {}, "belief: posterior of each candidate window"));
  rows.forEach((row, i) => {
    const y = 4 + i * 18;
    const label = svg("text", { x: 0, y: y + 12, class: row.elsewhere ? "label muted" : "label" }, short(row.label, 34));
    label.append(svg("title", {}, `${row.label}: ${row.where}`));
    chart.append(label);
    chart.append(svg("rect", { x: 230, y: y + 2, width: 140, height: 12, class: "track" }));
    const bar = svg("rect", { x: 230, y: y + 2, width: Math.max(0.5, 140 * row.p), height: 12 });
    bar.setAttribute("class", row.confirmed ? "bar confirmed" : row.elsewhere ? "bar elsewhere" : "bar");
    chart.append(bar);
    chart.append(svg("text", { x: 376, y: y + 12, class: "value" }, `${(100 * row.p).toFixed(0)} %`));
  });
  return chart;
}

// the requirement's GLR after each round against the stopping threshold it must reach
function glrChart(rid, detail, belief) {
  const points = detail.rounds.map((r) => ({ round: r.round, glr: r.glr[rid] || 0, threshold: r.threshold }));
  if (!points.length) points.push({ round: 0, glr: belief.glr, threshold: belief.threshold });
  const width = 220;
  const height = 110;
  const left = 28;
  const bottom = height - 18;
  const top = 14;
  const most = Math.max(1, ...points.map((p) => Math.max(p.glr, p.threshold))) * 1.15;
  const last = Math.max(1, points[points.length - 1].round);
  const x = (round) => left + ((width - left - 8) * round) / last;
  const y = (v) => bottom - ((bottom - top) * Math.min(v, most)) / most;
  const chart = svg("svg", { class: "glr", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
  chart.append(svg("title", {}, `${rid}: GLR ${belief.glr} of ${belief.threshold} needed${belief.certified ? " (certified)" : ""}`));
  chart.append(svg("line", { x1: left, y1: bottom, x2: width - 4, y2: bottom, class: "axis" }));
  chart.append(svg("line", { x1: left, y1: top - 4, x2: left, y2: bottom, class: "axis" }));
  chart.append(svg("text", { x: left - 4, y: bottom + 4, class: "tick", "text-anchor": "end" }, "0"));
  chart.append(svg("text", { x: left - 4, y: top + 4, class: "tick", "text-anchor": "end" }, most.toFixed(1)));
  const line = (key) => points.map((p) => `${x(p.round)},${y(p[key])}`).join(" ");
  chart.append(svg("polyline", { points: line("threshold"), class: "threshold" }));
  chart.append(svg("polyline", { points: line("glr"), class: belief.certified ? "glr-line certified" : "glr-line" }));
  for (const p of points) {
    const dot = svg("circle", { cx: x(p.round), cy: y(p.glr), r: 3, class: "dot" });
    dot.append(svg("title", {}, `round ${p.round}: GLR ${p.glr}, threshold ${p.threshold}`));
    chart.append(dot);
    chart.append(svg("text", { x: x(p.round), y: bottom + 13, class: "tick", "text-anchor": "middle" }, String(p.round)));
  }
  chart.append(svg("text", { x: left + 4, y: 10, class: "legend" }, "GLR by round ── vs threshold ‑ ‑"));
  return chart;
}

// ---------------------------------------------------------------- the answer

function onAnswer(data) {
  setStatus("answered · " + data.result.words.cost);
  drawAnswer(data.result, data.folder, data.changes, data.note);
  loadHistory();
}

function drawAnswer(r, folder, changes, note) {
  const box = $("answer");
  box.replaceChildren();
  box.hidden = false;
  box.append(el("h2", null, "Answer"), el("p", "answer-text", r.answer || "(no answer found)"));
  if (r.best_effort) box.append(el("p", "best-effort", `best effort: ${r.words.best_effort || ""}`));
  const byId = new Map(r.evidence.map((e) => [e.id, e]));
  const facts = el("ul", "facts");
  for (const q of r.requirements) {
    const item = el("li", null, el("span", "rid", q.id), " ", el("span", `status ${q.status}`, r.words.requirements[q.id] || q.status), ": ", q.text);
    if (q.value) item.append(" → ", el("strong", null, q.value));
    for (const eid of q.evidence) if (byId.has(eid)) item.append(" ", evidenceLink(byId.get(eid), folder, `[${eid}]`));
    facts.append(item);
  }
  const evidence = el("ol", "evidence");
  for (const e of r.evidence) {
    const words = `(${r.words.evidence[e.id] || e.status}; ${e.requirements.join(",") || "-"})`;
    evidence.append(
      el("li", null, evidenceLink(e, folder, `[${e.id}] ${e.citation}`), " ", el("span", "status", words), " ", el("q", null, e.sentence_text || short(e.text, 240))),
    );
  }
  box.append(el("h3", null, "Facts"), facts, el("h3", null, "Evidence"), evidence, el("p", "cost", "Cost: " + r.words.cost));
  for (const n of r.notes || []) box.append(el("p", "note", "Note: " + n));
  if (note) box.append(el("p", "note", "Note: " + note));
  if (changes) box.append(changesBox(changes));
}

function changesBox(c) {
  const box = el("section", "changes", el("h3", null, `What changed since ${when(c.previous_asked_at)}`));
  if (c.same) {
    box.append(el("p", null, "Nothing: the same answer from the same evidence."));
    return box;
  }
  if (c.answer) box.append(el("p", "answer-change", "answer: ", el("del", null, c.answer.before || "(none)"), " → ", el("ins", null, c.answer.after || "(none)")));
  for (const x of c.added) box.append(el("p", "added", `+ ${x.citation} `, el("q", null, x.text)));
  for (const x of c.removed) box.append(el("p", "removed", `− ${x.citation} `, el("q", null, x.text)));
  for (const x of c.changed) {
    const why = x.file_changed ? " (the file changed)" : "";
    box.append(el("p", "edited", `~ ${x.citation}${why} `, el("q", null, x.before), " → ", el("q", null, x.after)));
  }
  return box;
}

function evidenceLink(e, folder, label) {
  return docLink(label, {
    folder,
    path: e.path,
    doc_id: e.doc_id,
    sentence: e.sentence,
    first: e.first_sentence,
    last: e.last_sentence,
    sha256: e.sha256,
    sentence_sha256: e.sentence_sha256,
  });
}

function docLink(label, ref) {
  const link = el("a", "cite", label);
  link.href = "#";
  link.addEventListener("click", (e) => {
    e.preventDefault();
    openDocument(ref);
  });
  return link;
}

// ---------------------------------------------------------------- the document view

async function openDocument(ref) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(ref)) if (v !== null && v !== undefined) params.set(k, String(v));
  const pane = $("document");
  try {
    drawDocument(await api("/api/document?" + params.toString()));
  } catch (e) {
    pane.replaceChildren(closeButton(), el("h2", null, ref.path), el("p", "error", e.message));
    pane.hidden = false;
  }
}

function closeButton() {
  const button = el("button", "close", "Close");
  button.type = "button";
  button.addEventListener("click", () => {
    $("document").hidden = true;
  });
  return button;
}

function drawDocument(view) {
  const pane = $("document");
  pane.replaceChildren();
  pane.hidden = false;
  pane.append(closeButton(), el("h2", null, view.title), el("p", "path", view.path + (view.place ? ` · ${view.place}` : "")));
  if (view.changed) pane.append(el("p", "changed", "This file changed since the answer read it."));
  for (const n of view.notes) pane.append(el("p", "note", n));
  const body = el("div", "doc-lines");
  for (const line of view.lines) {
    const text = el("span", "tx");
    for (const [part, marked] of line.parts) text.append(marked ? el("mark", null, part) : part);
    body.append(el("div", "line", el("span", "ln", line.label), text));
  }
  pane.append(body);
  const mark = body.querySelector("mark");
  if (mark) mark.scrollIntoView({ block: "center" });
}

// ---------------------------------------------------------------- start

async function start() {
  $("ask").addEventListener("submit", ask);
  $("cancel").addEventListener("click", cancel);
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("ask").requestSubmit();
    }
  });
  try {
    await loadFolders();
  } catch (e) {
    showError(e.message);
  }
  await loadHistory();
  const id = decodeURIComponent(location.hash.slice(1));
  if (/^[0-9a-f]{16}$/.test(id)) {
    try {
      await api(`/api/history/${id}`);
      reopen(id);
    } catch (e) {
      watch(id, $("folder").value); // still running (not in the history yet)
    }
  }
  document.body.dataset.ready = "1";
}

start();

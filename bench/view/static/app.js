// bench view: plain JavaScript, no build step. Served live, the page fetches each data document as JSON
// from its own origin (the server answers nobody else). An export (index.html says data-source="script")
// holds the documents as scripts loaded through a <script> tag, because a browser refuses fetch() of a
// folder opened as file://: a small document calls benchData(path, doc); a large one, and the cells
// (data-pack-cells of them to a file), call benchPack(file, base64 of gzipped JSON {path: doc}), inflated
// here by the browser's DecompressionStream (bench.view.site.export writes them).
"use strict";

const SOURCE = document.documentElement.dataset.source;
const PACK_CELLS = Number(document.documentElement.dataset.packCells || 0);
const cache = new Map(); // path -> Promise of its document
const docs = new Map(); // path -> document, as the export's scripts deliver them (export only)
const inflating = new Map(); // file -> Promise settled when its pack's documents are in docs
const files = new Map(); // file -> Promise settled when its script has run and delivered (export only)
const FACETS = ["sdk", "release", "mode", "variant", "protocol", "family", "outcome", "realism"];
const ROW_KEYS = ["sdk", "release", "mode", "variant", "protocol"]; // a row of the matrix: one SDK release

function benchData(path, doc) {
  docs.set(path, doc);
}

function benchPack(file, base64) {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const text = new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  inflating.set(file, text.then((json) => {
    for (const [path, doc] of Object.entries(JSON.parse(json))) docs.set(path, doc);
  }));
}

// The exported file holding the document at path (bench.view.site.file_of): cells are packed.
function fileOf(path) {
  const cell = /^run\/([^/]+)\/cell\/(\d+)$/.exec(path);
  return cell && PACK_CELLS ? `run/${cell[1]}/cells/${Math.floor(Number(cell[2]) / PACK_CELLS)}` : path;
}

function loadFile(file) {
  if (!files.has(file)) {
    const loaded = new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      tag.src = `data/${file}.js`;
      tag.onload = () => resolve(inflating.get(file));
      tag.onerror = () => reject(new Error(`no data at data/${file}.js`));
      document.head.appendChild(tag);
    });
    files.set(file, loaded);
    loaded.catch(() => files.delete(file));
  }
  return files.get(file);
}

async function loadScript(path) {
  await loadFile(fileOf(path));
  if (!docs.has(path)) throw new Error(`no data for ${path} in data/${fileOf(path)}.js`);
  return docs.get(path);
}

async function loadJson(path) {
  const response = await fetch(`data/${path}.json`, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error((await response.text()).trim() || `no data at data/${path}.json`);
  return response.json();
}

function load(path) {
  if (!cache.has(path)) {
    const pending = SOURCE === "script" ? loadScript(path) : loadJson(path);
    cache.set(path, pending);
    pending.catch(() => cache.delete(path));
  }
  return cache.get(path);
}

// el("td", {class: "x", onclick: f}, "text", child) builds an element; strings are text, never HTML.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A page's content: node's children replaced by these, the null / false of a part not shown left out
// (replaceChildren itself would write them as the text "null").
function show(node, ...children) {
  node.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined && child !== false));
}

// A document's colours and the outcomes that take white text on them (bench.vocabulary.WHITE_TEXT).
function outcomeStyle(doc, outcome) {
  return `background:${doc.colours[outcome] || "#fff"};color:${doc.dark.includes(outcome) ? "#fff" : "#1f2328"}`;
}

function num(value, digits = 0) {
  if (value === null || value === undefined) return "-";
  return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

// --- routing --------------------------------------------------------------------------------------------

function parseHash() {
  const [path, query] = (location.hash.replace(/^#/, "") || "/").split("?");
  const params = new URLSearchParams(query || "");
  const filters = {};
  for (const facet of FACETS) {
    const value = params.get(facet);
    filters[facet] = new Set(value ? value.split(",") : []);
  }
  return { parts: path.split("/").filter(Boolean), filters };
}

function hashFor(parts, filters) {
  const params = new URLSearchParams();
  for (const facet of FACETS) if (filters && filters[facet].size) params.set(facet, [...filters[facet]].join(","));
  const query = params.toString();
  return "#/" + parts.map(encodeURIComponent).join("/") + (query ? "?" + query : "");
}

function crumbs(items) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...items.flatMap((item, i) => [
    ...(i ? [el("span", { class: "sep" }, "/")] : []),
    item.href ? el("a", { href: item.href }, item.text) : el("span", {}, item.text),
  ]));
}

async function route() {
  const { parts, filters } = parseHash();
  const app = document.getElementById("app");
  try {
    if (parts[0] === "run" && parts[1] && parts[2] === "changelog") {
      await showChangelog(app, parts[1]);
      if (parts[3] === "cell" && parts[4] !== undefined) await showCell(parts[1], Number(parts[4]), null);
      else closePanel();
    } else if (parts[0] === "run" && parts[1]) {
      await showMatrix(app, parts[1], filters);
      if (parts[2] === "cell" && parts[3] !== undefined) await showCell(parts[1], Number(parts[3]), filters);
      else closePanel();
    } else if (parts[0] === "compare" && parts[1] && parts[2]) {
      closePanel();
      await showCompare(app, parts[1], parts[2]);
    } else {
      closePanel();
      await showRuns(app);
    }
  } catch (error) {
    app.replaceChildren(el("p", { class: "exc" }, String(error.message || error)));
  }
}

// --- runs -----------------------------------------------------------------------------------------------

function outcomeBar(colours, outcomes, total) {
  return el("span", { class: "bar", title: Object.entries(outcomes).map(([o, n]) => `${o} ${n}`).join(", ") },
    Object.entries(outcomes).map(([o, n]) =>
      el("span", { style: `width:${(100 * n) / Math.max(total, 1)}%;background:${colours[o] || "#ccc"}` })));
}

async function showRuns(app) {
  app.dataset.view = "";
  crumbs([{ text: "runs" }]);
  const { runs, unreadable, colours } = await load("runs");
  const picked = [];
  const compare = el("button", { id: "compare", disabled: true, onclick: () => {
    const started = (id) => runs.find((r) => r.id === id).started_at || "";
    const [older, newer] = [...picked].sort((a, b) => started(a).localeCompare(started(b)) || a.localeCompare(b));
    location.hash = hashFor(["compare", older, newer]);
  } }, "Compare the two selected runs");
  const rows = runs.map((run) => el("tr", { dataset: { run: run.id } },
    el("td", {}, el("input", { type: "checkbox", "aria-label": `select ${run.id}`, onchange: (event) => {
      if (event.target.checked) picked.push(run.id); else picked.splice(picked.indexOf(run.id), 1);
      compare.disabled = picked.length !== 2;
    } })),
    el("td", {}, el("a", { href: hashFor(["run", run.id]) }, run.id)),
    el("td", {}, (run.started_at || "").replace("T", " ").slice(0, 19)),
    el("td", {}, run.status || "-"), el("td", {}, run.suite || "-"),
    el("td", { class: "num" }, num(run.rows)),
    el("td", { class: "releases" }, Object.entries(run.releases || {}).map(([sdk, releases]) =>
      el("div", {}, `${sdk} ${releases.join(", ")}`))), // one SDK a line: the table fits 1,280 px
    el("td", {}, outcomeBar(colours, run.outcomes, run.rows)),
    el("td", {}, run.bodies ? "yes" : "no")));
  // Runs bench view found but cannot read (as `bench runs` lists them): named, not openable.
  for (const run of unreadable || []) rows.push(el("tr", { class: "unreadable", dataset: { unreadable: run.id } },
    el("td", {}), el("td", {}, run.id), el("td", {}), el("td", { colspan: 6, class: "exc" }, run.status)));
  show(app,
    el("h1", {}, "Runs"),
    el("p", { class: "muted" }, "Open a run to see its matrix and each cell's attempts; tick two runs to see the cells that changed."),
    el("table", { id: "runs" }, el("thead", {}, el("tr", {}, ["", "run", "started (UTC)", "status", "suite", "rows", "SDK releases",
      "outcomes", "bodies"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("p", {}, compare));
}

// --- one run's matrix -----------------------------------------------------------------------------------

function facetValues(doc) {
  const values = Object.fromEntries(FACETS.map((facet) => [facet, new Set()]));
  for (const row of doc.rows) for (const key of ROW_KEYS) values[key].add(row[key]);
  for (const scenario of doc.scenarios) values.family.add(scenario.family);
  for (const cell of doc.cells) { values.outcome.add(cell.outcome); values.realism.add(cell.realism); }
  values.family = new Set(doc.scenarios.map((s) => s.family));
  values.outcome = new Set(doc.outcome_order.filter((o) => values.outcome.has(o)));
  return values;
}

// Chips of a facet: outcomes and families in the document's order, releases in version order (the
// server's release_order: 1.10.0 after 1.9.0, which text order would put before it), the rest as text.
function chipOrder(doc, facet) {
  if (facet === "outcome" || facet === "family") return () => 0;
  if (facet === "release") return (a, b) => doc.release_order.indexOf(a) - doc.release_order.indexOf(b);
  return (a, b) => String(a).localeCompare(String(b));
}

function filterBar(doc, runId, filters, cellPart) {
  const values = facetValues(doc);
  return el("div", { class: "filters", role: "toolbar" }, FACETS.map((facet) => el("fieldset", { dataset: { facet } },
    el("legend", {}, facet),
    [...values[facet]].sort(chipOrder(doc, facet))
      .map((value) => el("button", {
        class: "chip", "aria-pressed": filters[facet].has(value) ? "true" : "false", dataset: { value },
        style: facet === "outcome" && filters[facet].has(value) ? outcomeStyle(doc, value) : null,
        onclick: () => {
          const next = Object.fromEntries(FACETS.map((f) => [f, new Set(filters[f])]));
          if (next[facet].has(value)) next[facet].delete(value); else next[facet].add(value);
          location.hash = hashFor(["run", runId, ...cellPart], next);
        },
      }, value)))));
}

function matches(filters, facet, value) { return !filters[facet].size || filters[facet].has(value); }

async function showMatrix(app, runId, filters) {
  const doc = await load(`run/${runId}/matrix`);
  crumbs([{ text: "runs", href: "#/" }, { text: runId }]);
  const key = JSON.stringify([runId, [...FACETS.map((f) => [...filters[f]])]]);
  if (app.dataset.view === key) return; // the same matrix with the same filters: only the panel changes
  const rows = doc.rows.map((row, i) => ({ ...row, i })).filter((row) =>
    ROW_KEYS.every((facet) => matches(filters, facet, row[facet])));
  const scenarios = doc.scenarios.filter((s) => matches(filters, "family", s.family));
  const byKey = new Map(doc.cells.map((cell) => [`${cell.row}|${cell.scenario}`, cell]));
  const shown = (cell) => cell && matches(filters, "outcome", cell.outcome) && matches(filters, "realism", cell.realism);
  const keptRows = rows.filter((row) => scenarios.some((s) => shown(byKey.get(`${row.i}|${s.name}`))));
  const keptScenarios = scenarios.filter((s) => keptRows.some((row) => shown(byKey.get(`${row.i}|${s.name}`))));
  const families = [];
  for (const s of keptScenarios) {
    if (families.length && families[families.length - 1].name === s.family) families[families.length - 1].span += 1;
    else families.push({ name: s.family, span: 1 });
  }
  let cellsShown = 0;
  const keyCell = (tag, values) => el(tag, { class: "key" }, values.map((v, j) => el("span", { class: `k${j}` }, v)));
  const body = keptRows.map((row) => el("tr", { dataset: { sdk: row.sdk, release: row.release } },
    keyCell("td", ROW_KEYS.map((k) => row[k])),
    keptScenarios.map((s) => {
      const cell = byKey.get(`${row.i}|${s.name}`);
      if (!cell) return el("td", {});
      const visible = shown(cell);
      if (visible) cellsShown += 1;
      const unsupported = cell.outcome === "unsupported";
      return el("td", {
        class: `cell${visible ? "" : " dim"}${unsupported ? " unsupported" : ""}`, style: outcomeStyle(doc, cell.outcome),
        title: `${ROW_KEYS.map((k) => row[k]).join(" / ")} x ${s.name}\n${cell.label}\n` +
          Object.entries(cell.outcomes).map(([o, n]) => `${o} ${n}`).join(", ") + ` (${cell.realism})`,
        dataset: { i: cell.i, outcome: cell.outcome, scenario: s.name },
        onclick: unsupported ? null : () => { location.hash = hashFor(["run", runId, "cell", String(cell.i)], filters); },
      }, cell.token);
    })));
  const head = el("thead", {},
    el("tr", { class: "fam" }, el("th", { class: "key" }, ""),
      families.map((f) => el("th", { colspan: f.span }, f.name))),
    el("tr", { class: "scn" }, keyCell("th", ROW_KEYS),
    keptScenarios.map((s) => el("th", { class: "scn", title: s.name }, el("div", {}, s.name)))));
  const legend = el("p", { class: "legend" }, doc.outcome_order.map((o) => el("span", { style: outcomeStyle(doc, o) }, o)),
    el("span", { class: "muted" }, "ok; rN recovered after N calls; fN fallback; xN raised; WN/EN wrong/empty handed to the user; LN runaway; T timeout; * reps disagree"));
  const run = doc.run;
  show(app,
    el("h1", {}, `Run ${run.id}`),
    el("p", { class: "muted" }, `${num(run.rows)} rows, suite ${run.suite || "-"}, ${run.status || "-"}; `,
      Object.entries(run.sdks).map(([k, v]) => `${k} ${v}`).join(", "),
      run.bodies ? "" : ". Request bodies were not recorded in this run: attempts show no bodies."),
    pickView(doc),
    doc.changelog ? el("p", {}, el("a", { id: "changelog-link", href: hashFor(["run", runId, "changelog"]) },
      "Release changelog"), " (this run holds several releases of an SDK: each release is a row of its own)") : null,
    filterBar(doc, runId, filters, []),
    el("p", { class: "count", id: "shown" }, `${cellsShown} cells shown in ${keptRows.length} rows and ${keptScenarios.length} scenarios; click a cell for its attempts.`),
    legend,
    el("div", { class: "scroll" }, el("table", { class: "matrix", id: "matrix" }, head, el("tbody", {}, body))));
  app.dataset.view = key;
}

// The run's pick (bench.pick, as `bench pick RUN` ranks it): the sentence, then the ranked rows with the
// worst cell of each fault family, folded; what the ranking cannot see under it.
function pickView(doc) {
  const pick = doc.pick;
  if (!pick) return null;
  if (pick.error) return el("p", { id: "pick", class: "exc" }, `No pick for this run: ${pick.error}`);
  const head = ["#", "sdk", "mode", "score", ...pick.families, "raises", "handed to the user"];
  const rows = pick.rows.map((row) => el("tr", { dataset: { sdk: row.sdk, mode: row.mode } },
    el("td", { class: "num" }, row.rank), el("td", {}, row.sdk), el("td", {}, row.mode),
    el("td", { class: "num" }, row.score.toFixed(2)),
    pick.families.map((f) => {
      const result = row.families[f];
      return result ? el("td", { class: "family", style: outcomeStyle(doc, result.outcome),
        title: `${f}: ${result.label} (worst of ${result.scenarios} scenarios)` }, result.token) : el("td", {}, "-");
    }),
    el("td", { class: "list" }, row.raises.join(", ") || "-"),
    el("td", { class: "num", title: row.handed.join("\n") || null }, row.handed.length ? `${row.handed.length} scenario(s)` : "-")));
  return el("section", { id: "pick" },
    el("p", { class: "lead" }, el("strong", {}, pick.lead)),
    el("details", {}, el("summary", {}, `The ranking (${pick.rows.length} rows, default variants; \`${pick.command}\` prints it, --weight changes the weights)`),
      el("div", { class: "scroll" }, el("table", { class: "pick" }, el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
        el("tbody", {}, rows))),
      el("p", { class: "muted" }, "What the ranking cannot see:"),
      el("ul", { class: "muted" }, pick.cannot_see.map((note) => el("li", {}, note)))));
}

// --- one cell: reps and attempts ------------------------------------------------------------------------

function closePanel() {
  const panel = document.getElementById("panel");
  panel.hidden = true;
  panel.replaceChildren();
  document.querySelectorAll("td.cell.sel").forEach((td) => td.classList.remove("sel"));
}

function attemptView(attempt, index) {
  const model = attempt.attempt !== null && attempt.attempt !== undefined;
  const summary = el("summary", {},
    el("span", { class: "beh" }, model ? `#${attempt.attempt} ${attempt.behaviour}` : attempt.behaviour), " · ",
    `status ${attempt.status_code} · ${num(attempt.input_tokens)} in / ${num(attempt.output_tokens)} out tokens billed · `,
    `first byte ${num(attempt.first_byte_ms, 1)} ms · ${num(attempt.duration_ms, 1)} ms`,
    attempt.realistic === false ? el("span", { class: "tag" }, "unrealistic") : null,
    attempt.client_retry_count ? el("span", { class: "tag" }, `client retry ${attempt.client_retry_count}`) : null);
  const parts = [summary,
    el("p", { class: "muted" }, `${attempt.path} · mode ${attempt.detected_mode || "-"} · enforcement ${attempt.enforcement || "-"}`,
      attempt.tool_call_id ? ` · tool call ${attempt.tool_call_id}` : "", attempt.tool_result_ids ? ` · tool results for ${attempt.tool_result_ids}` : "")];
  if (attempt.added) parts.push(el("h4", {}, "What the SDK added to the conversation since its previous model call"),
    el("pre", { class: "sent added" }, attempt.added));
  if (attempt.same_request) parts.push(el("p", { class: "muted" }, "The same request again: a transport retry."));
  parts.push(el("details", { class: "body", open: !attempt.added }, el("summary", {}, `Request body (${num(attempt.request_bytes)} bytes)`),
    el("pre", { class: "request" }, attempt.request || "(not recorded: run with --record-bodies)")));
  parts.push(el("details", { class: "body" }, el("summary", {}, `Response served (${num(attempt.response_bytes)} bytes)`),
    el("pre", { class: "response" }, attempt.response || "(not recorded)")));
  return el("details", { class: "attempt", open: Boolean(attempt.added) || index === 0, dataset: { attempt: attempt.attempt ?? "" } }, parts);
}

function repView(rep, matrix) {
  const tokens = `billed ${num(rep.input_tokens_billed)} in / ${num(rep.output_tokens_billed)} out; ` +
    `reported by the SDK ${num(rep.input_tokens_reported)} / ${num(rep.output_tokens_reported)}`;
  return el("section", { class: "rep" },
    el("h3", {}, `rep ${rep.rep} `, el("span", { class: "outcome", style: outcomeStyle(matrix, rep.outcome) }, rep.outcome)),
    el("p", {}, `${num(rep.model_calls)} model calls (${num(rep.output_retries)} output retries, ${num(rep.transport_retries)} transport retries); `,
      tokens, `; ${num(rep.latency_ms, 0)} ms`),
    rep.exception_type ? el("div", { class: "exc" }, el("strong", {}, "The caller saw: "), rep.exception_type,
      rep.exception_message ? `: ${rep.exception_message}` : "") : null,
    rep.note ? el("p", { class: "muted" }, rep.note) : null,
    el("div", { class: "attempts" }, rep.attempts.length ? rep.attempts.map(attemptView) :
      el("p", { class: "muted" }, "No attempt recorded (unsupported, or no request reached the provider).")));
}

async function showCell(runId, index, filters) {
  const [doc, matrix] = await Promise.all([load(`run/${runId}/cell/${index}`), load(`run/${runId}/matrix`)]);
  document.querySelectorAll("td.cell.sel").forEach((td) => td.classList.remove("sel"));
  const td = document.querySelector(`td.cell[data-i="${index}"]`);
  if (td) td.classList.add("sel");
  const k = doc.key;
  const panel = document.getElementById("panel");
  show(panel,
    el("button", { class: "close", onclick: () => {
      location.hash = filters ? hashFor(["run", runId], filters) : hashFor(["run", runId, "changelog"]);
    } }, "Close"),
    el("h2", {}, ROW_KEYS.map((key) => k[key]).join(" / ")),
    el("p", {}, el("code", {}, k.scenario), ` · ${doc.reps.length} rep(s)`),
    ...doc.reps.map((rep) => repView(rep, matrix)));
  panel.hidden = false;
  panel.scrollTop = 0;
}

// --- two runs -------------------------------------------------------------------------------------------

async function showCompare(app, before, after) {
  crumbs([{ text: "runs", href: "#/" }, { text: `${before} → ${after}` }]);
  const doc = await load(`compare/${before}/${after}`);
  app.dataset.view = "";
  const token = (run, side) => el("td", { class: "cell", style: outcomeStyle(doc, side.outcome), title: side.label },
    el("a", { href: hashFor(["run", run, "cell", String(side.i)]), style: "color:inherit" }, side.token));
  const keys = [...ROW_KEYS, "family", "scenario"];
  const rows = doc.changed.map((c) => el("tr", { dataset: { sdk: c.sdk, release: c.release } },
    keys.map((key) => el("td", {}, c[key])), token(before, c.before), token(after, c.after)));
  const pairText = (pairs) => pairs.map((p) => `${p.sdk} ${p.release} (${p.cells} cells)`).join(", ") || "none";
  show(app,
    el("h1", {}, "Two runs side by side"),
    el("p", {}, el("a", { href: hashFor(["run", before]) }, before), " (before) → ",
      el("a", { href: hashFor(["run", after]) }, after), " (after): ",
      `${doc.changed.length} of ${doc.compared} cells in both runs changed outcome, model calls or exception; `,
      `${doc.only_before} only before, ${doc.only_after} only after.`),
    el("p", { id: "pairs" }, "Compared like with like, each SDK release with the same release: ",
      el("span", { id: "pairs-compared" }, pairText(doc.pairs)), "."),
    doc.pairs_only_before.length || doc.pairs_only_after.length
      ? el("p", { class: "muted", id: "pairs-unmatched" }, `Not compared (in one run only): before `,
          pairText(doc.pairs_only_before), "; after ", pairText(doc.pairs_only_after), ".")
      : null,
    doc.changed.length
      ? el("table", { id: "changed" }, el("thead", {}, el("tr", {},
          [...keys, "before", "after"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows))
      : el("p", { class: "muted" }, "No cell changed."));
}

// --- a run's release changelog --------------------------------------------------------------------------

function changelogGrid(doc, runId, sdk) {
  const byKey = new Map(sdk.grid.map((g) => [`${g.release}|${g.scenario}`, g]));
  const scenarios = doc.scenarios.filter((s) => sdk.releases.some((r) => byKey.has(`${r}|${s.name}`)));
  const body = scenarios.map((s) => el("tr", { dataset: { scenario: s.name } },
    el("th", { class: "key" }, s.name), el("td", { class: "muted" }, s.family),
    sdk.releases.map((release) => {
      const g = byKey.get(`${release}|${s.name}`);
      if (!g) return el("td", {});
      const filters = Object.fromEntries(FACETS.map((f) => [f, new Set()]));
      filters.sdk.add(sdk.sdk); filters.release.add(release); filters.family.add(s.family);
      return el("td", {
        class: `cell${g.split ? " split" : ""}`, style: outcomeStyle(doc, g.outcome),
        title: `${sdk.sdk} ${release} x ${s.name}: ${g.text}${g.tied ? " (a tie: no majority)" : ""}` +
          `${g.others ? `\nthe other cells: ${g.others}` : ""}\n${g.cells.length} matrix cell(s); click for them`,
        dataset: { release, split: g.split ? "true" : "false", tied: g.tied ? "true" : "false" },
        onclick: () => { location.hash = hashFor(["run", runId], filters); },
      }, g.text, g.others ? el("div", { class: "others" }, `other: ${g.others}`) : null);
    })));
  return el("div", { class: "scroll" }, el("table", { class: "matrix changelog", dataset: { grid: sdk.sdk } },
    el("thead", {}, el("tr", {}, el("th", { class: "key" }, "scenario"), el("th", {}, "family"),
      sdk.releases.map((r) => el("th", {}, r)))),
    el("tbody", {}, body)));
}

function changelogStep(doc, runId, step) {
  const side = (i, text, outcome) => i === null || i === undefined ? el("td", {}, text) :
    el("td", { class: "cell", style: outcomeStyle(doc, outcome), title: text, dataset: { i } },
      el("a", { href: hashFor(["run", runId, "changelog", "cell", String(i)]), style: "color:inherit" }, text));
  const extra = [step.newly_expressible ? `${step.newly_expressible} cell(s) newly expressible` : "",
    step.no_longer_expressible ? `${step.no_longer_expressible} cell(s) no longer expressible` : ""].filter(Boolean);
  const parts = [el("h3", {}, `${step.before} → ${step.after}`),
    el("p", {}, step.changed ? `${step.changed} of ${step.compared} cells both releases express changed (` +
      Object.entries(step.directions).filter(([, n]) => n).map(([d, n]) => `${n} ${d}`).join(", ") + ").":
      "No cell changed its outcome, model calls or exception.", extra.length ? ` (${extra.join("; ")})` : "")];
  for (const group of step.groups) {
    parts.push(el("details", { class: "group", dataset: { scenario: group.scenario, direction: group.direction } },
      el("summary", {}, el("span", { class: `mark ${group.direction}` }, group.direction), " ",
        el("span", { class: "muted" }, `${group.family}: `), group.line.replaceAll("`", "")),
      el("table", {}, el("thead", {}, el("tr", {}, ["cell", step.before, step.after].map((h) => el("th", {}, h)))),
        el("tbody", {}, group.cells.map((c) => el("tr", {}, el("td", {}, c.cell),
          side(c.before, c.was, c.was_outcome), side(c.after, c.now, c.now_outcome)))))));
  }
  return el("section", { class: "step", dataset: { before: step.before, after: step.after } }, parts);
}

async function showChangelog(app, runId) {
  const doc = await load(`run/${runId}/changelog`);
  crumbs([{ text: "runs", href: "#/" }, { text: runId, href: hashFor(["run", runId]) }, { text: "changelog" }]);
  const key = `changelog|${runId}`;
  if (app.dataset.view === key) return; // only the panel changes
  show(app,
    el("h1", {}, `Release changelog of run ${runId}`),
    el("p", { class: "muted" }, "Per SDK, each (release, scenario) counts the SDK's supported cells by behaviour; a cell ",
      "whose cells disagree names each behaviour with its count (a tie is never shown as a majority), the two commonest ",
      "when there are more, and what the other cells did under them. Click a grid cell for its cells in the matrix, ",
      "a change's before or after for that cell's attempts."),
    el("p", { class: "muted", id: "directions" }, doc.direction_legend.replaceAll("`", "")),
    doc.sdks.length ? null : el("p", {}, "No SDK ran in more than one release in this run: nothing to compare."),
    ...doc.sdks.map((sdk) => el("section", { class: "sdk", dataset: { sdk: sdk.sdk } },
      el("h2", {}, sdk.sdk),
      changelogGrid(doc, runId, sdk),
      sdk.exceptions.length ? el("p", { class: "muted" }, "Exceptions: ",
        sdk.exceptions.map((e) => `${e.letter} ${e.name}`).join(", ")) : null,
      ...sdk.steps.map((step) => changelogStep(doc, runId, step)))));
  app.dataset.view = key;
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);

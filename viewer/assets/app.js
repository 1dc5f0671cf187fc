// skillshift viewer: renders the JSON of /api/* into the page.
// Every text goes in with textContent (el() below); nothing is parsed as HTML.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
const main = document.getElementById("main");
const crumbs = document.getElementById("crumbs");
let events = null;

function withToken(path, params) {
  const q = new URLSearchParams(params || {});
  if (TOKEN) q.set("token", TOKEN);
  const s = q.toString();
  return s ? path + "?" + s : path;
}

async function api(path, params) {
  const res = await fetch(withToken(path, params));
  const body = await res.json().catch(() => ({ error: "not JSON (HTTP " + res.status + ")" }));
  if (!res.ok) throw new Error(body.error || "HTTP " + res.status);
  return body;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function route(name, params) {
  return "#/" + name + "?" + new URLSearchParams(params).toString();
}

function link(name, params, ...children) {
  return el("a", { href: route(name, params) }, ...children);
}

function pct(v) {
  return v === null || v === undefined ? "--" : v.toFixed(2);
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat(2).filter((n) => n !== null && n !== undefined));
}

function setCrumbs(...parts) {
  crumbs.replaceChildren(...parts.flatMap((p) => [" › ", p]));
}

function outcomeSpan(o) {
  return el("span", { class: "outcome-" + o }, o);
}

// ---- index: sweeps and treatments
async function index() {
  setCrumbs();
  const d = await api("/api/sweeps");
  const rows = d.sweeps.map((s) =>
    el("tr", {},
      el("td", {}, s.id),
      el("td", {}, s.live ? (s.state || "running") : (s.state || "export")),
      el("td", {}, s.treatments.map((t) =>
        el("div", {}, link("grid", { sweep: s.id, treatment: t.name }, el("span", { class: "treatment-link" }, t.name)), " ", el("span", { class: "muted" }, t.attempts + " attempts"))))));
  show(el("h1", {}, "Sweeps"),
    el("table", { id: "sweeps" }, el("tr", {}, el("th", {}, "sweep"), el("th", {}, "state"), el("th", {}, "treatments")), rows));
}

// ---- the 18-cell grid
async function grid(p) {
  const d = await api("/api/grid", { sweep: p.get("sweep"), treatment: p.get("treatment") });
  setCrumbs(el("span", {}, d.sweep), el("span", {}, d.treatment));
  const byKey = {};
  for (const c of d.cells) byKey[c.site + "/" + c.condition] = c;
  const head = el("tr", {}, el("th", {}, ""), d.conditions.map((c) => el("th", {}, c)));
  const rows = d.sites.map((site) =>
    el("tr", {}, el("th", {}, site), d.conditions.map((cond) => {
      const c = byKey[site + "/" + cond];
      const nonSuccess = c.attempts.failure + c.attempts.timeout + c.attempts.error;
      const iv = c.interval ? "[" + pct(c.interval[0]) + ", " + pct(c.interval[1]) + "]" : "";
      return el("td", { class: "cell", "data-site": site, "data-condition": cond },
        link("cell", { sweep: d.sweep, treatment: d.treatment, site, condition: cond },
          el("div", { class: "sr" }, pct(c.SR)),
          el("div", { class: "muted" }, "95% " + iv),
          el("div", {}, c.successes + "/" + c.evaluable + " units" + (c.invalid ? ", " + c.invalid + " invalid" : "")),
          el("div", { class: "muted" }, nonSuccess + " non-success attempts"),
          el("div", {}, c.categories.slice(0, 3).map((k) => el("span", { class: "cat" }, k.category + " " + k.count)))));
    })));
  const o = d.overall;
  show(el("h1", {}, "Treatment " + d.treatment),
    el("p", {}, "Overall SR " + pct(o.SR) + (o.interval ? " (95% " + pct(o.interval[0]) + "–" + pct(o.interval[1]) + ")" : "") +
      ". Each cell: SR in %, its Wilson interval, successes/evaluable units, and its most frequent failure categories. Click a cell for its attempts."),
    el("table", { class: "grid", id: "grid" }, head, rows),
    d.notes.map((n) => el("p", { class: "muted" }, "note: " + n)));
}

// ---- a cell's attempts, filtered
async function cell(p) {
  const q = Object.fromEntries(p.entries());
  const d = await api("/api/attempts", q);
  setCrumbs(link("grid", { sweep: q.sweep, treatment: q.treatment }, q.sweep + " · " + q.treatment), el("span", {}, d.site + " " + d.condition));
  const outcomeSel = el("select", { id: "outcome" }, ["", "success", "failure", "timeout", "error"].map((o) =>
    el("option", { value: o }, o || "any")));
  outcomeSel.value = q.outcome || "";
  const catSel = el("select", { id: "category" }, el("option", { value: "" }, "any"),
    Object.entries(d.categories).map(([k, n]) => el("option", { value: k }, k + " (" + n + ")")));
  catSel.value = q.category || "";
  const refilter = () => { location.hash = route("cell", { ...q, outcome: outcomeSel.value, category: catSel.value }); };
  outcomeSel.addEventListener("change", refilter);
  catSel.addEventListener("change", refilter);
  const rows = d.attempts.map((a) =>
    el("tr", { class: "attempt" },
      el("td", {}, link("attempt", { sweep: q.sweep, treatment: q.treatment, uid: a.uid, condition: a.condition, rep: a.rep, attempt: a.attempt },
        el("span", { class: "attempt-link" }, a.uid))),
      el("td", { class: "num" }, a.rep), el("td", { class: "num" }, a.attempt),
      el("td", {}, outcomeSpan(a.outcome)),
      el("td", {}, a.failure_category || (a.outcome === "success" ? "" : "unrecorded")),
      el("td", { class: "num" }, a.steps ?? "--"),
      el("td", { class: "num" }, a.skill_calls === null ? "--" : a.skill_failures + "/" + a.skill_calls),
      el("td", { class: "num" }, a.duration_ms ?? "--"),
      el("td", {}, a.trajectory ? "yes" : "no")));
  show(el("h1", {}, d.site + " " + d.condition),
    el("p", { class: "filters" }, el("label", {}, "outcome ", outcomeSel), el("label", {}, "failure category ", catSel),
      el("span", { class: "muted" }, d.attempts.length + " of " + d.total + " attempts")),
    el("table", { id: "attempts" },
      el("tr", {}, ["uid", "rep", "attempt", "outcome", "category", "steps", "skill fails/calls", "ms", "trajectory"].map((h) => el("th", {}, h))),
      rows));
}

// ---- one attempt
function skillBlock(skill, failedIdx) {
  const rows = skill.steps.map((s, i) =>
    el("tr", { class: i === failedIdx ? "failed" : (s.ok ? "ok" : "failed") },
      el("td", { class: "num" }, i + 1), el("td", {}, s.action),
      el("td", {}, s.target === null || s.target === undefined ? "" : JSON.stringify(s.target)),
      el("td", {}, s.ok ? "ok" : "failed"), el("td", {}, s.error || "")));
  return el("div", { class: "skill" },
    el("div", {}, el("b", {}, "skill "), skill.name, " ", el("code", {}, JSON.stringify(skill.args)), " → ",
      skill.ok ? el("span", { class: "outcome-success" }, "ok") : el("span", { class: "err" }, "failed" + (skill.error ? ": " + skill.error : ""))),
    el("table", { class: "substeps" }, el("tr", {}, ["#", "action", "target", "", "error"].map((h) => el("th", {}, h))), rows));
}

// The requests of one step ({requests, more, writes}): method, status and URL, those that may change
// the site (not GET, HEAD or OPTIONS) highlighted.
function networkPanel(rows, label) {
  if (!rows) return null;
  const reqs = rows.requests || [];
  const write = (m) => !["GET", "HEAD", "OPTIONS"].includes(String(m).toUpperCase());
  const table = el("table", { class: "requests" },
    el("tr", {}, ["method", "status", "url", "tab"].map((h) => el("th", {}, h))),
    reqs.map((q) => el("tr", { class: write(q.method) ? "write" : null, title: (q.type || "") + (q.redirect ? " → " + q.redirect : "") },
      el("td", { class: "method" }, q.method), el("td", { class: "num" }, q.status ? String(q.status) : "failed"),
      el("td", { class: "url" }, q.url), el("td", { class: "num" }, q.tab ?? ""))));
  const n = reqs.length + (rows.more || 0);
  return el("details", { class: "net", open: "" },
    el("summary", {}, label + ": " + n + (n === 1 ? " request" : " requests") + (rows.writes ? ", " + rows.writes + " not GET" : "")),
    reqs.length ? table : null,
    rows.more ? el("div", { class: "muted" }, rows.more + " more not listed") : null);
}

function stepBlock(d, s, i) {
  const marked = new Set(d.marks[i] || []);
  const obs = el("div", { class: "obs" }, s.observation.split("\n").map((line, j) =>
    el("div", { class: marked.has(j) ? "perturbed" : null }, line || "\u00a0")));
  const shot = s.screenshot
    ? el("div", { class: "shot" }, el("img", {
        alt: "screenshot of step " + s.step,
        src: withToken("/api/screenshot", { sweep: d.sweepId, sha: s.screenshot.replace(/^screenshots\//, "").replace(/\.png$/, "") }),
      }))
    : null;
  const net = d.network ? networkPanel(d.network.steps[i], "network") : null;
  return el("div", { class: "step" + (net ? " with-net" : ""), id: "step-" + s.step }, el("div", { class: "step-main" },
    el("h3", {}, "Step " + s.step + " ", el("span", { class: "muted" }, s.title + " — " + s.url + " · " + s.duration_ms + " ms")),
    s.perturbations.length ? el("div", {}, "perturbations: ", s.perturbations.map((x) => el("span", { class: "perturb" }, x))) : null,
    s.action !== null && s.action !== undefined ? el("div", { class: "action" }, el("b", {}, "action "), el("code", {}, s.action)) : null,
    s.skill ? skillBlock(s.skill, d.failed_substep[i]) : null,
    (s.reported_skills || []).map((k) => el("div", { class: "skill reported" }, el("b", {}, "reported skill "), k.name, " → ",
      k.ok ? el("span", { class: "outcome-success" }, "ok") : el("span", { class: "err" }, "failed" + (k.error ? ": " + k.error : "")))),
    s.last_action_error ? el("div", { class: "err" }, "last action error: " + s.last_action_error) : null,
    el("details", { open: "" }, el("summary", {}, "observation (" + marked.size + (marked.size === 1 ? " perturbed line" : " perturbed lines") + " marked)"), obs),
    s.llm ? el("details", {}, el("summary", {}, "LLM reply · " + s.llm.model + " · " + s.llm.tokens_in + " in / " + s.llm.tokens_out + " out · " + s.llm.latency_ms + " ms"),
      el("div", { class: "reply" }, s.llm.reply)) : null,
    shot), net);
}

function attemptBlock(d, sweep) {
  d.sweepId = sweep;
  const r = d.record;
  const t = d.trajectory;
  const parts = [
    el("p", {}, outcomeSpan(r.outcome || (r.success ? "success" : "failure")),
      d.category ? el("span", {}, " · category ", el("b", { class: "category" }, d.category)) : null,
      r.error ? el("span", { class: "err" }, " · error " + r.error) : null,
      " · " + (r.steps ?? "--") + " steps"),
  ];
  if (!t) {
    parts.push(el("p", { class: "muted" }, "This attempt kept no trajectory."));
    return parts;
  }
  parts.push(el("p", {}, el("b", {}, "intent "), t.intent), el("p", { class: "muted" }, "agent " + t.agent + (t.model ? " · model " + t.model : "") + " · start " + t.start_url));
  if (t.score) {
    parts.push(el("h2", {}, "Scorer's evidence: " + t.score.verdict),
      el("table", { class: "evidence" }, el("tr", {}, ["evaluator", "verdict", "expected", "got"].map((h) => el("th", {}, h))),
        t.score.evaluators.map((e) => el("tr", { class: e.verdict }, el("td", {}, e.type), el("td", {}, e.verdict), el("td", {}, e.expected), el("td", {}, e.got)))));
  }
  const total = d.steps_total ?? t.steps.length;
  const steps = el("div", { class: "steps" }, t.steps.map((s, i) => stepBlock(d, s, i)));
  parts.push(el("h2", {}, total + " steps"));
  if (d.network) {
    parts.push(el("p", { class: "muted", id: "network-total" }, "network trace: " + d.network.entries + " requests" +
      (d.network.dropped ? ", " + d.network.dropped + " more past the trace's bound" : "")));
    if (d.network.before) parts.push(el("div", { class: "net-before" }, networkPanel(d.network.before, "before step 1")));
  }
  parts.push(steps);
  // Long trajectories come in pages: the next one is fetched on demand and appended.
  let next = d.steps_next;
  if (next !== null && next !== undefined) {
    const more = el("button", { id: "more-steps" }, "more steps (" + next + " of " + total + " shown)");
    if (d.query) {
      more.addEventListener("click", async () => {
        more.disabled = true;
        try {
          const page = await api("/api/attempt", Object.assign({}, d.query, { from: next }));
          page.sweepId = d.sweepId;
          page.trajectory.steps.forEach((s, i) => steps.appendChild(stepBlock(page, s, i)));
          next = page.steps_next;
          if (next === null || next === undefined) more.remove();
          else more.textContent = "more steps (" + next + " of " + total + " shown)";
        } catch (e) {
          more.textContent = "could not load more steps: " + e.message;
        }
        more.disabled = false;
      });
    } else {
      more.disabled = true;
      more.textContent = next + " of " + total + " steps shown here; open the attempt for the rest";
    }
    parts.push(more);
  }
  return parts;
}

async function attempt(p) {
  const q = Object.fromEntries(p.entries());
  const d = await api("/api/attempt", q);
  d.query = q;
  setCrumbs(link("grid", { sweep: q.sweep, treatment: q.treatment }, q.sweep + " · " + q.treatment),
    link("cell", { sweep: q.sweep, treatment: q.treatment, site: d.site, condition: q.condition }, d.site + " " + q.condition),
    el("span", {}, q.uid + " rep " + q.rep + " attempt " + q.attempt));
  const other = q.condition === "src" ? "tgt-exec" : "src";
  const cmp = link("pair", { sweep: q.sweep, site: d.site, task: d.task_id, rep: q.rep, lt: q.treatment, lc: "src", rt: q.treatment, rc: q.condition === "src" ? other : q.condition },
    "side by side: src vs " + (q.condition === "src" ? other : q.condition));
  const sweeps = await api("/api/sweeps");
  const here = sweeps.sweeps.find((x) => x.id === q.sweep);
  const others = (here ? here.treatments : []).filter((t) => t.name !== q.treatment).map((t) =>
    link("pair", { sweep: q.sweep, site: d.site, task: d.task_id, rep: q.rep, lt: q.treatment, lc: q.condition, rt: t.name, rc: q.condition },
      "side by side with " + t.name));
  show(el("h1", {}, q.uid + " · " + q.condition), el("p", { class: "compare" }, cmp, others.flatMap((a) => [" · ", a])), attemptBlock(d, q.sweep));
}

// ---- one unit under two sides
async function pair(p) {
  const q = Object.fromEntries(p.entries());
  const d = await api("/api/pair", q);
  setCrumbs(el("span", {}, q.sweep), el("span", {}, d.site + " task " + d.task_id + " rep " + d.rep));
  const cols = d.sides.map((s) => el("div", { class: "side" },
    el("h2", { class: "side-title" }, s.treatment + " · " + s.condition),
    s.view.missing ? el("p", { class: "muted" }, s.view.missing) : attemptBlock(s.view, q.sweep)));
  show(el("h1", {}, d.site + " task " + d.task_id + ", side by side"), el("div", { class: "pair" }, cols));
}

async function render() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name, query] = hash.split("?");
  const p = new URLSearchParams(query || "");
  try {
    if (name === "grid") await grid(p);
    else if (name === "cell") await cell(p);
    else if (name === "attempt") await attempt(p);
    else if (name === "pair") await pair(p);
    else await index();
  } catch (e) {
    show(el("p", { class: "err", id: "error" }, "Could not load: " + e.message));
  }
}

// Live sources push the id of a sweep that changed; the grid and lists re-fetch their JSON, never the page.
async function subscribe() {
  try {
    const d = await api("/api/sweeps");
    if (!d.live || events) return;
    events = new EventSource(withToken("/api/events"));
    document.getElementById("live").textContent = "live";
    events.addEventListener("sweep", () => {
      const name = location.hash.replace(/^#\/?/, "").split("?")[0];
      if (name !== "attempt" && name !== "pair") render();
    });
  } catch (_) { /* the page still works without live updates */ }
}

window.addEventListener("hashchange", render);
render();
subscribe();

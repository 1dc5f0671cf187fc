// skillshift perturbations, injected before every document of an attempt
// (Page.addScriptToEvaluateOnNewDocument). `__SKILLSHIFT_CFG__` is replaced by
// the harness with {seed, perception, execution}. Every choice is drawn from
// the seed and a key naming what is chosen, so the same attempt meets the same
// page. State that must survive navigations (a dismissed modal, a click already
// swallowed, the agent's step) lives in sessionStorage, which each attempt starts empty in a fresh tab.
// What was applied to the current document is reported in `applied`, one object per change
// ({kind: "relabel", from, to}, {kind: "reorder", menus}, ...), read by perturb.rs.
(() => {
  "use strict";
  const CFG = __SKILLSHIFT_CFG__;
  if (window.__skillshift) return;

  function hash32(str) {
    let h = (0x811c9dc5 ^ CFG.seed) >>> 0;
    for (let i = 0; i < str.length; i++) {
      h ^= str.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }
  function rng(key) {
    let s = hash32(key);
    return () => {
      s = (s + 0x6d2b79f5) | 0;
      let t = Math.imul(s ^ (s >>> 15), 1 | s);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const unit = (key) => rng(key)();
  const store = {
    get(k) { try { return sessionStorage.getItem("__skillshift_" + k); } catch (e) { return null; } },
    set(k, v) { try { sessionStorage.setItem("__skillshift_" + k, String(v)); } catch (e) {} },
  };
  const norm = (s) => (s || "").replace(/\s+/g, " ").trim();
  const ours = (el) => !!(el && el.closest && el.closest("[data-skillshift]"));
  const INTERACTIVE = "a[href], button, [role=button], [role=link], [role=menuitem], [role=tab], label, summary, " +
    "input[type=submit], input[type=button]";
  const signature = (el) =>
    el.tagName + "|" + norm(el.getAttribute("aria-label") || el.value || el.textContent).slice(0, 80);
  const api = { applied: [] };
  window.__skillshift = api;

  // ---- perception ----------------------------------------------------------
  function synonymFor(word, key) {
    const table = CFG.perception.relabel.synonyms;
    const options = table[word.toLowerCase()];
    if (!options || !options.length) return null;
    const pick = options[Math.floor(unit("syn|" + key + "|" + word.toLowerCase()) * options.length)];
    return word[0] === word[0].toUpperCase() ? pick[0].toUpperCase() + pick.slice(1) : pick;
  }
  function relabelText(text, key) {
    const table = CFG.perception.relabel.synonyms;
    const words = Object.keys(table).sort((a, b) => b.length - a.length);
    if (!words.length) return text;
    const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const re = new RegExp("\\b(" + escaped.join("|") + ")\\b", "gi");
    return text.replace(re, (m) => synonymFor(m, key) || m);
  }
  function relabel(root) {
    const r = CFG.perception.relabel;
    if (!r || !(r.share > 0)) return;
    for (const el of root.querySelectorAll(INTERACTIVE)) {
      if (ours(el)) continue;
      const name = norm(el.getAttribute("aria-label") || el.textContent || el.value);
      if (!name || relabelText(name, name) === name) continue; // no word with a synonym
      if (unit("relabel|" + name) >= r.share) continue;
      if (el.hasAttribute("aria-label")) el.setAttribute("aria-label", relabelText(el.getAttribute("aria-label"), name));
      if (el.tagName === "INPUT") {
        el.value = relabelText(el.value, name);
      } else {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) n.nodeValue = relabelText(n.nodeValue, name);
      }
      const renamed = norm(el.getAttribute("aria-label") || el.textContent || el.value);
      if (renamed !== name) api.applied.push({ kind: "relabel", from: name, to: renamed });
    }
  }
  function distractors() {
    const d = CFG.perception.distractors;
    if (!d || !document.body) return;
    const pickN = (pool, n, key) => {
      const g = rng(key), a = pool.slice();
      for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(g() * (i + 1)); [a[i], a[j]] = [a[j], a[i]]; }
      return a.slice(0, Math.min(n, a.length));
    };
    const frag = document.createDocumentFragment();
    if (d.banner) {
      const banner = document.createElement("div");
      banner.setAttribute("data-skillshift", "banner");
      banner.setAttribute("role", "region");
      banner.setAttribute("aria-label", d.banner.label);
      banner.style.cssText = "padding:8px;background:#fff6d5;border-bottom:1px solid #cc9;";
      const p = document.createElement("p");
      p.textContent = d.banner.text;
      banner.appendChild(p);
      for (const label of pickN(d.banner.buttons, d.banner.count, "banner")) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = label;
        b.addEventListener("click", (e) => e.preventDefault());
        banner.appendChild(b);
      }
      frag.appendChild(banner);
    }
    if (d.links) {
      const box = document.createElement("div");
      box.setAttribute("data-skillshift", "links");
      box.setAttribute("role", "complementary");
      box.setAttribute("aria-label", d.links.label);
      const ul = document.createElement("ul");
      pickN(d.links.texts, d.links.count, "links").forEach((text, i) => {
        const li = document.createElement("li");
        const a = document.createElement("a");
        a.href = "#skillshift-related-" + i;
        a.textContent = text;
        li.appendChild(a);
        ul.appendChild(li);
      });
      box.appendChild(ul);
      frag.appendChild(box);
    }
    document.body.insertBefore(frag, document.body.firstChild);
    api.applied.push({ kind: "distractors" });
  }
  function reorderNav() {
    const o = CFG.perception.reorder_nav;
    if (!o || !(o.share > 0)) return;
    let n = 0;
    document.querySelectorAll("nav").forEach((nav, k) => {
      if (ours(nav)) return;
      const label = nav.getAttribute("aria-label") || "nav" + k;
      if (unit("reorder|" + label) >= o.share) return;
      for (const list of nav.querySelectorAll("ul, ol")) {
        const items = [...list.children].filter((c) => c.tagName === "LI");
        if (items.length < 2) continue;
        const g = rng("order|" + label + "|" + items.length);
        const a = items.slice();
        for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(g() * (i + 1)); [a[i], a[j]] = [a[j], a[i]]; }
        if (a.every((x, i) => x === items[i])) a.push(a.shift());
        for (const li of a) list.appendChild(li);
        n++;
      }
    });
    api.applied.push({ kind: "reorder", menus: n });
  }

  // ---- execution -----------------------------------------------------------
  function modalStep() {
    const m = CFG.execution.interstitial;
    return m.first_step + Math.floor(unit("modal") * (m.last_step - m.first_step + 1));
  }
  function maybeModal() {
    const m = CFG.execution && CFG.execution.interstitial;
    if (!m || !document.body || store.get("modal_dismissed") === "1") return;
    if (Number(store.get("step") ?? -1) < modalStep() || document.querySelector("[data-skillshift=modal]")) return;
    const overlay = document.createElement("div");
    overlay.setAttribute("data-skillshift", "modal");
    overlay.style.cssText = "position:fixed;inset:0;z-index:2147483647;background:rgba(0,0,0,.45);" +
      "display:flex;align-items:center;justify-content:center;";
    const dlg = document.createElement("div");
    dlg.setAttribute("role", "dialog");
    dlg.setAttribute("aria-modal", "true");
    dlg.setAttribute("aria-labelledby", "skillshift-modal-title");
    dlg.style.cssText = "background:#fff;padding:24px;max-width:480px;";
    const h = document.createElement("h2");
    h.id = "skillshift-modal-title";
    h.textContent = m.title;
    const p = document.createElement("p");
    p.textContent = m.text;
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = m.dismiss;
    b.addEventListener("click", () => { store.set("modal_dismissed", "1"); overlay.remove(); });
    dlg.append(h, p, b);
    overlay.appendChild(dlg);
    document.body.appendChild(overlay);
    api.applied.push({ kind: "modal" });
  }
  function swallowClicks() {
    const s = CFG.execution.swallow_clicks;
    if (!s || !(s.share > 0)) return;
    window.addEventListener("click", (e) => {
      const el = e.target && e.target.closest && e.target.closest(INTERACTIVE + ", input, select");
      if (!el || ours(el)) return;
      const key = signature(el);
      if (unit("swallow|" + key) >= s.share || store.get("swallowed|" + key) === "1") return;
      store.set("swallowed|" + key, "1");
      e.preventDefault();
      e.stopImmediatePropagation();
      api.applied.push({ kind: "swallowed", element: key });
    }, true);
  }
  // Late rendering counts agent steps, not milliseconds, so a slow machine meets the same page:
  // an element hidden when its page loads (during step s) is shown from step s + after_steps on.
  const late = [];
  function revealLate() {
    const step = Number(store.get("step") ?? -1);
    for (const item of late) {
      if (!item.shown && step >= item.at) { item.el.style.visibility = item.before; item.shown = true; }
    }
  }
  function lateRender() {
    const l = CFG.execution.late_render;
    if (!l || !(l.share > 0)) return;
    const scope = document.querySelector("main") || document.body;
    if (!scope) return;
    const at = Number(store.get("step") ?? -1) + l.after_steps;
    for (const el of scope.querySelectorAll("a[href], button, input, select, textarea")) {
      if (ours(el) || el.type === "hidden") continue;
      if (unit("late|" + signature(el)) >= l.share) continue;
      late.push({ el, before: el.style.visibility, at, shown: false });
      el.style.visibility = "hidden";
    }
    api.applied.push({ kind: "late", elements: late.length });
  }

  api.setStep = (n) => {
    store.set("step", n);
    if (CFG.execution) { revealLate(); maybeModal(); }
    return api.applied;
  };

  function onReady() {
    if (CFG.perception) {
      relabel(document);
      distractors();
      reorderNav();
    }
    if (CFG.execution) {
      lateRender();
      maybeModal();
    }
  }
  if (CFG.execution) swallowClicks();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", onReady, { once: true });
  else onReady();
})();

// vime-sync review page: renders the embedded decisions document, records choices, exports decisions.json.
(function () {
  "use strict";
  const doc = JSON.parse(document.getElementById("vime-data").textContent);
  const choices = {};
  const siteEdits = {};
  const siteChoices = {};
  let filter = "all";

  for (const q of doc.questions) {
    const preset = q.decision || (q.tier !== "Decide" ? q.default : null);
    choices[q.id] = { decision: preset || null, edit: q.edit };
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children || []) node.appendChild(child);
    return node;
  }

  function linesText(q) {
    if (!q.lines || q.lines.length === 0) return "whole file";
    return q.lines[0] === q.lines[1] ? "line " + q.lines[0] : "lines " + q.lines[0] + "–" + q.lines[1];
  }

  function prText(prs) {
    return prs.length ? prs.map((p) => (typeof p === "number" ? "#" + p : p)).join(", ") : "-";
  }

  function renderQuestion(q) {
    const card = el("article", { id: "q-" + q.id, class: "question tier-" + q.tier, "data-tier": q.tier });
    card.appendChild(
      el("div", { class: "qhead" }, [
        el("strong", { text: q.id }),
        el("span", { class: "badge tier", text: q.tier }),
        el("span", { class: "badge", text: q.kind }),
        el("code", { text: q.file }),
        el("span", { class: "meta", text: linesText(q) }),
      ])
    );
    card.appendChild(el("p", { class: "summary", text: q.summary }));
    const rules = q.rules.length ? q.rules.join(", ") : "-";
    const proposed = q.tier === "Settled" ? q.decision : q.default;
    card.appendChild(
      el("p", { class: "meta", text: "PRs: " + prText(q.prs) + " · rules: " + rules + " · proposed: " + (proposed || "none") })
    );
    const sides = el("div", { class: "sides" });
    for (const side of ["ours", "base", "theirs"]) {
      if (q.sides && side in q.sides) {
        sides.appendChild(el("div", { class: "side" }, [el("h4", { text: side }), el("pre", { text: q.sides[side] })]));
      }
    }
    card.appendChild(sides);
    if (q.sites && q.sites.length) card.appendChild(renderSites(q));
    const options = el("div", { class: "options" });
    const edit = el("textarea", { id: "edit-" + q.id, rows: "6", placeholder: "edited text replacing the hunk" });
    edit.value = choices[q.id].edit || (q.sides && q.sides.ours) || "";
    edit.hidden = choices[q.id].decision !== "edit";
    edit.addEventListener("input", () => { choices[q.id].edit = edit.value; });
    for (const opt of q.options) {
      if (q.sites && q.sites.length && opt === "edit") continue; // a group is edited per site, below
      const id = "opt-" + q.id + "-" + opt;
      const input = el("input", { type: "radio", name: "choice-" + q.id, value: opt, id: id });
      input.checked = choices[q.id].decision === opt;
      input.addEventListener("change", () => {
        choices[q.id].decision = opt;
        edit.hidden = opt !== "edit";
        if (opt === "edit") choices[q.id].edit = edit.value;
        card.classList.add("answered");
        updateProgress();
      });
      options.appendChild(el("label", { for: id }, [input, document.createTextNode(" " + opt)]));
    }
    card.appendChild(options);
    card.appendChild(edit);
    return card;
  }

  // A port group: every file (its PRs, the size of its translated change, its diff beside this page),
  // each of which may take its own answer instead of the group's.
  function renderPortSites(q) {
    const list = el("table", { class: "sites" });
    list.appendChild(el("tr", {}, [el("th", { text: "file" }), el("th", { text: "PRs" }), el("th", { text: "change" }), el("th", { text: "answer" })]));
    siteChoices[q.id] = siteChoices[q.id] || {};
    q.sites.forEach((s, i) => {
      const pick = el("select", { title: "this file's own answer" });
      for (const opt of ["(the group's)", ...q.options]) pick.appendChild(el("option", { value: opt, text: opt }));
      if (s.decision) { pick.value = s.decision; siteChoices[q.id][i] = s.decision; }
      pick.addEventListener("change", () => {
        siteChoices[q.id][i] = q.options.includes(pick.value) ? pick.value : null;
      });
      list.appendChild(el("tr", {}, [
        el("td", {}, [el("code", { text: s.file })]),
        el("td", { text: prText(s.prs) }),
        el("td", {}, [el("code", { text: s.snippet }), document.createTextNode(" "), el("a", { href: s.diff, text: "diff" })]),
        el("td", {}, [pick]),
      ]));
    });
    return list;
  }

  // A grouped question: every site (file:line, the PRs behind that line), each editable on its own.
  function renderSites(q) {
    if (q.kind === "port") return renderPortSites(q);
    const list = el("table", { class: "sites" });
    list.appendChild(el("tr", {}, [el("th", { text: "site" }), el("th", { text: "PRs" }), el("th", { text: "line" }), el("th", { text: "edit" })]));
    siteEdits[q.id] = siteEdits[q.id] || {};
    q.sites.forEach((s, i) => {
      const box = el("input", { type: "checkbox", title: "edit this site" });
      const text = el("textarea", { rows: "2" });
      const recorded = s.decision === "edit";
      text.value = s.edit || s.snippet;
      box.checked = recorded;
      text.hidden = !recorded;
      if (recorded) siteEdits[q.id][i] = text;
      box.addEventListener("change", () => {
        text.hidden = !box.checked;
        if (box.checked) siteEdits[q.id][i] = text; else delete siteEdits[q.id][i];
      });
      list.appendChild(el("tr", {}, [
        el("td", {}, [el("code", { text: s.file + ":" + s.lines[0] })]),
        el("td", { text: prText(s.prs) }),
        el("td", {}, [el("code", { text: s.snippet })]),
        el("td", {}, [box, text]),
      ]));
    });
    return list;
  }

  function updateProgress() {
    const open = doc.questions.filter((q) => q.tier === "Decide" && !choices[q.id].decision).length;
    document.getElementById("open-decide").textContent = String(open);
  }

  function applyFilter() {
    for (const card of document.querySelectorAll(".question")) {
      card.hidden = filter !== "all" && card.dataset.tier !== filter;
    }
    for (const b of document.querySelectorAll("button.filter")) b.classList.toggle("active", b.dataset.tier === filter);
  }

  function exported() {
    const out = JSON.parse(JSON.stringify(doc));
    for (const q of out.questions) {
      const c = choices[q.id];
      q.decision = c.decision;
      q.edit = c.decision === "edit" ? c.edit : null;
      for (const [i, text] of Object.entries(siteEdits[q.id] || {})) {
        q.sites[i].decision = "edit";
        q.sites[i].edit = text.value;
      }
      for (const [i, answer] of Object.entries(siteChoices[q.id] || {})) q.sites[i].decision = answer;
    }
    return JSON.stringify(out, null, 2) + "\n";
  }

  function exportDecisions() {
    const text = exported();
    document.getElementById("export-output").value = text;
    const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    const a = el("a", { href: url, download: "decisions.json" });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  document.getElementById("title").textContent = "Review: slime #" + doc.window.from + "..#" + doc.window.to;
  document.getElementById("window-info").textContent =
    "branch " + doc.window.branch + " · cutoff " + doc.window.cutoff.slice(0, 10) + " · tip " + doc.window.tip.slice(0, 10) +
    " · " + doc.questions.length + " questions";
  const queue = document.getElementById("queue");
  if (doc.questions.length === 0) queue.appendChild(el("p", { text: "No questions: nothing to review." }));
  for (const q of doc.questions) queue.appendChild(renderQuestion(q));
  for (const b of document.querySelectorAll("button.filter")) {
    b.addEventListener("click", () => { filter = b.dataset.tier; applyFilter(); });
  }
  document.getElementById("export").addEventListener("click", exportDecisions);
  updateProgress();
})();

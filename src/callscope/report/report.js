// callscope report: renders the case browser from the JSON data block.
// All model and dataset text is inserted with textContent / createElement only.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("data").textContent);
  var ITEMS = DATA.items;
  var FILTERS = ["model", "mode", "scale", "stage", "kind", "result"];
  var STAGE_ALIAS = { passed: "0", pass: "0", stage1: "1", stage2: "2", stage3: "3" };
  var PAGE = 100;
  var limit = PAGE;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function select(name) { return document.getElementById("filter-" + name); }
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(3);
    return String(x);
  }
  function json(x) { return JSON.stringify(x, null, 2); }

  function fillSelects() {
    var options = {
      model: DATA.models.map(function (m) { return [m, m]; }),
      mode: DATA.modes.map(function (m) { return [m, m]; }),
      scale: DATA.scales.map(function (s) { return [s, s]; }),
      stage: [["0", "passed"], ["1", "stage 1 (registry)"], ["2", "stage 2 (structure)"],
              ["3", "stage 3 (grounding)"], ["error", "model error"]],
      kind: DATA.kinds.map(function (k) { return [k, k]; }),
      result: [["solved", "solved"], ["unsolved", "unsolved"], ["error", "model error"]]
    };
    FILTERS.forEach(function (name) {
      var sel = select(name);
      sel.appendChild(el("option", null, "all")).value = "";
      options[name].forEach(function (pair) {
        var o = el("option", null, pair[1]);
        o.value = pair[0];
        sel.appendChild(o);
      });
      sel.addEventListener("change", writeHash);
    });
  }

  function hasOption(sel, value) {
    for (var i = 0; i < sel.options.length; i++) if (sel.options[i].value === value) return true;
    return false;
  }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    var ignored = [];
    FILTERS.forEach(function (name) {
      var sel = select(name);
      var v = params.get(name);
      if (v === null) { sel.value = ""; return; }
      if (name === "stage" && STAGE_ALIAS.hasOwnProperty(v)) v = STAGE_ALIAS[v];
      if (hasOption(sel, v)) sel.value = v;
      else { sel.value = ""; ignored.push(name + "=" + v); }
    });
    document.getElementById("filter-note").textContent =
      ignored.length ? "ignored unknown filter value(s): " + ignored.join(", ") : "";
  }

  function writeHash() {
    var params = new URLSearchParams();
    FILTERS.forEach(function (name) {
      var v = select(name).value;
      if (v) params.set(name, v);
    });
    var h = params.toString();
    if (("#" + h) === location.hash || (h === "" && location.hash === "")) { limit = PAGE; render(); }
    else location.hash = h;
  }

  function matches(item, f) {
    if (f.model && item.model !== f.model) return false;
    if (f.mode && item.mode !== f.mode) return false;
    if (f.scale && item.scale !== f.scale) return false;
    if (f.stage && item.stage !== f.stage) return false;
    if (f.kind && item.kinds.indexOf(f.kind) < 0) return false;
    if (f.result && item.result !== f.result) return false;
    return true;
  }

  function verdict(row) {
    var ul = el("ul", "verdict");
    var names = ["registry", "structure", "grounding"];
    var details = [
      "FNEM=" + fmt(row.fnem) + "  NCS=" + fmt(row.ncs) + (row.nearest ? "  nearest=" + row.nearest : ""),
      "RPR=" + fmt(row.rpr) + "  PDS=" + fmt(row.pds) + "  SPR=" + fmt(row.spr) +
        (row.missing && row.missing.length ? "  missing=" + row.missing.join(",") : "") +
        (row.drifted && row.drifted.length ? "  drifted=" + row.drifted.join(",") : "") +
        (row.spurious && row.spurious.length ? "  spurious=" + row.spurious.join(",") : ""),
      "AVEM=" + fmt(row.avem) + "  QSLO=" + fmt(row.qslo) + "  VHR=" + fmt(row.vhr) +
        (row.numeric && row.numeric.length ? "  numeric=" + row.numeric.join(",") : "") +
        (row.hard && row.hard.length ? "  hard=" + row.hard.join(",") : "") +
        (row.soft && row.soft.length ? "  soft=" + row.soft.join(",") : "")
    ];
    for (var k = 1; k <= 3; k++) {
      var state = row.stage === 0 || row.stage > k ? "pass" : row.stage === k ? "fail" : "skip";
      var text = "Stage " + k + " " + names[k - 1] + ": " +
        (state === "skip" ? "not reached" : state) + (state === "skip" ? "" : " — " + details[k - 1]);
      ul.appendChild(el("li", state, text));
    }
    return ul;
  }

  function attemptBox(a) {
    var box = el("div", "attempt");
    box.appendChild(el("h4", null, "Attempt " + a.attempt));
    if (a.error) {
      box.appendChild(el("div", "lbl", "Model error (" + (a.error_kind || "error") + ")"));
      box.appendChild(el("pre", null, a.error));
      return box;
    }
    box.appendChild(el("div", "lbl", "Raw output"));
    box.appendChild(el("pre", "raw", a.text));
    if (a.tool_calls) {
      box.appendChild(el("div", "lbl", "Native tool calls"));
      box.appendChild(el("pre", null, json(a.tool_calls)));
    }
    box.appendChild(el("div", "lbl", "Parsed call"));
    box.appendChild(el("pre", null, a.parsed && a.parsed.length ? json(a.parsed[0]) :
      "(nothing parsed" + (a.parse_error ? ": " + a.parse_error : "") + ")"));
    if (a.row) {
      box.appendChild(el("div", "lbl", "Cascade verdict"));
      box.appendChild(verdict(a.row));
      if (a.row.name_match !== undefined && a.row.name_match !== null) {
        box.appendChild(el("div", null, "vs gold: name " + (a.row.name_match ? "✓" : "✗") +
          "  P=" + fmt(a.row.arg_precision) + "  R=" + fmt(a.row.arg_recall) +
          "  F1=" + fmt(a.row.arg_f1)));
      }
    }
    if (a.feedback) {
      box.appendChild(el("div", "lbl", "Correction sent"));
      box.appendChild(el("pre", "feedback", a.feedback));
    }
    return box;
  }

  function card(item) {
    var c = DATA.cases[item.case_id] || {};
    var div = el("div", "case");
    div.setAttribute("data-case", item.case_id);
    var head = el("div", "case-head");
    head.appendChild(el("span", "case-id", item.case_id));
    head.appendChild(el("span", null, item.model));
    head.appendChild(el("span", "badge", item.mode));
    head.appendChild(el("span", "badge", "S=" + item.scale));
    var res = item.result === "solved" ? "solved at attempt " + item.solved_at :
      item.result === "error" ? "model error: " + (item.error_kind || "error") :
      "unsolved after " + item.n_attempts + " attempt(s)";
    head.appendChild(el("span", "badge " + item.result, res));
    head.appendChild(el("span", "badge", "first attempt: " +
      (item.stage === "0" ? "passed" : item.stage === "error" ? "error" : "stage " + item.stage) +
      (item.kinds.length ? " (" + item.kinds.join(", ") + ")" : "")));
    div.appendChild(head);
    div.appendChild(el("p", "query", c.query));
    var reg = el("details");
    reg.appendChild(el("summary", null, "Registry (" + (c.functions || []).length + " functions)"));
    reg.appendChild(el("pre", null, json(c.functions || [])));
    div.appendChild(reg);
    if (c.gold) {
      var gold = el("details");
      gold.appendChild(el("summary", null, "Gold call"));
      gold.appendChild(el("pre", null, json(c.gold)));
      div.appendChild(gold);
    }
    var row = el("div", "attempts");
    item.attempts.forEach(function (a) { row.appendChild(attemptBox(a)); });
    div.appendChild(row);
    return div;
  }

  function render() {
    var f = {};
    FILTERS.forEach(function (name) { f[name] = select(name).value; });
    var shown = ITEMS.filter(function (it) { return matches(it, f); });
    document.getElementById("shown-count").textContent =
      shown.length + " of " + ITEMS.length + " cases shown";
    var list = document.getElementById("case-list");
    while (list.firstChild) list.removeChild(list.firstChild);
    shown.slice(0, limit).forEach(function (it) { list.appendChild(card(it)); });
    var more = document.getElementById("more");
    more.hidden = shown.length <= limit;
    more.textContent = "show more (" + Math.min(limit, shown.length) + " of " + shown.length + " rendered)";
  }

  fillSelects();
  document.getElementById("more").addEventListener("click", function () { limit += PAGE; render(); });
  window.addEventListener("hashchange", function () { readHash(); limit = PAGE; render(); });
  readHash();
  render();
})();

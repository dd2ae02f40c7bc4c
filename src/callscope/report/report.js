// callscope report: renders the SAAG case browser (JSON block #data) and the multi-turn
// conversation browser (JSON block #conv-data); each part runs only when its block exists.
// All model and dataset text is inserted with textContent / createElement only.
// Shared by both browsers: element building and the filter / URL-hash / paging machinery.
var CALLSCOPE = (function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function hasOption(sel, value) {
    for (var i = 0; i < sel.options.length; i++) if (sel.options[i].value === value) return true;
    return false;
  }
  function json(x) { return JSON.stringify(x, null, 2); }

  // cfg: items, filters, options {name: [[value, label]]}, select(name), hashKey(name),
  // normalize(name, value, sel) -> value, matches(item, f), card(item), page, noun,
  // ids {count, list, more, note}
  function browser(cfg) {
    var limit = cfg.page;
    function fillSelects() {
      cfg.filters.forEach(function (name) {
        var sel = cfg.select(name);
        sel.appendChild(el("option", null, "all")).value = "";
        cfg.options[name].forEach(function (pair) {
          var o = el("option", null, pair[1]);
          o.value = pair[0];
          sel.appendChild(o);
        });
        sel.addEventListener("change", writeHash);
      });
    }
    function readHash() {
      var params = new URLSearchParams(location.hash.replace(/^#/, ""));
      var ignored = [];
      cfg.filters.forEach(function (name) {
        var sel = cfg.select(name);
        var v = params.get(cfg.hashKey(name));
        if (v === null) { sel.value = ""; return; }
        v = cfg.normalize(name, v, sel);
        if (hasOption(sel, v)) sel.value = v;
        else { sel.value = ""; ignored.push(cfg.hashKey(name) + "=" + v); }
      });
      document.getElementById(cfg.ids.note).textContent =
        ignored.length ? "ignored unknown filter value(s): " + ignored.join(", ") : "";
    }
    function writeHash() {
      // keep the other browser's parameters in the hash
      var params = new URLSearchParams(location.hash.replace(/^#/, ""));
      cfg.filters.forEach(function (name) {
        var v = cfg.select(name).value;
        if (v) params.set(cfg.hashKey(name), v); else params.delete(cfg.hashKey(name));
      });
      var h = params.toString();
      if (("#" + h) === location.hash || (h === "" && location.hash === "")) { limit = cfg.page; render(); }
      else location.hash = h;
    }
    function render() {
      var f = {};
      cfg.filters.forEach(function (name) { f[name] = cfg.select(name).value; });
      var shown = cfg.items.filter(function (it) { return cfg.matches(it, f); });
      document.getElementById(cfg.ids.count).textContent =
        shown.length + " of " + cfg.items.length + " " + cfg.noun + " shown";
      var list = document.getElementById(cfg.ids.list);
      while (list.firstChild) list.removeChild(list.firstChild);
      shown.slice(0, limit).forEach(function (it) { list.appendChild(cfg.card(it)); });
      var more = document.getElementById(cfg.ids.more);
      more.hidden = shown.length <= limit;
      more.textContent = "show more (" + Math.min(limit, shown.length) + " of " + shown.length + " rendered)";
    }
    fillSelects();
    document.getElementById(cfg.ids.more).addEventListener("click", function () { limit += cfg.page; render(); });
    window.addEventListener("hashchange", function () { readHash(); limit = cfg.page; render(); });
    readHash();
    render();
  }
  // the page's JSON block with this id, or null when the page has none
  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  return { el: el, hasOption: hasOption, json: json, browser: browser, data: data };
})();

(function () {
  "use strict";
  var DATA = CALLSCOPE.data("data");
  if (!DATA) return;
  var ITEMS = DATA.items;
  var FILTERS = ["model", "mode", "scale", "stage", "kind", "result"];
  // the kind table and the stage vocabulary the page was given (records.FailureKind,
  // records.STAGES): nothing here re-types a kind's or a stage's name
  var KINDS = DATA.kinds || [];
  var CASCADE = DATA.cascade || [];
  var STAGE_ALIAS = { pass: "0" };
  CASCADE.forEach(function (s) { STAGE_ALIAS[s.segment] = String(s.number); });
  var el = CALLSCOPE.el, json = CALLSCOPE.json;
  function select(name) { return document.getElementById("filter-" + name); }
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(3);
    return String(x);
  }

  var OPTIONS = {
    model: DATA.models.map(function (m) { return [m, m]; }),
    mode: DATA.modes.map(function (m) { return [m, m]; }),
    scale: DATA.scales.map(function (s) { return [s, s]; }),
    stage: (DATA.stages || []).concat([["error", "model error"]]),
    kind: KINDS.map(function (k) { return [k.name, k.name]; }),
    result: [["solved", "solved"], ["unsolved", "unsolved"], ["error", "model error"]]
  };

  function matches(item, f) {
    if (f.model && item.model !== f.model) return false;
    if (f.mode && item.mode !== f.mode) return false;
    if (f.scale && item.scale !== f.scale) return false;
    if (f.stage && item.stage !== f.stage) return false;
    if (f.kind && item.kinds.indexOf(f.kind) < 0) return false;
    if (f.result && item.result !== f.result) return false;
    return true;
  }

  // the intrinsic metrics of each cascade stage, from the metric specs (DATA.metrics)
  var STAGE_METRICS = [1, 2, 3].map(function (k) {
    return (DATA.metrics || []).filter(function (m) {
      return m.kind === "intrinsic" && m.stage === k;
    });
  });
  function stageValues(row, k) {
    return STAGE_METRICS[k - 1].map(function (m) {
      return m.short + "=" + fmt(row[m.row_key]);
    }).join("  ");
  }

  function verdict(row) {
    var ul = el("ul", "verdict");
    var names = CASCADE.filter(function (s) { return s.number > 0; })
      .map(function (s) { return s.key; });
    // each kind's flagged parameters, from the kind table (a kind of stage k lists them)
    function flagged(k) {
      return KINDS.filter(function (kind) { return kind.stage === k; }).map(function (kind) {
        var list = row[kind.name];
        return list && list.length ? "  " + kind.name + "=" + list.join(",") : "";
      }).join("");
    }
    var details = [
      stageValues(row, 1) + (row.nearest ? "  nearest=" + row.nearest : ""),
      stageValues(row, 2) + flagged(2),
      stageValues(row, 3) + flagged(3) +
        (row.evidence ? Object.keys(row.evidence).map(function (p) {
          return "  " + p + ": " + row.evidence[p];
        }).join("") : "")
    ];
    for (var k = 1; k <= names.length; k++) {
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

  CALLSCOPE.browser({
    items: ITEMS, filters: FILTERS, options: OPTIONS, select: select,
    hashKey: function (name) { return name; },
    normalize: function (name, v) {
      return name === "stage" && STAGE_ALIAS.hasOwnProperty(v) ? STAGE_ALIAS[v] : v;
    },
    matches: matches, card: card, page: 100, noun: "cases",
    ids: { count: "shown-count", list: "case-list", more: "more", note: "filter-note" }
  });
})();

// The conversation browser of multi-turn calibration runs.
(function () {
  "use strict";
  var DATA = CALLSCOPE.data("conv-data");
  if (!DATA) return;
  var ITEMS = DATA.conversations;
  var FILTERS = ["model", "probe", "category", "verdict", "gold"];
  var ALIAS = { verdict: { passed: "pass", failed: "fail" }, gold: { true: "yes", false: "no" } };
  var el = CALLSCOPE.el, json = CALLSCOPE.json, hasOption = CALLSCOPE.hasOption;
  function select(name) { return document.getElementById("conv-filter-" + name); }
  function short(cat) { return String(cat).replace(/^multi_turn_/, ""); }

  var OPTIONS = {
    model: DATA.models.map(function (m) { return [m, m]; }),
    probe: DATA.probes.map(function (p) { return [p, p]; }),
    category: DATA.categories.map(function (c) { return [c, short(c)]; }),
    verdict: [["pass", "pass"], ["fail", "fail"]],
    gold: [["yes", "yes"], ["no", "no"]]
  };

  function matches(item, f) {
    if (f.model && item.model !== f.model) return false;
    if (f.probe && item.probe !== f.probe) return false;
    if (f.category && item.category !== f.category) return false;
    if (f.verdict && item.verdict !== f.verdict) return false;
    if (f.gold === "yes" && item.gold_emitted !== true) return false;
    if (f.gold === "no" && item.gold_emitted !== false) return false;
    return true;
  }

  function classBadge(step) {
    if (step.placeholder) return el("span", "badge cls cls-placeholder", "placeholder (probe)");
    return el("span", "badge cls cls-" + step["class"], step["class"]);
  }

  function resultItem(r) {
    var li = el("li", "result " + (r.accepted ? "accepted" : "rejected"));
    var head = r.accepted ? "✓ " + (r.call || r.name) :
      "✗ rejected " + r.name + " " + json(r.arguments || {}) + " (" + (r.reason || "rejected") + ")";
    li.appendChild(el("div", "result-head", head));
    if (r.output) li.appendChild(el("pre", "output", r.output));
    return li;
  }

  function stepBox(step) {
    var box = el("div", "step" + (step.retracted ? " retracted" : "") +
      (step.placeholder ? " placeholder" : "") + (step.rejected ? " has-rejected" : ""));
    var head = el("div", "step-head");
    head.appendChild(el("span", "step-no", "step " + step.index));
    head.appendChild(classBadge(step));
    if (step.retracted) head.appendChild(el("span", "badge retracted", "retracted by probe"));
    if (step.rejected) head.appendChild(el("span", "badge rejected", step.rejected + " rejected"));
    box.appendChild(head);
    if (step.text) box.appendChild(el("pre", "raw", step.text));
    if (step.tool_calls) {
      var native = el("details");
      native.appendChild(el("summary", null, "Native tool calls (" + step.tool_calls.length + ")"));
      native.appendChild(el("pre", null, json(step.tool_calls)));
      box.appendChild(native);
    }
    if (step.calls && step.calls.length) {
      box.appendChild(el("div", "lbl", "Parsed calls"));
      box.appendChild(el("pre", "calls", step.calls.map(function (c) {
        return c.name + " " + JSON.stringify(c.arguments || {});
      }).join("\n")));
    } else if (!step.placeholder && step.parse_error) {
      box.appendChild(el("div", "lbl muted", "no call parsed: " + step.parse_error));
    }
    if (step.results && step.results.length) {
      box.appendChild(el("div", "lbl", "Execution"));
      var ul = el("ul", "results");
      step.results.forEach(function (r) { ul.appendChild(resultItem(r)); });
      box.appendChild(ul);
    }
    return box;
  }

  function eventList(events) {
    var ul = el("ul", "events");
    events.forEach(function (e) {
      var text = "probe " + (e.probe || "") + " at step " + e.step + ": " + (e.seam || "") +
        " seam " + e.decision + " (" + e.reason + (e.detector ? ", " + e.detector : "") + ")";
      var li = el("li", "event " + (e.decision === "fired" ? "fired" : "suppressed"), text);
      var d = el("details");
      d.appendChild(el("summary", null, "details"));
      d.appendChild(el("pre", null, json(e)));
      li.appendChild(d);
      ul.appendChild(li);
    });
    return ul;
  }

  function turnBox(turn) {
    var box = el("div", "turn st-" + (turn.status || "none"));
    var head = el("div", "turn-head");
    head.appendChild(el("span", "turn-no", "Turn " + turn.index));
    head.appendChild(el("span", "badge st " + (turn.status || "none"),
      "grader: " + (turn.status || "not graded")));
    if (turn.due) head.appendChild(el("span", "badge due", "gold class due"));
    if (turn.gold_calls !== null && turn.gold_calls !== undefined) {
      head.appendChild(el("span", null, "gold calls " + turn.gold_calls + ", accepted model calls " +
        turn.model_calls));
    }
    if (!turn.reached) head.appendChild(el("span", "badge", "not reached"));
    if (turn.partial) head.appendChild(el("span", "badge", "cut by a model error"));
    box.appendChild(head);
    if (turn.added_functions && turn.added_functions.length) {
      box.appendChild(el("div", "added", "tools added at this turn: " + turn.added_functions.join(", ")));
    }
    turn.user_messages.forEach(function (m) {
      var c = m.content;
      box.appendChild(el("pre", "user", (m.role || "user") + ": " +
        (typeof c === "string" ? c : json(c))));
    });
    if (turn.events && turn.events.length) box.appendChild(eventList(turn.events));
    var steps = el("div", "steps");
    turn.steps.forEach(function (s) { steps.appendChild(stepBox(s)); });
    box.appendChild(steps);
    return box;
  }

  function card(item) {
    var div = el("div", "conv");
    div.setAttribute("data-case", item.case_id);
    var head = el("div", "case-head");
    head.appendChild(el("span", "case-id", item.case_id));
    head.appendChild(el("span", null, item.model));
    head.appendChild(el("span", "badge", item.probe));
    head.appendChild(el("span", "badge", short(item.category)));
    head.appendChild(el("span", "badge " + (item.passed ? "solved" : "unsolved"),
      item.passed ? "PASS" : "FAIL" + (item.failed_turn !== null && item.failed_turn !== undefined ?
        " at turn " + item.failed_turn : "")));
    var g = item.gold_emitted === true ? "yes" : item.gold_emitted === false ? "no" : "unknown";
    head.appendChild(el("span", "badge gold-" + g, "gold " + (item.gold_class || "?") + " emitted: " + g));
    if (item.n_fired) head.appendChild(el("span", "badge fired", "probe fired " + item.n_fired + "×"));
    if (item.n_rejected) head.appendChild(el("span", "badge rejected", item.n_rejected + " rejected call(s)"));
    if (item.force_quit) head.appendChild(el("span", "badge", "force-quit (step limit)"));
    div.appendChild(head);
    var counts = DATA.classes.filter(function (c) { return item.class_counts[c]; })
      .map(function (c) { return c + " " + item.class_counts[c]; });
    div.appendChild(el("div", "summary-line", "verdict: " + (item.reason || "") +
      (item.error_type ? " [" + item.error_type + "]" : "") + " · due turns: " +
      (item.due_turns.length ? item.due_turns.join(", ") : "none") + " · emissions: " +
      (counts.length ? counts.join(", ") : "none")));
    if (item.error) div.appendChild(el("pre", "error", "model error: " + json(item.error)));
    var det = el("details", "turns");
    det.appendChild(el("summary", null, item.turns.length + " turn(s), " + item.n_steps + " step(s)"));
    item.turns.forEach(function (t) { det.appendChild(turnBox(t)); });
    if (item.other_events && item.other_events.length) det.appendChild(eventList(item.other_events));
    div.appendChild(det);
    return div;
  }

  CALLSCOPE.browser({
    items: ITEMS, filters: FILTERS, options: OPTIONS, select: select,
    hashKey: function (name) { return "conv-" + name; },
    normalize: function (name, v, sel) {
      if (ALIAS[name] && ALIAS[name].hasOwnProperty(v)) v = ALIAS[name][v];
      if (name === "category" && !hasOption(sel, v) && hasOption(sel, "multi_turn_" + v)) {
        v = "multi_turn_" + v;
      }
      return v;
    },
    matches: matches, card: card, page: 50, noun: "conversations",
    ids: { count: "conv-shown-count", list: "conv-list", more: "conv-more", note: "conv-filter-note" }
  });
})();

// A page opened at a section (report.html#cases, #table-revisions): the browser scrolled there
// while the page was still being built (the case list empty, the figures not decoded), which
// left the window past the content, blank (issue 32). Scroll again once everything is laid out.
window.addEventListener("load", function () {
  var id = decodeURIComponent(location.hash.replace(/^#/, ""));
  var target = id && /^[\w-]+$/.test(id) ? document.getElementById(id) : null;
  if (target) target.scrollIntoView();
});

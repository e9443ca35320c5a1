// The My stack page (templates/pages/stack.html, kb/site/stack.py): the stack a reader gives (a GPU
// or architecture, the versions they run) as facts, and every cell of stack/stack.json decided by
// kbVerdict.stack (kb-verdict.js, the twin of kb.records.verdict.on_stack), applies first. The
// choices live in the address (?gpu=rtx-5090&vllm=0.28.0): written on submit with
// history.replaceState, read back on load. The address is anyone's to write: every value from it
// (and from the data) is written as text, never as markup, and only values the form offers are used.
(function () {
  "use strict";

  var form = document.getElementById("kb-stack");
  if (!form || !window.kbVerdict) return;
  var gpu = document.getElementById("kb-stack-gpu");
  var problems = document.querySelector(".kb-stack__problems");
  var status = document.querySelector(".kb-stack__status");
  var results = document.querySelector(".kb-stack__results");
  var more = form.querySelector(".kb-stack__more");
  var dataUrl = new URL(form.getAttribute("data-cells"), document.baseURI).href;
  var inputs = Array.prototype.slice.call(form.querySelectorAll("input[name]"));
  var byName = {};
  inputs.forEach(function (input) { byName[input.name] = input; });
  var MAX = 60;  // characters of a version (the fields' maxlength)
  var data = null;

  function has(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }

  function load() {
    if (!data) {
      data = fetch(dataUrl).then(function (r) {
        if (!r.ok) throw new Error("stack.json: HTTP " + r.status);
        return r.json();
      });
    }
    return data;
  }

  function quoted(text) {
    return "\u201c" + (text.length > 80 ? text.slice(0, 80) + "\u2026" : text) + "\u201d";
  }

  function labelOf(name) {
    var label = form.querySelector('label[for="kb-stack-' + name.replace(/["\\]/g, "") + '"]');
    return label ? label.textContent : name;
  }

  function option(value) {
    for (var i = 0; i < gpu.options.length; i++) {
      if (gpu.options[i].value && gpu.options[i].value === value) return gpu.options[i];
    }
    return null;
  }

  // The choices a query string holds: the GPU option, the versions that can be compared, what was
  // refused and why, the text of each field as given, and the first field given empty (to focus).
  function read(search) {
    var out = { gpu: null, packages: {}, values: {}, problems: [], focus: null, invalid: {} };
    var seen = {};
    new URLSearchParams(search).forEach(function (value, key) {
      if (has(seen, key)) { out.problems.push(quoted(key) + " is given more than once: the first is used."); return; }
      seen[key] = true;
      if (key === "gpu") {
        if (!value) return;
        out.gpu = option(value);
        if (!out.gpu) out.problems.push("No GPU or architecture on this page is called " + quoted(value) + ": pick one from the list.");
        return;
      }
      if (!has(byName, key)) { out.problems.push("The address names " + quoted(key) + ", which is no field of this page: ignored."); return; }
      var version = value.trim();
      out.values[key] = value.slice(0, MAX);
      if (!version) { if (!out.focus) out.focus = byName[key]; return; }
      if (version.length > MAX || !kbVerdict.version(version)) {
        out.invalid[key] = true;
        out.problems.push(labelOf(key) + ": " + quoted(version) + " is not a version this page can compare " +
                          "(PEP 440, the form pip shows, such as 1.2.3 or 1.2.3rc1): ignored.");
        return;
      }
      out.packages[key] = version;
    });
    return out;
  }

  function query() {
    var params = new URLSearchParams();
    if (gpu.value) params.append("gpu", gpu.value);
    inputs.forEach(function (input) { if (input.value.trim()) params.append(input.name, input.value.trim()); });
    return params.toString();
  }

  function restore(choices) {
    gpu.value = choices.gpu ? choices.gpu.value : "";
    inputs.forEach(function (input) {
      input.value = has(choices.values, input.name) ? choices.values[input.name] : "";
      if (choices.invalid[input.name]) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      if (more && more.contains(input) && (input.value || input === choices.focus)) more.open = true;
    });
    if (choices.focus) choices.focus.focus();
  }

  function facts(choices) {
    var g = choices.gpu;
    return { gpus: g ? [{ name: g.getAttribute("data-name") || null, compute_capability: g.getAttribute("data-capability") }] : null,
             packages: choices.packages, lines: {} };
  }

  function text(tag, className, content) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function item(hit, d) {
    var cell = hit.cell;
    var li = text("li");
    li.setAttribute("data-cell", cell.id);
    var a = text("a", "kb-stack__link", cell.title);
    a.href = new URL(cell.url, new URL("..", dataUrl)).pathname;
    li.appendChild(a);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(text("span", "kb-status kb-status--" + cell.status.replace(/[^a-z-]/g, ""), cell.status_name));
    // Why the badge is not what the fixes suggest (kb.records.state): below the badge, not in it.
    if (cell.status_reason) li.appendChild(text("p", "kb-status-reason", cell.status_reason));
    var verdict = text("p", "kb-stack__verdict kb-stack__verdict--" + hit.verdict);
    verdict.appendChild(text("strong", "", d.verdicts[hit.verdict]));
    verdict.appendChild(document.createTextNode(": " + hit.why));
    li.appendChild(verdict);
    if (hit.verdict === "applies" || hit.verdict === "when" || hit.verdict === "unknown") {
      var now = cell.do_now, line = text("p", "kb-stack__do");
      line.appendChild(text("strong", "", "Do now: "));
      if (now.label) line.appendChild(document.createTextNode(now.label + ": "));
      line.appendChild(text(now.code ? "code" : "span", "", now.what));
      if (now.versions) line.appendChild(document.createTextNode(" (" + now.versions + ")"));
      li.appendChild(line);
    }
    return li;
  }

  function described(choices) {
    var parts = choices.gpu ? [choices.gpu.textContent.trim()] : [];
    inputs.forEach(function (input) {
      if (has(choices.packages, input.name)) parts.push(labelOf(input.name) + " " + choices.packages[input.name]);
    });
    return parts.join(", ");
  }

  function show(choices) {
    problems.textContent = "";
    choices.problems.forEach(function (p) { problems.appendChild(text("li", "", p)); });
    results.textContent = "";
    form.removeAttribute("data-results");
    if (!choices.gpu && !Object.keys(choices.packages).length) {
      status.textContent = "Pick a GPU or give a version to see the verdicts.";
      return;
    }
    status.textContent = "Deciding\u2026";
    load().then(function (d) {
      var stackFacts = facts(choices);
      var order = d.verdict.stack_order;
      var hits = kbVerdict.rank(d.verdict, d.cells.map(function (cell) {
        var decided = kbVerdict.stack(d.verdict, cell.scope, stackFacts);
        return { cell: cell, entry: cell.id, verdict: decided[0], why: decided[1], specific: true, score: 0 };
      }), order);
      var counts = [];
      order.forEach(function (v) {
        var group = hits.filter(function (h) { return h.verdict === v; });
        if (!group.length) return;
        counts.push(d.verdicts[v] + ": " + group.length);
        // Ruled out is the long tail a reader rarely needs: folded, its count in the summary.
        var section = text(v === "ruled-out" ? "details" : "section", "kb-stack__group kb-stack__group--" + v);
        var heading = text("h2", "", d.verdicts[v] + " (" + group.length + ")");
        if (v === "ruled-out") {
          var summary = text("summary");
          summary.appendChild(heading);
          section.appendChild(summary);
        } else {
          section.appendChild(heading);
        }
        var list = text("ol", "kb-stack__list");
        group.forEach(function (h) { list.appendChild(item(h, d)); });
        section.appendChild(list);
        results.appendChild(section);
      });
      status.textContent = "For " + described(choices) + ": " + counts.join("; ") + ".";
      form.setAttribute("data-results", JSON.stringify(hits.map(function (h) {
        return { entry: h.entry, verdict: h.verdict, why: h.why };
      })));
    }).catch(function (error) {
      status.textContent = "The verdicts are unavailable: " + error;
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var q = query();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
    var choices = read(q);
    restore(choices);
    show(choices);
  });

  if (location.search.length > 1) {
    var choices = read(location.search);
    restore(choices);
    show(choices);
  }
})();

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
    var out = { gpu: null, other: null, packages: {}, values: {}, problems: [], focus: null, invalid: {} };
    var seen = {};
    new URLSearchParams(search).forEach(function (value, key) {
      if (has(seen, key)) { out.problems.push(quoted(key) + " is given more than once: the first is used."); return; }
      seen[key] = true;
      if (key === "gpu") {
        if (!value) return;
        out.gpu = option(value);
        // A value the menu lacks may still name a GPU the GPU table knows (`rtx-4080`): `show`
        // reads it against the table once stack.json is in.
        if (!out.gpu) out.other = value;
        return;
      }
      if (!has(byName, key)) { out.problems.push("The address names " + quoted(key) + ", which is no field of this page: ignored."); return; }
      var version = value.trim();
      out.values[key] = value.slice(0, MAX);
      if (!version) { if (!out.focus) out.focus = byName[key]; return; }
      if (version.length > MAX || !kbVerdict.version(version)) {
        out.invalid[key] = true;
        out.problems.push(labelOf(key) + ": " + quoted(version) + " is not a version this page can compare: " +
                          "give the version pip shows, such as 0.28.0, v0.28.0 or 0.28.0rc1; for a nightly or a " +
                          "build from main, its development version (0.8.3.dev358+g24bc0a9f7) or the last " +
                          "release it came after. Ignored.");
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

  // The GPU a value the menu lacks names, by the GPU table (stack.json `models`, kb.records.gpus):
  // "rtx-4080" is read as "rtx 4080"; null when no model matches.
  function modelGpu(d, value) {
    var name = value.replace(/[-_]+/g, " ").trim().toUpperCase().slice(0, 40);
    for (var i = 0; i < d.models.length; i++) {
      if (new RegExp(d.models[i].pattern, "i").test(name)) return { name: name, compute_capability: d.models[i].capability };
    }
    return null;
  }

  // The facts decided on: the GPU chosen (or read from the address), and each version given, also
  // for the packages its field stands for (data-also: CUDA is the runtime's and the toolkit's).
  function facts(choices, other) {
    var g = choices.gpu, packages = {};
    Object.keys(choices.packages).forEach(function (name) {
      packages[name] = choices.packages[name];
      (byName[name].getAttribute("data-also") || "").split(" ").forEach(function (p) { if (p) packages[p] = choices.packages[name]; });
    });
    return { gpus: g ? [{ name: g.getAttribute("data-name") || null, compute_capability: g.getAttribute("data-capability") }]
                     : other ? [other] : null,
             packages: packages, lines: {} };
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

  function described(choices, other) {
    var parts = choices.gpu ? [choices.gpu.textContent.trim()] : other ? [other.name] : [];
    inputs.forEach(function (input) {
      if (has(choices.packages, input.name)) parts.push(labelOf(input.name) + " " + choices.packages[input.name]);
    });
    return parts.join(", ");
  }

  function sentence(words) { return words.charAt(0).toUpperCase() + words.slice(1) + "."; }

  // `scroll`: a shared link opens on its results, not on the form above them.
  function show(choices, scroll) {
    problems.textContent = "";
    choices.problems.forEach(function (p) { problems.appendChild(text("li", "", p)); });
    results.textContent = "";
    form.removeAttribute("data-results");
    if (!choices.gpu && !choices.other && !Object.keys(choices.packages).length) {
      status.textContent = "Pick a GPU or give a version to see the verdicts.";
      return;
    }
    status.textContent = "Deciding\u2026";
    load().then(function (d) {
      var other = choices.other ? modelGpu(d, choices.other) : null;
      if (choices.other && !other) {
        problems.appendChild(text("li", "", "No GPU or architecture on this page is called " + quoted(choices.other) +
                                            ": pick one from the list."));
      }
      var stackFacts = facts(choices, other);
      // A GPU of another architecture: said first, above its (all ruled out) results.
      var outside = kbVerdict.outOfScope(d.verdict, stackFacts.gpus);
      if (outside) problems.insertBefore(text("li", "kb-stack__scope", sentence(outside)), problems.firstChild);
      if (!stackFacts.gpus && !Object.keys(stackFacts.packages).length) {
        status.textContent = "Pick a GPU or give a version to see the verdicts.";
        return;
      }
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
      status.textContent = "For " + described(choices, other) + ": " + counts.join("; ") + ".";
      form.setAttribute("data-results", JSON.stringify(hits.map(function (h) {
        return { entry: h.entry, verdict: h.verdict, why: h.why };
      })));
      if (scroll) (problems.firstChild ? problems : status).scrollIntoView({ block: "start" });
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
    show(choices, true);
  }
})();

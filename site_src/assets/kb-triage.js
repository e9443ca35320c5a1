// Log triage in the browser: the same rules as `kb match` (exported to triage/patterns.json),
// applied line by line. Candidate lines are those containing a rule's anchor word; they are
// normalised with the shared rules (kb-normalise.js, which the search box runs too), then tested
// against the compiled signature patterns.
(function () {
  "use strict";

  // Facts from the log (kb/triage/logfacts.py): the same table of rules, exported in patterns.json
  // as `logfacts`, run on each raw line; tests/vectors/logfacts.json holds the vectors both pass.
  function logFacts(d, text) {
    var rules = d.rules.map(function (r) { return { fact: r.fact, regex: new RegExp(r.pattern, "gi") }; });
    var ignore = new RegExp(d.ignore, "i");
    var models = d.models.map(function (m) { return [new RegExp(m.pattern, "i"), m.capability]; });
    var out = { gpus: null, driver_version: null, cuda_driver_version: null, cuda_runtime_version: null,
                packages: {}, lines: {} };
    var strong = [], weak = [];
    function archCapability(digits) {
      if (digits.length === 2) return digits[0] + "." + digits[1];
      return digits[0] === "1" ? digits.slice(0, 2) + "." + digits[2] : digits[0] + "." + digits[1];
    }
    function model(name) {
      for (var i = 0; i < models.length; i++) if (models[i][0].test(name)) return models[i][1];
      return null;
    }
    var keys = { "driver": "driver_version", "cuda-driver": "cuda_driver_version",
                 "cuda-runtime": "cuda_runtime_version", "cuda-toolkit": "packages.cuda-toolkit" };
    text.split("\n").forEach(function (raw, i) {
      var line = raw.slice(0, d.line_limit), number = i + 1, m;
      rules.forEach(function (rule) {
        rule.regex.lastIndex = 0;
        if (rule.fact === "arch") {
          var found = [];
          while ((m = rule.regex.exec(line)) !== null) found.push(m[1]);
          var distinct = found.filter(function (x, k) { return found.indexOf(x) === k; });
          if (found.length && distinct.length <= d.max_listed && !ignore.test(line)) {
            distinct.forEach(function (digits) { weak.push({ name: null, compute_capability: archCapability(digits), line: number }); });
          }
          return;
        }
        while ((m = rule.regex.exec(line)) !== null) {
          if (m[0] === "") { rule.regex.lastIndex++; continue; }
          if (rule.fact === "gpu") {
            var name = m[0].replace(/\s+/g, " ").trim(), cc = model(name);
            if (cc) strong.push({ name: name, compute_capability: cc, line: number });
          } else if (rule.fact === "capability") {
            strong.push({ name: null, compute_capability: parseInt(m[1], 10) + "." + m[2], line: number });
          } else if (rule.fact.indexOf("package") === 0) {
            var pkg = rule.fact.split(":")[1] || m[1].toLowerCase();
            pkg = Object.prototype.hasOwnProperty.call(d.packages, pkg) ? d.packages[pkg] : pkg;
            if (!Object.prototype.hasOwnProperty.call(out.packages, pkg)) {
              out.packages[pkg] = m[m.length - 1];
              out.lines["packages." + pkg] = number;
            }
          } else {
            var key = keys[rule.fact];
            if (key in out.lines) continue;
            out.lines[key] = number;
            if (key.indexOf("packages.") === 0) { out.packages["cuda-toolkit"] = m[1]; continue; }
            out[key] = m[1];
            if (key === "cuda_runtime_version" && !("cuda" in out.packages)) out.packages.cuda = m[1];
          }
        }
      });
    });
    var gpus = strong.length ? strong : weak;
    if (gpus.length) {
      var seen = {}, order = [], named = {};
      function arch(g) { var p = g.compute_capability.split("."); return "sm_" + parseInt(p[0], 10) + parseInt(p[1], 10); }
      gpus.forEach(function (g) {
        var k = JSON.stringify([g.name, arch(g)]);
        if (!(k in seen)) { seen[k] = g; order.push(g); if (g.name) named[arch(g)] = true; }
      });
      out.gpus = order.filter(function (g) { return g.name || !named[arch(g)]; });
      out.gpus.forEach(function (g, k) { out.lines["gpus." + k] = g.line; });
    }
    return out;
  }
  window.kbLogFacts = { read: logFacts };
  // Each matched cell's verdict is kbVerdict's (kb-verdict.js, which the My stack page runs too).

  var form = document.getElementById("kb-triage");
  if (!form) return;
  var log = document.getElementById("kb-triage-log");
  var file = document.getElementById("kb-triage-file");
  var status = form.querySelector(".kb-triage__status");
  var list = form.querySelector(".kb-triage__results");
  var fresh = form.querySelector(".kb-triage__new");
  var issue = document.getElementById("kb-triage-issue");
  var titleBox = document.getElementById("kb-triage-title");
  var heading = document.getElementById("kb-triage-results");
  var copy = document.getElementById("kb-triage-copy");
  var copied = form.querySelector(".kb-triage__copied");
  var sample = document.getElementById("kb-triage-sample");
  var sampleSource = form.querySelector(".kb-triage__sample-source");
  var searchButton = document.getElementById("kb-triage-search");
  var patternsUrl = new URL(form.getAttribute("data-patterns"), document.baseURI).href;
  var engine = null, engineNow = null;
  var open = document.getElementById("kb-triage-open");

  function load() {
    if (!engine) {
      engine = fetch(patternsUrl).then(function (r) {
        if (!r.ok) throw new Error("patterns.json: HTTP " + r.status);
        return r.json();
      }).then(function (data) {
        var normalise = kbNormalise.compile(data.normalise);
        var byAnchor = {};
        data.rules.forEach(function (rule, key) {
          rule.key = key;
          rule.regex = new RegExp(rule.source);
          (byAnchor[rule.anchor] = byAnchor[rule.anchor] || []).push(rule);
        });
        var anchors = Object.keys(byAnchor).sort();
        (data.evidence || []).forEach(function (rule) {
          rule.regexes = rule.numbers.map(function (source) { return new RegExp(source); });
        });
        var w = data.wrapped;
        var wrap = { lines: w.lines, long: w.long, fence: w.fence, ansi: new RegExp(w.ansi, "g"),
                     prefixes: w.prefixes.map(function (source) { return new RegExp(source); }) };
        return { normalise: normalise, byAnchor: byAnchor, anchors: anchors, window: data.window, wrap: wrap,
                 passes: data.passes, request: compileRequest(data.request), evidence: data.evidence || [],
                 cells: data.cells, logfacts: data.logfacts, verdicts: data.verdicts, results: data.results || {} };
      });
    }
    return engine;
  }

  function normalise(e, line) {
    return kbNormalise.normalise(e.normalise, e.passes, line);  // shared with the search box
  }

  // Messages wrapped over two or three lines (kb/triage/wrapped.py, whose docstring gives the rules
  // 1-5 applied here in the same order; patterns.json `wrapped` holds its data).
  function asciiLower(text) { return text.replace(/[A-Z]+/g, function (s) { return s.toLowerCase(); }); }

  function splitLine(w, line) {  // [quote markers, log prefix, body], as wrapped.split
    var text = line.toLowerCase().replace(w.ansi, "");
    var found = w.prefixes[0].exec(text);
    var quote = found ? found[0].replace(/[ \t]+/g, "") : "";
    if (found) text = text.slice(found[0].length);
    var rest = text;
    for (;;) {
      var before = rest;
      w.prefixes.forEach(function (rule) {
        var m = rule.exec(rest);
        if (m) rest = rest.slice(m[0].length);
      });
      rest = rest.replace(/^[ \t]+/, "");
      if (rest === before) break;
    }
    return [quote, text.slice(0, text.length - rest.length).replace(/[ \t]+/g, ""), rest.replace(/[ \t]+$/, "")];
  }

  function broken(word, lines) {  // broken over two consecutive lines, as wrapped._broken
    for (var k = 0; k + 1 < lines.length; k++) {
      var first = lines[k].replace(/[ \t]+$/, "");
      for (var m = 1; m < word.length; m++) {
        if (first.slice(-m) === word.slice(0, m) && first.length >= m && lines[k + 1].indexOf(word.slice(m)) >= 0) return true;
      }
    }
    return false;
  }

  function inText(e, found, rule) {  // wrapped._in_text
    if (found === null || /[0-9]/.test(found[0])) return true;
    if (rule.forms === undefined) rule.forms = [rule.signature.toLowerCase(), normalise(e, rule.signature)];
    return rule.forms.some(function (form) { return form.indexOf(found[0]) >= 0; });
  }

  function edge(word, pair, line) {  // in the line, or broken over the pair (wrapped._edge)
    return line.indexOf(word) >= 0 || broken(word, pair);
  }

  function joins(bodies) {
    var out = [bodies[0]];
    bodies.slice(1).forEach(function (body) {
      var next = [];
      out.forEach(function (t) { next.push(t + body, t + " " + body); });
      out = next;
    });
    return out;
  }

  function Wrapped(e, texts) {
    var ascii = {}, parts = {}, normal = {}, shown = {}, w = e.wrap;
    function asc(i) { if (!(i in ascii)) ascii[i] = asciiLower(texts[i]); return ascii[i]; }
    function part(i) { if (!(i in parts)) parts[i] = splitLine(w, texts[i]); return parts[i]; }
    function shows(rule, a, b) {
      var key = rule.key + ":" + a + ":" + b;
      if (!(key in shown)) shown[key] = decide(rule, a, b);
      return shown[key];
    }
    function alone(rule, i) {  // the line shows the rule on its own (lines of at most `long` characters)
      var lower = texts[i].toLowerCase();
      return asc(i).indexOf(rule.anchor) >= 0 && rule.words.every(function (word) { return lower.indexOf(word) >= 0; }) &&
        rule.regex.test(normalise(e, texts[i]));
    }
    function decide(rule, a, b) {
      if (a < 0 || b >= texts.length) return false;
      var span = [];
      for (var i = a; i <= b; i++) span.push(i);
      if (span.some(function (k) { return texts[k].length > w.long; })) return false;
      var lowered = span.map(asc), n = lowered.length;
      if (!lowered.slice(0, -1).every(function (l) { return inText(e, /[a-z0-9_]+(?=[^a-z0-9_]*$)/.exec(l), rule); })) return false;
      if (rule.edges.length && !(edge(rule.edges[0], [lowered[0], lowered[1]], lowered[0]) &&
                                 edge(rule.edges[rule.edges.length - 1], [lowered[n - 2], lowered[n - 1]], lowered[n - 1]))) return false;
      if (!rule.options.every(function (word) { return lowered.some(function (l) { return l.indexOf(word) >= 0; }); })) return false;
      if (lowered.some(function (l) { return rule.words.every(function (word) { return l.indexOf(word) >= 0; }); })) return false;
      if (!rule.words.every(function (word) {
        return lowered.some(function (l) { return l.indexOf(word) >= 0; }) || broken(word, lowered);
      })) return false;
      if (span.some(function (k) { return alone(rule, k); })) return false;
      var p = span.map(part);
      if (p.some(function (x) { return !x[2] || x[2].indexOf(w.fence) === 0; })) return false;
      if (p.slice(1).some(function (x) { return x[0] !== p[0][0] || (x[1] !== "" && x[1] !== p[0][1]); })) return false;
      if (!p.slice(1).every(function (x) { return inText(e, /[a-z0-9_]+/.exec(asciiLower(x[2])), rule); })) return false;
      if (b - a === 2 && (shows(rule, a, a + 1) || shows(rule, a + 1, b))) return false;
      var k = a + ":" + b;
      if (!(k in normal)) normal[k] = joins(p.map(function (x) { return x[2]; })).map(function (t) { return normalise(e, t); });
      return normal[k].some(function (t) { return rule.regex.test(t); });
    }
    return { find: function (rule, lo, hi) {
      var found = [];
      for (var size = 2; size <= w.lines; size++) {
        for (var a = hi - size + 1; a <= lo; a++) if (shows(rule, a, a + size - 1)) found.push([a, a + size - 1]);
      }
      return found;
    } };
  }

  function record(hits, rule, numbers, texts) {
    var hit = hits[rule.entry] = hits[rule.entry] ||
      { entry: rule.entry, url: rule.url, title: rule.title, score: 0, lines: [], texts: {}, signatures: [] };
    hit.specific = hit.specific || !rule.generic;
    if (!hit.signatures.some(function (s) { return s[0] === rule.signature; })) {
      hit.signatures.push([rule.signature, rule.weight]);
      hit.score = Math.round((hit.score + rule.weight) * 1000) / 1000;
    }
    numbers.forEach(function (n) { if (!(n in hit.texts)) { hit.lines.push(n); hit.texts[n] = texts[n - 1]; } });
  }

  function match(e, text) {
    var hits = {};
    var lines = text.split("\n");
    var all = lines.map(function (raw) { return raw.replace(/\r$/, ""); });
    var wrapped = Wrapped(e, all);
    lines.forEach(function (raw, i) {
      var line = all[i];
      var lower = line.toLowerCase();
      var anchored = [];
      e.anchors.forEach(function (a) { if (lower.indexOf(a) >= 0) anchored = anchored.concat(e.byAnchor[a]); });
      var candidates = anchored.filter(function (rule) {
        return rule.words.every(function (w) { return lower.indexOf(w) >= 0; });
      });
      var confirmed = matchLine(e, line, lower, candidates);
      confirmed.forEach(function (rule) { record(hits, rule, [i + 1], all); });
      // A rule the line holds a search word of but not all its words may be wrapped over lines.
      var ascii = asciiLower(line);
      anchored.forEach(function (rule) {
        if (confirmed.indexOf(rule) >= 0 || rule.words.every(function (w) { return ascii.indexOf(w) >= 0; })) return;
        wrapped.find(rule, i, i).forEach(function (run) {
          var numbers = [];
          for (var n = run[0]; n <= run[1]; n++) numbers.push(n + 1);
          record(hits, rule, numbers, all);
        });
      });
    });
    Object.keys(hits).forEach(function (k) { hits[k].lines.sort(function (a, b) { return a - b; }); });
    return finish(e, text, lines, hits);
  }

  // The rules of `candidates` (anchor and words in the line) whose pattern matches the line.
  function matchLine(e, line, lower, candidates) {
    if (!candidates.length) return [];
    // Long lines are matched in windows around their anchor words, as in `kb match`.
    var texts;
    if (line.length <= 2 * e.window) {
      texts = [normalise(e, line)];
    } else {
      var starts = {};
      candidates.forEach(function (rule) { var p = lower.indexOf(rule.anchor); if (p >= 0) starts[p] = true; });
      texts = Object.keys(starts).map(Number).sort(function (a, b) { return a - b; }).map(function (p) {
        return normalise(e, line.slice(Math.max(0, p - e.window), p + e.window));
      });
    }
    return candidates.filter(function (rule) { return texts.some(function (t) { return rule.regex.test(t); }); });
  }

  function finish(e, text, lines, hits) {
    matchEvidence(e, lines, hits);
    // What the log says of its machine decides each cell's verdict, as in `kb match` (which reads
    // the facts from a log's first 4 MiB; a pasted log is read whole).
    var facts = logFacts(e.logfacts, text);
    return kbVerdict.rank(Object.keys(hits).map(function (k) { return hits[k]; }).map(function (hit) {
      var best = hit.signatures[0];
      hit.signatures.forEach(function (s) { if (s[1] > best[1]) best = s; });
      hit.signature = best[0];
      hit.specific = !!hit.specific;
      var decided = kbVerdict.decide(e.cells[hit.entry], facts, hit.specific);
      hit.verdict = decided[0];
      hit.why = decided[1];
      return hit;
    }));
  }

  // Evidence (kb/triage/evidence.py): a cell shown by identifiers seen together within a window of lines,
  // for logs that print no error line. Terms are case-sensitive whole identifiers; numbers are
  // patterns over normalised lines. The window is the first line e where every term and number
  // was last seen at or after e - window + 1; those last sightings are the lines shown.
  var IDENT = /[A-Za-z0-9_]/;

  function hasTerm(line, term) {
    var at = line.indexOf(term);
    while (at >= 0) {
      var end = at + term.length;
      if (!(IDENT.test(term[0]) && at > 0 && IDENT.test(line[at - 1])) &&
          !(IDENT.test(term[term.length - 1]) && end < line.length && IDENT.test(line[end]))) return true;
      at = line.indexOf(term, at + 1);
    }
    return false;
  }

  function firstWindow(sightings, window) {
    if (!sightings.length || sightings.some(function (s) { return !s.length; })) return null;
    var seen = {};
    sightings.forEach(function (s) { s.forEach(function (n) { seen[n] = true; }); });
    var events = Object.keys(seen).map(Number).sort(function (a, b) { return a - b; });
    var at = sightings.map(function () { return 0; }), last = sightings.map(function () { return 0; });
    for (var i = 0; i < events.length; i++) {
      var e = events[i];
      sightings.forEach(function (lines, k) {
        while (at[k] < lines.length && lines[at[k]] <= e) { last[k] = lines[at[k]]; at[k]++; }
      });
      if (Math.min.apply(null, last) >= Math.max(1, e - window + 1)) {
        var out = {};
        last.forEach(function (n) { out[n] = true; });
        return Object.keys(out).map(Number).sort(function (a, b) { return a - b; });
      }
    }
    return null;
  }

  function matchEvidence(e, lines, hits) {
    if (!e.evidence.length) return;
    var texts = lines.map(function (raw) { return raw.replace(/\r$/, ""); });
    var normalised = {};
    e.evidence.forEach(function (rule) {
      var sightings = rule.terms.map(function (term) {
        var found = [];
        texts.forEach(function (line, i) { if (hasTerm(line, term)) found.push(i + 1); });
        return found;
      });
      rule.regexes.forEach(function (regex, j) {
        var found = [];
        texts.forEach(function (line, i) {
          var lower = line.toLowerCase();
          if (!rule.words[j].every(function (w) { return lower.indexOf(w) >= 0; })) return;
          if (!(i in normalised)) normalised[i] = normalise(e, line);
          if (regex.test(normalised[i])) found.push(i + 1);
        });
        sightings.push(found);
      });
      var shown = firstWindow(sightings, rule.window);
      if (!shown) return;
      var hit = hits[rule.entry] = hits[rule.entry] ||
        { entry: rule.entry, url: rule.url, title: rule.title, score: 0, lines: [], texts: {}, signatures: [] };
      hit.signatures.push([rule.label, rule.weight]);
      hit.specific = true;  // identifiers seen together are no generic line
      hit.score = Math.round((hit.score + rule.weight) * 1000) / 1000;
      shown.forEach(function (n) { if (!(n in hit.texts)) { hit.lines.push(n); hit.texts[n] = texts[n - 1]; } });
      hit.lines.sort(function (a, b) { return a - b; });
    });
  }

  // The new-failure request: the same rules and text as `kb match` (kb/triage/request.py), exported in
  // patterns.json: secrets written {secret} first, the last error-looking lines (a library's WARN
  // line among them) without their log prefixes, varying parts as the pattern grammar's
  // placeholders, the GPU and versions named; nothing else of the log. The title is the line
  // titleRank puts highest: the last of that rank before the first traceback, else the first after it.
  function compileRequest(r) {
    return {
      maxLines: r.max_lines, maxChars: r.max_line_chars, margin: r.secret_margin, untitled: r.untitled,
      prefix: r.title_prefix, noGpu: r.no_gpu,
      errorish: new RegExp(r.errorish, "i"), library: new RegExp(r.library_warn), exception: new RegExp(r.exception),
      traceback: new RegExp(r.traceback), notTitle: new RegExp(r.not_title),
      gpu: new RegExp(r.gpu, "g"), version: new RegExp(r.version, "gi"),
      level: new RegExp(r.level), harmless: r.harmless_levels,
      secrets: r.secrets.map(function (p) {
        var regex = new RegExp(p.pattern, p.ignore_case ? "gi" : "g");
        if (!p.mixed) return [regex, p.replacement];
        // Only a run holding a digit and a letter is a secret (a long identifier is not).
        return [regex, function (run) { return /[0-9]/.test(run) && /[A-Za-z]/.test(run) ? p.replacement : run; }];
      }),
      prefixes: r.prefixes.map(function (p) { return [new RegExp(p.pattern, "gi"), p.replacement]; }),
      placeholders: r.placeholders.map(function (p) { return [new RegExp(p.pattern, "g"), p.replacement]; })
    };
  }

  function redact(q, line) {
    q.secrets.forEach(function (rule) { line = line.replace(rule[0], rule[1]); });
    return line;
  }

  function harmless(q, raw) {
    var found = q.level.exec(raw);
    return !!found && q.harmless.indexOf(found[1]) >= 0 && !q.library.test(raw);
  }

  function errorish(q, raw) { return q.errorish.test(raw) || q.library.test(raw); }

  // request.title_rank: 3 an exception line, 2 a library's warning, 1 another error line, 0 never a title.
  function titleRank(q, raw, line) {
    if (harmless(q, raw) || q.notTitle.test(line)) return 0;
    if (q.exception.test(line)) return 3;
    return q.library.test(raw) ? 2 : 1;
  }

  function errorLine(q, line) {
    line = redact(q, line.slice(0, q.maxChars + q.margin)).slice(0, q.maxChars);
    q.prefixes.concat(q.placeholders).forEach(function (rule) { line = line.replace(rule[0], rule[1]); });
    line = line.replace(/^[ \t]+|[ \t]+$/g, "");
    // A leading # or backtick would start a section or end the code block: escaped.
    return /^[#`]/.test(line) ? "\\" + line : line;
  }

  function newCell(q, text) {
    var lines = [], gpus = {}, versions = {}, before = {}, after = {}, seenTraceback = false, m;
    text.split("\n").forEach(function (raw) {
      raw = raw.replace(/\r$/, "").slice(0, q.maxChars * 4);
      if (errorish(q, raw)) {
        var line = errorLine(q, raw);
        if (line) {
          var at = lines.indexOf(line);
          if (at >= 0) lines.splice(at, 1);
          lines.push(line);
          if (lines.length > q.maxLines) lines.shift();
          var rank = titleRank(q, raw, line);
          if (rank && !seenTraceback) before[rank] = line;
          else if (rank && !(rank in after)) after[rank] = line;
        }
        seenTraceback = seenTraceback || q.traceback.test(raw);
      }
      (raw.match(q.gpu) || []).forEach(function (g) { gpus[g.replace(/ +$/, "")] = true; });
      q.version.lastIndex = 0;
      while ((m = q.version.exec(raw)) !== null) { versions[m[1].toLowerCase()] = m[2]; }
    });
    var out = ["### Literal error lines", "",
      "Only the lines of the log that look like errors, without their log prefixes; parts that vary " +
      "between runs are written as placeholders ({int}, {hex}, {size}, {path}, {pid}), and what looks like " +
      "a password, token, key or e-mail address as {secret}. Nothing else of the log is included.", "",
      "```text"].concat(lines.length ? lines : ["(no error-looking line found)"]);
    out.push("```", "", "### Environment found in the log", "",
             "- GPU: " + (Object.keys(gpus).sort().join(", ") || q.noGpu));
    Object.keys(versions).sort().forEach(function (k) { out.push("- " + k + ": " + versions[k]); });
    out.push("", "### What you were running", "", "(command line, model, flags)", "");
    var best = Math.max.apply(null, [0].concat(Object.keys(before), Object.keys(after)).map(Number));
    var title = before[best] || after[best] || q.untitled;
    return { title: q.prefix + title.slice(0, 200), text: out.join("\n") };
  }

  // The request's sections, by their headings alone on a line, each heading taken once and in
  // order: a "### ..." inside a section's text (an error line is escaped anyway) starts nothing.
  var SECTIONS = ["Literal error lines", "Environment found in the log", "What you were running"];

  function sections(text) {
    var found = {}, next = 0, current = null;
    text.split("\n").forEach(function (line) {
      var heading = next < SECTIONS.length && line.replace(/[ \t]+$/, "") === "### " + SECTIONS[next];
      if (heading) { current = SECTIONS[next++]; found[current] = []; return; }
      if (current !== null) found[current].push(line);
    });
    SECTIONS.forEach(function (name) { found[name] = (found[name] || []).join("\n").trim(); });
    return found;
  }

  // The issue form's fields (.github/ISSUE_TEMPLATE/new-cell.yml) from the text as the reader left it.
  function issueUrl(base, title, text) {
    var parts = sections(text);
    var body = parts["Literal error lines"];
    var open = body.indexOf("```text\n"), close = open >= 0 ? body.indexOf("\n```", open + 8) : -1;
    var lines = open >= 0 ? body.slice(open + 8, close >= 0 ? close : body.length) : "";
    var params = new URLSearchParams({ template: "new-cell.yml", title: title,
      "error-lines": lines || text, environment: parts["Environment found in the log"],
      "what-you-ran": parts["What you were running"] });
    return base + "?" + params.toString();
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // One result: what to know first (the failure, its id and status, the verdict, what to do now:
  // kb/site/triage.py's words, made at build time from the records), then the matched lines.
  function result(hit, only) {
    var site = new URL("..", patternsUrl);
    var about = engineNow.results[hit.entry] || null;
    var li = element("li", "kb-triage__hit");
    var title = element("h3", "kb-triage__title");
    var a = element("a", "kb-triage__link", hit.title);
    a.href = new URL(hit.url, site).pathname;
    title.appendChild(a);
    li.appendChild(title);
    if (about) {
      var meta = element("p", "kb-triage__meta");
      var id = element("a", "kb-id", about.citable_id);
      id.href = new URL(about.id_url, site).pathname;
      meta.appendChild(id);
      meta.appendChild(document.createTextNode(" "));
      meta.appendChild(element("span", "kb-status kb-status--" + about.status, about.status_words));
      li.appendChild(meta);
    }
    var verdict = element("p", "kb-triage__verdict kb-triage__verdict--" + hit.verdict);
    verdict.appendChild(element("strong", "", engineNow.verdicts[hit.verdict]));
    verdict.appendChild(document.createTextNode(": " + hit.why));
    li.appendChild(verdict);
    if (about) {
      var doNow = element("p", "kb-triage__do");
      doNow.appendChild(element("strong", "", "Do now: "));
      doNow.appendChild(element("span", "kb-triage__do-text", about.do_now));
      doNow.appendChild(document.createTextNode(" ("));
      var more = element("a", "", "details and sources");
      more.href = new URL(hit.url, site).pathname + "#fix";
      doNow.appendChild(more);
      doNow.appendChild(document.createTextNode(")"));
      li.appendChild(doNow);
    }
    // The log's lines that matched: open under a single result, folded where there are more so
    // that every result's first lines stay together on the first screen.
    var lines = element("details", "kb-triage__lines");
    lines.open = only;
    var shown = hit.lines.slice(0, 5);
    lines.appendChild(element("summary", "", "Matched " + (shown.length === 1 ? "line " : "lines ") +
      shown.join(", ") + " of your log"));
    shown.forEach(function (n) {
      var p = element("pre");
      p.appendChild(document.createTextNode("line " + n + ": "));
      p.appendChild(element("mark", "", hit.texts[n]));
      lines.appendChild(p);
    });
    li.appendChild(lines);
    return li;
  }

  function render(text, hits) {
    list.textContent = "";
    hits.forEach(function (hit) { list.appendChild(result(hit, hits.length === 1)); });
    status.textContent = hits.length ? hits.length + " known failure" + (hits.length === 1 ? "" : "s") +
      " match" + (hits.length === 1 ? "es" : "") + " this log, best first."
      : "No known failure matches this log.";
    fresh.hidden = hits.length > 0;
    var request = hits.length ? { title: "", text: "" } : newCell(engineNow.request, text);
    issue.value = request.text;
    titleBox.value = request.title;
    link();
    copied.textContent = "";
    form.setAttribute("data-results", JSON.stringify(hits.map(function (h) {
      return { entry: h.entry, score: h.score, lines: h.lines, signature: h.signature, url: h.url,
               verdict: h.verdict, why: h.why, generic_only: !h.specific };
    })));
    // The answer is below the box the reader just used: take them there.
    heading.hidden = false;
    heading.scrollIntoView({ block: "start" });
    heading.focus({ preventScroll: true });
  }

  // The issue link follows the title and text as the reader leaves them.
  function link() {
    if (open) open.href = fresh.hidden ? "#" : issueUrl(open.getAttribute("data-base"), titleBox.value, issue.value);
  }

  function run(text) {
    form.removeAttribute("data-results");
    status.textContent = "Matching\u2026";
    load().then(function (e) { engineNow = e; render(text, match(e, text)); }).catch(function (error) {
      status.textContent = "Triage is unavailable: " + error;
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); run(log.value); });
  log.addEventListener("input", function () { sampleSource.hidden = true; });
  // The reader edits the request before it leaves the page: the link follows the text.
  issue.addEventListener("input", link);
  titleBox.addEventListener("input", link);
  // Without an issue tracker (a local preview, a fork) the request is copied, title then text.
  copy.addEventListener("click", function () {
    var both = titleBox.value + "\n\n" + issue.value;
    navigator.clipboard.writeText(both).then(function () {
      copied.textContent = "Copied the title and text: paste them into a new issue.";
    }, function () {
      issue.focus();
      issue.select();
      copied.textContent = "The browser did not allow copying: the text is selected, copy it with Ctrl+C.";
    });
  });
  searchButton.addEventListener("click", function () {
    var box = document.getElementById("kb-search-input");
    if (!box) return;
    var q = engineNow.request, words = titleBox.value;
    if (words.indexOf(q.prefix) === 0) words = words.slice(q.prefix.length);
    box.value = words === q.untitled ? "" : words;
    box.dispatchEvent(new Event("input", { bubbles: true }));
    box.focus();
  });
  sample.addEventListener("click", function () {
    status.textContent = "Loading the sample\u2026";
    fetch(new URL(sample.getAttribute("data-log"), document.baseURI).href).then(function (r) {
      if (!r.ok) throw new Error("the sample log: HTTP " + r.status);
      return r.text();
    }).then(function (text) {
      log.value = text;
      sampleSource.hidden = false;
      run(text);
    }).catch(function (error) { status.textContent = "The sample is unavailable: " + error; });
  });
  file.addEventListener("change", function () {
    if (file.files[0]) file.files[0].text().then(function (text) { log.value = text; run(text); });
  });
  log.addEventListener("dragover", function (event) { event.preventDefault(); });
  log.addEventListener("drop", function (event) {
    event.preventDefault();
    var dropped = event.dataTransfer.files[0];
    if (dropped) dropped.text().then(function (text) { log.value = text; run(text); });
  });

  // The search box's "no results" link carries its text in the fragment (`#log=...`), which no
  // server sees; it is read once, then removed from the address and the history entry.
  var carried = /^#log=/.test(location.hash) ? location.hash.slice(5) : null;
  if (carried !== null) {
    try { carried = decodeURIComponent(carried); } catch (error) { carried = null; }
    history.replaceState(null, "", location.pathname + location.search);
    if (carried) { log.value = carried; run(carried); }
  }
})();

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

  // The verdict on a cell whose text a log matched (kb/records/verdict.py `decide` and
  // `rank_key`): the same rules and words, on the facts kbLogFacts reads and the cell's scope
  // (patterns.json `cells`: architectures, each component's affected range and fixed_in);
  // tests/vectors/verdict.json holds the vectors both pass. Versions are compared as PEP 440
  // orders them (release, a/b/rc, post, dev; a local part only where packaging looks at it),
  // for the forms kbLogFacts reads and the records hold (no epoch).
  var PRE = { a: 0, b: 1, rc: 2 };
  function version(text) {
    var m = /^([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.?post([0-9]+))?(?:\.?dev([0-9]+))?(?:\+([a-z0-9]+(?:\.[a-z0-9]+)*))?$/i.exec(text);
    if (!m) return null;
    return { release: m[1].split(".").map(Number), pre: m[2] ? [PRE[m[2].toLowerCase()], Number(m[3])] : null,
             post: m[4] === undefined ? null : Number(m[4]), dev: m[5] === undefined ? null : Number(m[5]),
             local: m[6] === undefined ? null : m[6] };
  }
  function compareList(a, b) {
    for (var i = 0; i < Math.max(a.length, b.length); i++) {
      var x = i < a.length ? a[i] : 0, y = i < b.length ? b[i] : 0;
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  }
  function cmpKey(v) {  // packaging's _cmpkey, the release compared apart (padded with zeros)
    var pre = !v.pre && v.post === null && v.dev !== null ? [-Infinity] : !v.pre ? [Infinity] : v.pre;
    return pre.concat([v.post === null ? -Infinity : v.post, v.dev === null ? Infinity : v.dev]);
  }
  function compare(a, b) { return compareList(a.release, b.release) || compareList(cmpKey(a), cmpKey(b)); }
  function isPre(v) { return !!v.pre || v.dev !== null; }
  function sameBase(a, b) { return compareList(a.release, b.release) === 0; }
  function prefixOf(prefix, v) {
    return compareList(v.release.concat(prefix.map(function () { return 0; })).slice(0, prefix.length), prefix) === 0;
  }
  function specs(span) {
    return span.split(",").map(function (s) {
      var m = /^\s*(~=|===|==|!=|<=|>=|<|>)\s*(\S+?)\s*$/.exec(s);
      return { op: m[1], version: m[2] };
    });
  }
  function contains(spec, v) {
    var op = spec.op, text = spec.version;
    if (op === "===") return false;  // arbitrary equality: kbLogFacts's versions never need it
    if ((op === "==" || op === "!=") && /\.\*$/.test(text)) {
      var inside = prefixOf(version(text.slice(0, -2)).release, v);
      return op === "==" ? inside : !inside;
    }
    var s = version(text), c = compare(v, s);
    if (op === "==") return c === 0 && (s.local === null || s.local === v.local);
    if (op === "!=") return !(c === 0 && (s.local === null || s.local === v.local));
    if (op === "<=") return c <= 0;
    if (op === ">=") return c >= 0;
    if (op === "<") return c < 0 && !(!isPre(s) && isPre(v) && sameBase(v, s));
    if (op === ">") return c > 0 && !(s.post === null && v.post !== null && sameBase(v, s)) && !(v.local !== null && sameBase(v, s));
    // ~=: at least the version, and the same release but for its last number
    return c >= 0 && prefixOf(s.release.slice(0, -1), v);
  }
  function side(spec, v) {
    var op = spec.op, text = spec.version;
    if (op === "<" || op === "<=") return "above";
    if (op === ">" || op === ">=") return "below";
    if (op === "~=") return compare(v, version(text)) < 0 ? "below" : "above";
    if (op === "==") {
      if (/\.\*$/.test(text)) {
        var prefix = version(text.slice(0, -2)).release;
        return compareList(v.release.slice(0, prefix.length), prefix) > 0 ? "above" : "below";
      }
      return compare(v, version(text)) > 0 ? "above" : "below";
    }
    return null;
  }
  function pyRepr(text) {
    return text.indexOf("'") >= 0 && text.indexOf('"') < 0 ? '"' + text + '"' : "'" + text.replace(/\\/g, "\\\\").replace(/'/g, "\\'") + "'";
  }
  function packageVerdict(item, packages) {
    var name = item.package;
    if (!Object.prototype.hasOwnProperty.call(packages, name)) return ["unknown", name + " version is unknown"];
    var installed = packages[name];
    if (installed === null) return ["not-applicable", name + " is not installed"];
    var v = version(installed);
    if (!v) return ["unknown", name + " version " + pyRepr(installed) + " is not a PEP 440 version"];
    var span = item.affected || "<" + item.fixed_in, all = specs(span);
    if (all.every(function (s) { return contains(s, v); })) return ["affected", name + " " + installed + " is within " + span];
    if (item.fixed_in && compare(v, version(item.fixed_in)) >= 0) {
      return ["fixed", name + " " + installed + " is at or above the fix in " + item.fixed_in];
    }
    var sides = all.filter(function (s) { return !contains(s, v); }).map(function (s) { return side(s, v); });
    if (sides.length && sides.every(function (x) { return x === "above"; })) {
      return ["fixed", name + " " + installed + " is above the affected range " + span];
    }
    return ["not-applicable", name + " " + installed + " is outside the affected range " + span];
  }
  function capabilityArch(cc) {
    var m = /^([0-9]+)\.([0-9]+)$/.exec(cc || "");
    return m ? "sm_" + parseInt(m[1], 10) + parseInt(m[2], 10) : null;
  }
  function decide(cell, facts, specific) {
    var listed = cell.architectures.join(", ");
    var generic = specific ? "" : "; the matched line is generic (other GPUs print it too)";
    var lines = facts.lines || {}, packages = facts.packages || {}, shown = [], missing = [];
    function at(key) { return lines[key] ? "line " + lines[key] + ": " : ""; }
    function gpuWords(g, a) { return "line " + g.line + " shows " + a + (g.name ? " (" + g.name + ")" : ""); }
    if (facts.gpus === null || facts.gpus === undefined) {
      missing.push("the GPU's sm_ number (the cell covers " + listed + ")");
    } else {
      var archs = facts.gpus.map(function (g) { return capabilityArch(g.compute_capability); });
      var covered = facts.gpus.map(function (g, k) { return [g, archs[k]]; }).filter(function (p) {
        return cell.architectures.indexOf(p[1]) >= 0;
      });
      if (covered.length) {
        shown.push(gpuWords(covered[0][0], covered[0][1]) + ", which the cell covers");
      } else if (archs.indexOf(null) >= 0) {
        missing.push("the GPU's sm_ number (the cell covers " + listed + ")");
      } else {
        return ["ruled-out", facts.gpus.map(function (g, k) { return gpuWords(g, archs[k]); }).join("; ") +
                "; the cell covers " + listed + generic];
      }
    }
    var found = { "fixed": [], "not-applicable": [], "affected": [] };
    cell.components.forEach(function (item) {
      if (!(item.affected || item.fixed_in)) return;
      var r = packageVerdict(item, packages), where = at("packages." + item.package);
      if (r[0] === "unknown" && !Object.prototype.hasOwnProperty.call(packages, item.package)) {
        missing.push("the " + item.package + " version (" + (item.affected ? "affected: " + item.affected +
          (item.fixed_in ? ", fixed in " + item.fixed_in : "") : "fixed in " + item.fixed_in) + ")");
      } else if (r[0] === "unknown") {
        missing.push("a " + item.package + " version PEP 440 reads (" + where + r[1] + ")");
      } else {
        found[r[0]].push(where + r[1]);
      }
    });
    if (found["not-applicable"].length) return ["ruled-out", found["not-applicable"].join("; ") + generic];
    if (found.fixed.length) return ["fixed", found.fixed.join("; ") + generic];
    if (missing.length) {
      var said = shown.concat(found.affected);
      return ["unknown", "the log does not show " + missing.join(" or ") + ", which would decide" +
              (said.length ? " (" + said.join("; ") + ")" : "") + generic];
    }
    return ["applies", shown.concat(found.affected).join("; ") + generic];
  }
  var VERDICTS = ["applies", "unknown", "fixed", "ruled-out"];
  function rankCompare(a, b) {  // rank_key: ruled-out last, generic-only after the rest, verdict, score, id
    var ka = [a.verdict === "ruled-out" ? 1 : 0, a.specific ? 0 : 1, VERDICTS.indexOf(a.verdict), -a.score];
    var kb = [b.verdict === "ruled-out" ? 1 : 0, b.specific ? 0 : 1, VERDICTS.indexOf(b.verdict), -b.score];
    return compareList(ka, kb) || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0);
  }
  window.kbVerdict = { decide: decide, rank: function (hits) { return hits.slice().sort(rankCompare); } };

  var form = document.getElementById("kb-triage");
  if (!form) return;
  var log = document.getElementById("kb-triage-log");
  var file = document.getElementById("kb-triage-file");
  var status = form.querySelector(".kb-triage__status");
  var list = form.querySelector(".kb-triage__results");
  var fresh = form.querySelector(".kb-triage__new");
  var issue = document.getElementById("kb-triage-issue");
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
                 cells: data.cells, logfacts: data.logfacts, verdicts: data.verdicts };
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
      var decided = decide(e.cells[hit.entry], facts, hit.specific);
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

  // The new-cell request: the same rules and text as `kb match` (kb/triage/request.py), exported in
  // patterns.json: secrets written {secret} first, the last error-looking lines without their log
  // prefixes, varying parts as the pattern grammar's placeholders, the GPU and versions named;
  // nothing else of the log. The title is the first error line that is no DEBUG, INFO or WARNING line.
  function compileRequest(r) {
    return {
      maxLines: r.max_lines, maxChars: r.max_line_chars, margin: r.secret_margin, untitled: r.untitled,
      errorish: new RegExp(r.errorish, "i"), gpu: new RegExp(r.gpu, "g"), version: new RegExp(r.version, "gi"),
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
    return !!found && q.harmless.indexOf(found[1]) >= 0;
  }

  function errorLine(q, line) {
    line = redact(q, line.slice(0, q.maxChars + q.margin)).slice(0, q.maxChars);
    q.prefixes.concat(q.placeholders).forEach(function (rule) { line = line.replace(rule[0], rule[1]); });
    line = line.replace(/^[ \t]+|[ \t]+$/g, "");
    // A leading # or backtick would start a section or end the code block: escaped.
    return /^[#`]/.test(line) ? "\\" + line : line;
  }

  function newCell(q, text) {
    var lines = [], names = {}, gpus = {}, versions = {}, m;
    text.split("\n").forEach(function (raw) {
      raw = raw.replace(/\r$/, "").slice(0, q.maxChars * 4);
      if (q.errorish.test(raw)) {
        var line = errorLine(q, raw);
        if (line) {
          var at = lines.indexOf(line);
          if (at >= 0) lines.splice(at, 1);
          lines.push(line);
          names[line] = !harmless(q, raw);
          if (lines.length > q.maxLines) lines.shift();
        }
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
             "- GPU: " + (Object.keys(gpus).sort().join(", ") || "not found in the log"));
    Object.keys(versions).sort().forEach(function (k) { out.push("- " + k + ": " + versions[k]); });
    out.push("", "### What you were running", "", "(command line, model, flags)", "");
    var title = lines.filter(function (line) { return names[line]; })[0] || q.untitled;
    return { title: "New cell: " + title.slice(0, 200), text: out.join("\n") };
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

  function render(text, hits) {
    list.textContent = "";
    hits.forEach(function (hit) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.className = "kb-triage__link";
      a.href = new URL(hit.url, new URL("..", patternsUrl)).pathname;
      a.textContent = hit.title;
      li.appendChild(a);
      var meta = document.createElement("span");
      meta.className = "kb-triage__score";
      meta.textContent = " score " + hit.score + ", signature: " + hit.signature;
      li.appendChild(meta);
      var verdict = document.createElement("p");
      verdict.className = "kb-triage__verdict kb-triage__verdict--" + hit.verdict;
      var word = document.createElement("strong");
      word.textContent = engineNow.verdicts[hit.verdict];
      verdict.appendChild(word);
      verdict.appendChild(document.createTextNode(": " + hit.why));
      li.appendChild(verdict);
      hit.lines.slice(0, 5).forEach(function (n) {
        var p = document.createElement("pre");
        var mark = document.createElement("mark");
        mark.textContent = hit.texts[n];
        p.appendChild(document.createTextNode("line " + n + ": "));
        p.appendChild(mark);
        li.appendChild(p);
      });
      list.appendChild(li);
    });
    status.textContent = hits.length ? hits.length + " matching cell" + (hits.length === 1 ? "" : "s")
      : "No cell matches this log.";
    fresh.hidden = hits.length > 0;
    var request = hits.length ? { title: "", text: "" } : newCell(engineNow.request, text);
    issue.value = request.text;
    issue.setAttribute("data-title", request.title);
    if (open) open.href = hits.length ? "#" : issueUrl(open.getAttribute("data-base"), request.title, issue.value);
    form.setAttribute("data-results", JSON.stringify(hits.map(function (h) {
      return { entry: h.entry, score: h.score, lines: h.lines, signature: h.signature, url: h.url,
               verdict: h.verdict, why: h.why, generic_only: !h.specific };
    })));
  }

  function run(text) {
    form.removeAttribute("data-results");
    status.textContent = "Matching\u2026";
    load().then(function (e) { engineNow = e; render(text, match(e, text)); }).catch(function (error) {
      status.textContent = "Triage is unavailable: " + error;
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); run(log.value); });
  // The reader edits the request before it leaves the page: the link follows the text.
  issue.addEventListener("input", function () {
    if (open) open.href = issueUrl(open.getAttribute("data-base"), issue.getAttribute("data-title") || "", issue.value);
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

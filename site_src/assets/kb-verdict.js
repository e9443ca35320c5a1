// The verdict on a cell (kb/records/verdict.py): shared by the triage page (kb-match.js) and the
// My stack page (kb-stack.js), loaded before either.
(function () {
  "use strict";

  // The verdict on a cell whose text a log matched (kb/records/verdict.py `decide` and
  // `rank_key`), or on a cell for a stack a reader describes (`on_stack`): the same rules and
  // words, on the facts kbLogFacts reads (or the My stack page gives) and the cell's scope
  // (patterns.json and stack/stack.json `cells`: architectures, each component's role, range,
  // fixed_in and builds, the decisive signatures, the trigger); tests/vectors/verdict.json holds the vectors both pass (under node:
  // tests/test_twins_node.py). Versions are compared as PEP 440 orders them (release, a/b/rc,
  // post, dev; a local part only where packaging looks at it), for the forms kbLogFacts reads and
  // the records hold (no epoch).
  var PRE = { a: 0, b: 1, rc: 2 };
  function version(text) {
    // A leading v (a release tag: v0.28.0) is allowed, as packaging normalises it away.
    var m = /^v?([0-9]+(?:\.[0-9]+)*)(?:(a|b|rc)([0-9]+))?(?:\.?post([0-9]+))?(?:\.?dev([0-9]+))?(?:\+([a-z0-9]+(?:\.[a-z0-9]+)*))?$/i.exec(text);
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
  // A sentence of verdict.WORDS with its {names} filled, once (a value holding "{x}" stays as it is).
  function fill(template, values) {
    return template.replace(/\{([a-z_]+)\}/g, function (all, name) { return values[name]; });
  }
  function shownSpan(span) {  // verdict.shown_span: a single '==X' is the version X
    return span.slice(0, 2) === "==" && span.indexOf(",") < 0 && span.slice(0, 3) !== "===" ? span.slice(2) : span;
  }
  function decides(item) {  // verdict._decides: a component whose versions decide a cell
    return item.role !== "unaffected" && !!(item.affected || item.seen_failing || item.fixed_in);
  }
  function packageVerdict(t, item, packages) {  // verdict._package
    var name = item.package, w = t.words;
    if (!Object.prototype.hasOwnProperty.call(packages, name)) return ["unknown", fill(w.version_unknown, { name: name })];
    var installed = packages[name];
    if (installed === null) return ["not-applicable", fill(w.not_installed, { name: name })];
    var v = version(installed);
    if (!v) return ["unknown", fill(w.not_pep440, { name: name, quoted: pyRepr(installed) })];
    var builds = item.builds || [], label = v.local === null ? null : "+" + v.local.toLowerCase();
    var said = { name: name, installed: installed, fixed_in: item.fixed_in, label: label, builds: builds.join(", ") };
    if (label !== null && builds.indexOf(label) >= 0) return ["affected", fill(w.build_affected, said)];
    var span = item.affected || item.seen_failing || "<" + item.fixed_in, all = specs(span);
    said.span = item.seen_failing ? shownSpan(span) : span;
    if (all.every(function (s) { return contains(s, v); })) return ["affected", fill(item.seen_failing ? w.seen : w.within, said)];
    if (item.fixed_in && compare(v, version(item.fixed_in)) >= 0) return ["fixed", fill(w.at_fix, said)];
    if (builds.length && label === null) return ["unknown", fill(w.build_unknown, said)];
    if (item.seen_failing) return ["not-known", fill(w.only_seen, said)];
    var sides = all.filter(function (s) { return !contains(s, v); }).map(function (s) { return side(s, v); });
    if (sides.length && sides.every(function (x) { return x === "above"; })) return ["not-known", fill(w.above_range, said)];
    return ["not-applicable", fill(w.outside_range, said)];
  }
  // verdict.capability_arch and digits_capability: the exported table (`architecture`) applied.
  function arch(table, cc) {
    var pattern = new RegExp(table.capability.pattern);
    return pattern.test(cc || "") ? cc.replace(pattern, table.capability.arch) : null;
  }
  function capability(table, digits) {
    for (var i = 0; i < table.digits.length; i++) {
      var pattern = new RegExp(table.digits[i][0]);
      if (pattern.test(digits)) return digits.replace(pattern, table.digits[i][1]);
    }
    return null;
  }
  function rangeWords(w, item) {  // verdict._range_words
    var builds = item.builds && item.builds.length ? fill(w.range_builds, { builds: item.builds.join(", ") }) : "";
    if (item.affected || item.seen_failing) {
      var said = item.affected ? fill(w.range_affected, item) : fill(w.range_seen, { seen_failing: shownSpan(item.seen_failing) });
      return said + (item.fixed_in ? fill(w.range_and_fix, item) : "") + builds;
    }
    return fill(w.range_fix, item) + builds;
  }
  function decide(t, cell, facts, specific, subject, matched) {
    var w = t.words;
    if (subject === undefined) subject = "the log";
    matched = matched || [];
    var listed = cell.architectures.join(", ");
    var generic = specific ? "" : w.generic;
    var lines = facts.lines || {}, packages = facts.packages || {}, shown = [], missing = [];
    function at(key) { return lines[key] ? fill(w.at_line, { line: lines[key] }) : ""; }
    function gpuWords(g, a) {
      return (g.line ? fill(w.gpu_at_line, { line: g.line, arch: a }) : fill(w.gpu_of_subject, { subject: subject, arch: a })) +
        (g.name ? fill(w.gpu_name, { name: g.name }) : "");
    }
    if (facts.gpus === null || facts.gpus === undefined) {
      missing.push(fill(w.no_arch, { listed: listed }));
    } else {
      var archs = facts.gpus.map(function (g) { return arch(t.architecture, g.compute_capability); });
      var covered = facts.gpus.map(function (g, k) { return [g, archs[k]]; }).filter(function (p) {
        return cell.architectures.indexOf(p[1]) >= 0;
      });
      if (covered.length) {
        shown.push(fill(w.covered, { gpu: gpuWords(covered[0][0], covered[0][1]) }));
      } else if (archs.indexOf(null) >= 0) {
        missing.push(fill(w.no_arch, { listed: listed }));
      } else {
        return ["ruled-out", fill(w.not_covered, { gpus: facts.gpus.map(function (g, k) { return gpuWords(g, archs[k]); }).join("; "),
                                                   listed: listed, generic: generic })];
      }
    }
    var found = { "fixed": [], "not-applicable": [], "not-known": [], "affected": [] };
    cell.components.forEach(function (item) {
      if (!decides(item)) return;
      var r = packageVerdict(t, item, packages), where = at("packages." + item.package);
      if (r[0] === "unknown" && !Object.prototype.hasOwnProperty.call(packages, item.package)) {
        missing.push(fill(w.no_version, { package: item.package, range: rangeWords(w, item) }));
      } else if (r[0] === "unknown") {
        missing.push(fill(w.unreadable, { package: item.package, at: where, why: r[1] }));
      } else {
        found[r[0]].push(where + r[1]);
      }
    });
    var proof = (cell.decisive || []).filter(function (line) { return matched.indexOf(line.text) >= 0; })
      .map(function (line) { return line.quote; });
    if (proof.length) {
      return ["applies", shown.concat(found.affected, [fill(w.decisive, { text: proof[0], subject: subject })]).join("; ")];
    }
    var outcomes = [["not-applicable", "ruled-out"], ["fixed", "fixed"], ["not-known", "not-known"]];
    for (var k = 0; k < outcomes.length; k++) {
      if (found[outcomes[k][0]].length) return [outcomes[k][1], found[outcomes[k][0]].join("; ") + generic];
    }
    if (missing.length) {
      var said = shown.concat(found.affected);
      return ["unknown", fill(w.would_decide, { subject: subject, missing: missing.join(" or "), generic: generic,
                                                said: said.length ? fill(w.said, { said: said.join("; ") }) : "" })];
    }
    return ["applies", shown.concat(found.affected).join("; ") + generic];
  }
  // tie: of the packages that raise or trigger the cell, (-how many the log shows by a version or a
  // traceback frame, how many it does not): rank_key's `tied`
  function tie(t, cell, facts) {
    var lines = facts.lines || {}, packages = facts.packages || {};
    var active = unique(cell.components.filter(function (item) { return t.passive.indexOf(item.role) < 0; })
                        .map(function (item) { return item.package; }));
    var shown = active.filter(function (p) {
      return Object.prototype.hasOwnProperty.call(packages, p) || Object.prototype.hasOwnProperty.call(lines, "frames." + p);
    }).length;
    return [-shown, active.length - shown];
  }
  // rank_key: ruled-out last, generic-only after the rest, verdict, score, `tied` (tie; before the
  // score for a generic-only cell), id
  function rankKey(order, h) {
    var tied = h.tied || [0, 0];
    return [h.verdict === "ruled-out" ? 1 : 0, h.specific ? 0 : 1, order.indexOf(h.verdict)]
      .concat(h.specific ? [0, 0] : tied, [-h.score], tied);
  }
  function rankCompare(order, a, b) {
    var ka = rankKey(order, a), kb = rankKey(order, b);
    return compareList(ka, kb) || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0);
  }
  function or(words) { return words.length === 1 ? words[0] : words.slice(0, -1).join(", ") + " or " + words[words.length - 1]; }
  function unique(list) { return list.filter(function (x, k) { return list.indexOf(x) === k; }); }
  // on_stack: an engine the stack does not run, or a trigger, makes "when"; a cell whose raising or
  // triggering packages the stack names none of stays unknown
  function stack(t, cell, facts) {
    var w = t.words, given = facts.packages || {};
    function has(p) { return Object.prototype.hasOwnProperty.call(given, p); }
    var active = unique(cell.components.filter(function (item) { return t.passive.indexOf(item.role) < 0; })
                        .map(function (item) { return item.package; }));
    var engines = active.filter(function (p) { return Object.prototype.hasOwnProperty.call(t.engines, p); });
    var decided = decide(t, cell, facts, true, w.stack);
    if (engines.length && !engines.some(has)) {
      // verdict.on_stack: no engine of the cell in the stack: whether the reader uses one decides, not its version
      var verdict = decided[0];
      if (verdict === "unknown") {
        var unranged = cell.components.map(function (item) {
          return engines.indexOf(item.package) < 0 ? item
            : Object.assign({}, item, { affected: null, seen_failing: null, fixed_in: null });
        });
        verdict = decide(t, Object.assign({}, cell, { components: unranged }), facts, true, w.stack)[0];
      }
      if (verdict === "applies") {
        return ["when", fill(w.if_used, { engines: or(engines.map(function (p) { return t.engines[p]; })), subject: w.stack,
                                          them: engines.length === 1 ? "it" : "them" })];
      }
    }
    if (decided[0] !== "applies") return decided;
    var packages = active.length ? active : unique(cell.components.map(function (item) { return item.package; }));
    var named = packages.filter(has);
    if (!named.length) return ["unknown", fill(w.stack_unnamed, { subject: w.stack, packages: or(packages), why: decided[1] })];
    var ranged = {};
    cell.components.forEach(function (item) { if (decides(item)) ranged[item.package] = true; });
    var unranged = named.filter(function (p) { return !ranged[p]; }).map(function (p) { return p + " " + given[p]; });
    if (unranged.length) decided[1] += fill(w.unranged, { packages: unranged.join(", ") });
    if (cell.trigger) return ["when", decided[1] + fill(w.when, { trigger: cell.trigger })];
    return decided;
  }
  // verdict.out_of_scope: every GPU given has a known architecture outside the index's scope
  function outOfScope(t, gpus) {
    if (!gpus || !gpus.length) return null;
    var archs = gpus.map(function (g) { return arch(t.architecture, g.compute_capability); });
    if (archs.some(function (a) { return a === null || t.scope.indexOf(a) >= 0; })) return null;
    var named = unique(gpus.map(function (g, k) {
      return g.name ? fill(t.words.scope_gpu, { name: g.name, arch: archs[k] }) : archs[k];
    }));
    return fill(t.words.out_of_scope, { scope: t.scope.join("/"), gpus: named.join(", ") });
  }
  // verdict.undecided_versions: the hint to add `pip list` when a version would decide an
  // "unknown" hit; `hits` holds [verdict, scope] pairs
  function pipHint(t, hits, facts) {
    var packages = facts.packages || {};
    var waiting = hits.filter(function (h) { return h[0] === "unknown"; }).map(function (h) {
      return h[1].components.filter(function (item) {
        return decides(item) && !Object.prototype.hasOwnProperty.call(packages, item.package);
      }).map(function (item) { return item.package; });
    }).filter(function (names) { return names.length; });
    if (!waiting.length) return null;
    var named = unique([].concat.apply([], waiting)).sort();
    return fill(t.words.pip_list, { packages: or(named),
                                    count: waiting.length === 1 ? "this failure" : waiting.length + " of these failures" });
  }
  // verdict.proven: a decisive signature of the cell matched (`matched`, texts), or a package it
  // ranges is shown within its affected range or as a failing build.
  function proven(t, cell, facts, matched) {
    if ((cell.decisive || []).some(function (line) { return (matched || []).indexOf(line.text) >= 0; })) return true;
    var packages = facts.packages || {};
    return cell.components.some(function (item) {
      return decides(item) && packageVerdict(t, item, packages)[0] === "affected";
    });
  }
  // Every function takes the exported table `t` (kb.records.verdict.export(): the verdicts' order,
  // the reasons' words, the capability table), as the pages find it in their JSON.
  window.kbVerdict = { decide: decide, stack: stack, tie: tie, version: version, arch: arch, capability: capability,
                       outOfScope: outOfScope, pipHint: pipHint, proven: proven,
                       rank: function (t, hits, order) {
                         return hits.slice().sort(function (a, b) { return rankCompare(order || t.order, a, b); });
                       } };
})();

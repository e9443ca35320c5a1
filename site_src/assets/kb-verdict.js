// The verdict on a cell (kb/records/verdict.py): shared by the triage page (kb-match.js) and the
// My stack page (kb-stack.js), loaded before either.
(function () {
  "use strict";

  // The verdict on a cell whose text a log matched (kb/records/verdict.py `decide` and
  // `rank_key`), or on a cell for a stack a reader describes (`on_stack`): the same rules and
  // words, on the facts kbLogFacts reads (or the My stack page gives) and the cell's scope
  // (patterns.json and stack/stack.json `cells`: architectures, each component's affected range
  // and fixed_in); tests/vectors/verdict.json holds the vectors both pass (under node:
  // tests/test_twins_node.py). Versions are compared as PEP 440 orders them (release, a/b/rc,
  // post, dev; a local part only where packaging looks at it), for the forms kbLogFacts reads and
  // the records hold (no epoch).
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
  // A sentence of verdict.WORDS with its {names} filled, once (a value holding "{x}" stays as it is).
  function fill(template, values) {
    return template.replace(/\{([a-z_]+)\}/g, function (all, name) { return values[name]; });
  }
  function packageVerdict(t, item, packages) {
    var name = item.package, w = t.words;
    if (!Object.prototype.hasOwnProperty.call(packages, name)) return ["unknown", fill(w.version_unknown, { name: name })];
    var installed = packages[name];
    if (installed === null) return ["not-applicable", fill(w.not_installed, { name: name })];
    var v = version(installed);
    if (!v) return ["unknown", fill(w.not_pep440, { name: name, quoted: pyRepr(installed) })];
    var span = item.affected || "<" + item.fixed_in, all = specs(span);
    var said = { name: name, installed: installed, span: span, fixed_in: item.fixed_in };
    if (all.every(function (s) { return contains(s, v); })) return ["affected", fill(w.within, said)];
    if (item.fixed_in && compare(v, version(item.fixed_in)) >= 0) return ["fixed", fill(w.at_fix, said)];
    var sides = all.filter(function (s) { return !contains(s, v); }).map(function (s) { return side(s, v); });
    if (sides.length && sides.every(function (x) { return x === "above"; })) return ["fixed", fill(w.above_range, said)];
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
  function rangeWords(w, item) {
    if (item.affected) return fill(w.range_affected, item) + (item.fixed_in ? fill(w.range_and_fix, item) : "");
    return fill(w.range_fix, item);
  }
  function decide(t, cell, facts, specific, subject) {
    var w = t.words;
    if (subject === undefined) subject = "the log";
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
    var found = { "fixed": [], "not-applicable": [], "affected": [] };
    cell.components.forEach(function (item) {
      if (!(item.affected || item.fixed_in)) return;
      var r = packageVerdict(t, item, packages), where = at("packages." + item.package);
      if (r[0] === "unknown" && !Object.prototype.hasOwnProperty.call(packages, item.package)) {
        missing.push(fill(w.no_version, { package: item.package, range: rangeWords(w, item) }));
      } else if (r[0] === "unknown") {
        missing.push(fill(w.unreadable, { package: item.package, at: where, why: r[1] }));
      } else {
        found[r[0]].push(where + r[1]);
      }
    });
    if (found["not-applicable"].length) return ["ruled-out", found["not-applicable"].join("; ") + generic];
    if (found.fixed.length) return ["fixed", found.fixed.join("; ") + generic];
    if (missing.length) {
      var said = shown.concat(found.affected);
      return ["unknown", fill(w.would_decide, { subject: subject, missing: missing.join(" or "), generic: generic,
                                                said: said.length ? fill(w.said, { said: said.join("; ") }) : "" })];
    }
    return ["applies", shown.concat(found.affected).join("; ") + generic];
  }
  function rankCompare(order, a, b) {  // rank_key: ruled-out last, generic-only after the rest, verdict, score, id
    var ka = [a.verdict === "ruled-out" ? 1 : 0, a.specific ? 0 : 1, order.indexOf(a.verdict), -a.score];
    var kb = [b.verdict === "ruled-out" ? 1 : 0, b.specific ? 0 : 1, order.indexOf(b.verdict), -b.score];
    return compareList(ka, kb) || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0);
  }
  function or(words) { return words.length === 1 ? words[0] : words.slice(0, -1).join(", ") + " or " + words[words.length - 1]; }
  function stack(t, cell, facts) {  // on_stack: a cell whose packages the stack names none of stays unknown
    var w = t.words, decided = decide(t, cell, facts, true, w.stack);
    if (decided[0] !== "applies") return decided;
    var given = facts.packages || {}, packages = [], ranged = {};
    cell.components.forEach(function (item) {
      if (packages.indexOf(item.package) < 0) packages.push(item.package);
      if (item.affected || item.fixed_in) ranged[item.package] = true;
    });
    var named = packages.filter(function (p) { return Object.prototype.hasOwnProperty.call(given, p); });
    if (!named.length) return ["unknown", fill(w.stack_unnamed, { subject: w.stack, packages: or(packages), why: decided[1] })];
    var unranged = named.filter(function (p) { return !ranged[p]; }).map(function (p) { return p + " " + given[p]; });
    if (unranged.length) decided[1] += fill(w.unranged, { packages: unranged.join(", ") });
    return decided;
  }
  // Every function takes the exported table `t` (kb.records.verdict.export(): the verdicts' order,
  // the reasons' words, the capability table), as the pages find it in their JSON.
  window.kbVerdict = { decide: decide, stack: stack, version: version, arch: arch, capability: capability,
                       rank: function (t, hits) { return hits.slice().sort(function (a, b) { return rankCompare(t.order, a, b); }); } };
})();

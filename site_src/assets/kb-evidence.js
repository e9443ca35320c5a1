// Evidence (kb/triage/evidence.py) in the browser: a cell shown by identifiers seen together within a
// window of lines, for logs that print no error line. Terms are case-sensitive whole identifiers;
// numbers are patterns over normalised lines. The window is the first line e where every term and
// number was last seen at or after e - window + 1; those last sightings are the lines shown.
// The rules are triage/patterns.json `evidence` (evidence.export); `scan` adds what it finds to
// kbMatch's hits, as evidence.merge does.
(function () {
  "use strict";

  function compile(rules) {
    (rules || []).forEach(function (rule) {
      rule.regexes = rule.numbers.map(function (source) { return new RegExp(source); });
    });
    return rules || [];
  }

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

  function scan(e, lines, hits) {
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
          if (!(i in normalised)) normalised[i] = e.norm(line);
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

  window.kbEvidence = { compile: compile, scan: scan };
})();

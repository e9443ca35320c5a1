// Log triage in the browser (kb/triage/match.py): the same rules as `kb match` (exported to
// triage/patterns.json), applied line by line. Candidate lines are those containing a rule's anchor
// word; they are normalised with the shared rules (kb-normalise.js, which the search box runs too),
// then tested against the compiled signature patterns; a rule's words spread over lines go to
// kbWrapped, identifiers seen together to kbEvidence, and each matched cell's verdict is kbVerdict's
// on the facts kbLogFacts reads. Loaded after those four; tests/vectors/match.json holds the vectors.
(function () {
  "use strict";

  // Rules by their anchor word, each with its place in the list (`key`) and its compiled pattern.
  function byAnchorOf(list) {
    var byAnchor = {};
    list.forEach(function (rule, key) {
      rule.key = key;
      rule.regex = new RegExp(rule.source);
      (byAnchor[rule.anchor] = byAnchor[rule.anchor] || []).push(rule);
    });
    return byAnchor;
  }

  // The engine `match` runs, from triage/patterns.json as the build writes it.
  function compile(data) {
    var byAnchor = byAnchorOf(data.rules);
    var familyRules = byAnchorOf(data.families.rules);
    var rules = kbNormalise.compile(data.normalise);
    return { byAnchor: byAnchor, anchors: Object.keys(byAnchor).sort(), window: data.window,
             families: { byAnchor: familyRules, anchors: Object.keys(familyRules).sort(),
                         answers: data.families.answers, also: data.families.also },
             wrap: kbWrapped.compile(data.wrapped), evidence: kbEvidence.compile(data.evidence), cells: data.cells,
             logfacts: data.logfacts, factsBytes: data.facts_bytes, verdict: data.verdict,
             // A line normalised as the search box does it (kb-normalise.js, normalise.normalise).
             norm: function (line) { return kbNormalise.normalise(rules, data.passes, line); } };
  }

  // An entry's score from its matched signatures ([text, weight]) and the lines each matched on:
  // a signature whose every line a heavier one (the longer text among equals) also matched is not
  // counted (match.signature_score).
  function signatureScore(signatures, found) {
    // Length and order by code point, as Python's len() and > see a str: UTF-16 would count a
    // character beyond the BMP twice and order it below U+E000-U+FFFF. Each text's code points are
    // taken once: the comparisons below are as many as pairs of signatures.
    var points = signatures.map(function (s) { return Array.from(s[0], function (c) { return c.codePointAt(0); }); });
    function above(i, j) {  // signature i ranks above j: weight, then length, then text
      var a = signatures[i], b = signatures[j], x = points[i], y = points[j];
      if (a[1] !== b[1]) { return a[1] > b[1]; }
      if (x.length !== y.length) { return x.length > y.length; }
      for (var k = 0; k < x.length; k++) { if (x[k] !== y[k]) { return x[k] > y[k]; } }
      return false;
    }
    var total = 0;
    signatures.forEach(function (s, i) {
      var covered = signatures.some(function (o, j) {
        return o[0] !== s[0] && above(j, i) && found[s[0]].every(function (n) { return found[o[0]].indexOf(n) !== -1; });
      });
      if (!covered) { total += s[1]; }
    });
    return Math.round(total * 1000) / 1000;
  }

  function record(hits, rule, numbers, texts) {
    var hit = hits[rule.entry] = hits[rule.entry] ||
      { entry: rule.entry, url: rule.url, title: rule.title, score: 0, lines: [], texts: {}, signatures: [] };
    hit.specific = hit.specific || !rule.generic;
    // (line, capability) pairs its matched literals fix: not the GPU's (match.Hit.own).
    hit.own = hit.own || {};
    numbers.forEach(function (n) { rule.own.forEach(function (c) { hit.own[JSON.stringify([n, c])] = true; }); });
    if (!hit.signatures.some(function (s) { return s[0] === rule.signature; })) {
      hit.signatures.push([rule.signature, rule.weight]);
    }
    hit.found = hit.found || {};
    var lines = hit.found[rule.signature] = hit.found[rule.signature] || [];
    numbers.forEach(function (n) { if (lines.indexOf(n) === -1) { lines.push(n); } });
    numbers.forEach(function (n) { if (!(n in hit.texts)) { hit.lines.push(n); hit.texts[n] = texts[n - 1]; } });
  }

  // A match that goes through the log's lines a slice at a time: `step(n)` reads up to n more lines,
  // so the page can yield between slices (a big paste leaves the tab responsive, and can be
  // stopped); `result()` then gives the hits, best first, with their verdicts, and `families()` the
  // family answer of the same lines.
  function start(e, text) {
    var hits = {}, familyHits = {};
    var lines = text.split("\n");
    var all = lines.map(function (raw) { return raw.replace(/\r$/, ""); });
    var wrapped = kbWrapped.finder(e, all);
    var next = 0;
    function scan(i) {
      var line = all[i];
      var lower = line.toLowerCase();
      var anchored = [];
      e.anchors.forEach(function (a) { if (lower.indexOf(a) >= 0) anchored = anchored.concat(e.byAnchor[a]); });
      var candidates = anchored.filter(function (rule) {
        return rule.words.every(function (w) { return lower.indexOf(w) >= 0; });
      });
      var confirmed = matchLine(e, line, lower, candidates);
      confirmed.forEach(function (rule) { record(hits, rule, [i + 1], all); });
      familyLine(e, familyHits, line, i);
      // A rule the line holds a search word of but not all its words may be wrapped over lines;
      // at most e.wrap.rules of them per line (kb.triage.wrapped.RULES).
      var ascii = kbWrapped.asciiLower(line), looked = 0;
      anchored.forEach(function (rule) {
        if (looked > e.wrap.rules) return;
        if (confirmed.indexOf(rule) >= 0 || rule.words.every(function (w) { return ascii.indexOf(w) >= 0; })) return;
        if (!wrapped.mayShow(rule, i) || ++looked > e.wrap.rules) return;
        wrapped.find(rule, i, i).forEach(function (run) {
          var numbers = [];
          for (var n = run[0]; n <= run[1]; n++) numbers.push(n + 1);
          record(hits, rule, numbers, all);
        });
      });
    }
    return {
      total: lines.length,
      at: function () { return next; },
      done: function () { return next >= lines.length; },
      step: function (count) { for (var end = Math.min(lines.length, next + count); next < end; next++) scan(next); },
      result: function () {
        Object.keys(hits).forEach(function (k) {
          hits[k].lines.sort(function (a, b) { return a - b; });
          hits[k].score = signatureScore(hits[k].signatures, hits[k].found); // once, from every line each matched
        });
        return finish(e, text, lines, hits);
      },
      // The family answer of the lines read so far (the page shows it only when no entry matched).
      families: function () { return familiesOf(familyHits); }
    };
  }

  function match(e, text) {
    var run = start(e, text);
    run.step(run.total);
    return run.result();
  }

  // The rules of `candidates` (anchor and words in the line) whose pattern matches the line.
  function matchLine(e, line, lower, candidates) {
    if (!candidates.length) return [];
    // Long lines are matched in windows around their anchor words, as in `kb match`.
    var texts;
    if (line.length <= 2 * e.window) {
      texts = [e.norm(line)];
    } else {
      var starts = {};
      candidates.forEach(function (rule) { var p = lower.indexOf(rule.anchor); if (p >= 0) starts[p] = true; });
      texts = Object.keys(starts).map(Number).sort(function (a, b) { return a - b; }).map(function (p) {
        return e.norm(line.slice(Math.max(0, p - e.window), p + e.window));
      });
    }
    return candidates.filter(function (rule) { return texts.some(function (t) { return rule.regex.test(t); }); });
  }

  function finish(e, text, lines, hits) {
    kbEvidence.scan(e, lines, hits);
    // What the log says of its machine decides each cell's verdict, as in `kb match`: the facts of
    // the log's first e.factsBytes bytes of UTF-8, the lines whole within them (match.read_facts).
    var facts = withoutOwn(kbLogFacts.read(e.logfacts, head(text, e.factsBytes)), hits);
    return kbVerdict.rank(e.verdict, Object.keys(hits).map(function (k) { return hits[k]; }).map(function (hit) {
      var best = hit.signatures[0];
      hit.signatures.forEach(function (s) { if (s[1] > best[1]) best = s; });
      hit.signature = best[0];
      hit.specific = !!hit.specific;
      var decided = kbVerdict.decide(e.verdict, e.cells[hit.entry], facts, hit.specific, undefined,
                                     hit.signatures.map(function (s) { return s[0]; }));
      hit.verdict = decided[0];
      hit.why = decided[1];
      hit.tied = kbVerdict.tie(e.verdict, e.cells[hit.entry], facts);  // what the log shows of its packages
      return hit;
    }));
  }

  // `facts` less each GPU known only by a number that a line shows inside the literal of a
  // signature it matched (logfacts.without_own): that number is what the code names, not the GPU.
  function withoutOwn(facts, hits) {
    if (!facts.gpus) return facts;
    var own = {};
    Object.keys(hits).forEach(function (k) { Object.keys(hits[k].own || {}).forEach(function (p) { own[p] = true; }); });
    var kept = facts.gpus.filter(function (g) {
      return g.name !== null || !own[JSON.stringify([g.line, g.compute_capability])];
    });
    if (kept.length === facts.gpus.length) return facts;
    var lines = {};
    Object.keys(facts.lines).forEach(function (k) { if (k.indexOf("gpus.") !== 0) lines[k] = facts.lines[k]; });
    kept.forEach(function (g, i) { lines["gpus." + i] = g.line; });
    facts.gpus = kept.length ? kept : null;
    facts.lines = lines;
    return facts;
  }

  // The lines of `text` whole within its first `bytes` bytes of UTF-8 (all of it when shorter).
  function head(text, bytes) {
    if (text.length * 3 <= bytes) return text;  // at most 3 bytes of UTF-8 per UTF-16 code unit
    var encoded = new TextEncoder().encode(text);
    if (encoded.length <= bytes) return text;
    var cut = encoded.lastIndexOf(10, bytes - 1);
    return new TextDecoder().decode(encoded.subarray(0, cut < 0 ? 0 : cut + 1));
  }

  // The family answer (kb/triage/familyanswer.py), for a log no entry matches: the families whose
  // generic lines the log shows, each line tested whole (anchor, words, pattern: matchLine), in the
  // order of their first line, then id; a family's signature is the first of its rules, in the
  // exported order, that its first line satisfies. The page shows it below any entry, marked.
  // `familyLine` adds what line `i` (0-based) shows to `hits`; `start` calls it on each line as it
  // goes (a big paste stays responsive) and its `families()` gives the answer.
  function familyLine(e, hits, raw, i) {
    var f = e.families, line = raw.replace(/\r+$/, ""), lower = line.toLowerCase(), anchored = [];
    f.anchors.forEach(function (a) { if (lower.indexOf(a) >= 0) anchored = anchored.concat(f.byAnchor[a]); });
    if (!anchored.length) return;
    var candidates = anchored.filter(function (rule) {
      return rule.words.every(function (w) { return lower.indexOf(w) >= 0; });
    });
    matchLine(e, line, lower, candidates).sort(function (a, b) { return a.key - b.key; }).forEach(function (rule) {
      var hit = hits[rule.entry];
      if (!hit) {
        var about = f.answers[rule.entry];
        hit = hits[rule.entry] = { answer: "family", entry: null, family: rule.entry, title: about.title,
                                   url: about.url, how_to_tell: about.how_to_tell, check: about.check,
                                   fix: about.fix, lines: [], texts: {}, signature: rule.signature };
      }
      if (!((i + 1) in hit.texts)) { hit.lines.push(i + 1); hit.texts[i + 1] = line; }
    });
  }

  function familiesOf(hits) {
    return Object.keys(hits).map(function (k) { return hits[k]; }).sort(function (a, b) {
      return a.lines[0] - b.lines[0] || (a.family < b.family ? -1 : a.family > b.family ? 1 : 0);
    });
  }

  // What the log says of its machine, as `finish` reads it (the page's scope and pip list notes):
  // less, given `hits`, a GPU known only by a number inside a literal one of them matched.
  function facts(e, text, hits) {
    var read = kbLogFacts.read(e.logfacts, head(text, e.factsBytes));
    return hits ? withoutOwn(read, hits) : read;
  }

  // The family answer a log gets beside its hits (familyanswer.wanted and of_lines): none when
  // every GPU the log shows is outside sm_120/sm_121; all of `families` when no entry matched; the
  // families on a line a hit matched, to come first, when no hit rests on a line not marked generic
  // and none that is not ruled out is proven (kbVerdict.proven: a decisive line, a version in its
  // range); else none.
  function placed(e, text, hits, families) {
    var known = facts(e, text, hits);
    if (kbVerdict.outOfScope(e.verdict, known.gpus)) return [];
    var generic = hits.every(function (h) {
      return !h.specific && (h.verdict === "ruled-out" ||
        !kbVerdict.proven(e.verdict, e.cells[h.entry], known, h.signatures.map(function (s) { return s[0]; })));
    });
    if (!generic) return [];
    if (!hits.length) return families;
    var matched = {};
    hits.forEach(function (h) { h.lines.forEach(function (n) { matched[n] = true; }); });
    return families.filter(function (f) { return f.lines.some(function (n) { return matched[n]; }); });
  }

  window.kbMatch = { compile: compile, start: start, match: match, facts: facts, placed: placed,
                    score: signatureScore };
})();

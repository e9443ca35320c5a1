// Messages wrapped over two or three lines (kb/triage/wrapped.py, whose docstring gives the rules
// 1-5 applied here in the same order; triage/patterns.json `wrapped` holds its data, which
// `compile` reads). `e` is the engine kbMatch.compile makes: its normalisation rules and `wrap`.
(function () {
  "use strict";

  function compile(w) {
    return { lines: w.lines, long: w.long, rules: w.rules, fence: w.fence, ansi: new RegExp(w.ansi, "g"),
             prefixes: w.prefixes.map(function (source) { return new RegExp(source); }) };
  }

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

  function broken(word, lines) {  // broken over two consecutive lines (null: no line), as wrapped._broken
    for (var k = 0; k + 1 < lines.length; k++) {
      if (lines[k] === null || lines[k + 1] === null) continue;
      var first = lines[k].replace(/[ \t]+$/, "");
      for (var m = 1; m < word.length; m++) {
        if (first.slice(-m) === word.slice(0, m) && first.length >= m && lines[k + 1].indexOf(word.slice(m)) >= 0) return true;
      }
    }
    return false;
  }

  function isWord(c) { return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95; }  // [a-z0-9_]

  // The last run of [a-z0-9_] in a line, read from its end (wrapped.last_word): linear in the line.
  function lastWord(line) {
    var end = line.length;
    while (end > 0 && !isWord(line.charCodeAt(end - 1))) end--;
    var start = end;
    while (start > 0 && isWord(line.charCodeAt(start - 1))) start--;
    return start < end ? line.slice(start, end) : null;
  }

  function inText(e, word, rule) {  // wrapped._in_text
    if (word === null || /[0-9]/.test(word)) return true;
    if (rule.forms === undefined) rule.forms = [rule.signature.toLowerCase(), e.norm(rule.signature)];
    return rule.forms.some(function (form) { return form.indexOf(word) >= 0; });
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

  // The lines a..b (two or three) of `texts` that show `rule` wrapped, found around lines lo..hi.
  function finder(e, texts) {
    var ascii = {}, last = {}, parts = {}, normal = {}, shown = {}, w = e.wrap;
    function asc(i) { if (!(i in ascii)) ascii[i] = asciiLower(texts[i]); return ascii[i]; }
    function lastOf(i) { if (!(i in last)) last[i] = lastWord(asc(i)); return last[i]; }
    // Each word of the rule in line i, in a line around it or broken over two (wrapped.Lines.may_show).
    function mayShow(rule, i) {
      if (texts[i].length > w.long) return false;
      var around = [];
      for (var k = i - w.lines + 1; k < i + w.lines; k++) {
        around.push(k >= 0 && k < texts.length && texts[k].length <= w.long ? asc(k) : null);
      }
      return rule.words.every(function (word) {
        return around.some(function (l) { return l !== null && l.indexOf(word) >= 0; }) || broken(word, around);
      });
    }
    function part(i) { if (!(i in parts)) parts[i] = splitLine(w, texts[i]); return parts[i]; }
    function shows(rule, a, b) {
      var key = rule.key + ":" + a + ":" + b;
      if (!(key in shown)) shown[key] = decide(rule, a, b);
      return shown[key];
    }
    function alone(rule, i) {  // the line shows the rule on its own (lines of at most `long` characters)
      var lower = texts[i].toLowerCase();
      return asc(i).indexOf(rule.anchor) >= 0 && rule.words.every(function (word) { return lower.indexOf(word) >= 0; }) &&
        rule.regex.test(e.norm(texts[i]));
    }
    function decide(rule, a, b) {
      if (a < 0 || b >= texts.length) return false;
      var span = [];
      for (var i = a; i <= b; i++) span.push(i);
      if (span.some(function (k) { return texts[k].length > w.long; })) return false;
      var lowered = span.map(asc), n = lowered.length;
      if (!span.slice(0, -1).every(function (k) { return inText(e, lastOf(k), rule); })) return false;
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
      if (!p.slice(1).every(function (x) {
        var first = /[a-z0-9_]+/.exec(asciiLower(x[2]));
        return inText(e, first && first[0], rule);
      })) return false;
      if (b - a === 2 && (shows(rule, a, a + 1) || shows(rule, a + 1, b))) return false;
      var k = a + ":" + b;
      if (!(k in normal)) normal[k] = joins(p.map(function (x) { return x[2]; })).map(function (t) { return e.norm(t); });
      return normal[k].some(function (t) { return rule.regex.test(t); });
    }
    return { mayShow: mayShow, find: function (rule, lo, hi) {
      var found = [];
      for (var size = 2; size <= w.lines; size++) {
        for (var a = hi - size + 1; a <= lo; a++) if (shows(rule, a, a + size - 1)) found.push([a, a + size - 1]);
      }
      return found;
    } };
  }

  window.kbWrapped = { compile: compile, finder: finder, asciiLower: asciiLower };
})();

// The new-failure request (kb/triage/request.py) in the browser: the same rules and text as `kb match`,
// exported in triage/patterns.json `request`: secrets written {secret} first, the last
// error-looking lines (a library's WARN line among them) without their log prefixes, varying parts
// as the pattern grammar's placeholders, the GPU and versions named; nothing else of the log. The
// title is the line titleRank puts highest: the last of that rank before the first traceback, else
// the first after it. tests/vectors/request.json holds the vectors both pass.
(function () {
  "use strict";

  function compile(r) {
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
        // Only a run holding a digit and a letter is a secret (a long identifier is not), unless
        // it is plain words (a file path, a snake_case name: secrets.plain_words).
        return [regex, function (run) {
          return /[0-9]/.test(run) && /[A-Za-z]/.test(run) && !plainWords(r.secret_words, run) ? p.replacement : run;
        }];
      }),
      prefixes: r.prefixes.map(function (p) { return [new RegExp(p.pattern, "gi"), p.replacement]; }),
      placeholders: r.placeholders.map(function (p) { return [new RegExp(p.pattern, "g"), p.replacement]; })
    };
  }

  // secrets.plain_words: pieces between the separators, one a `/` or `_`, each a word in one case.
  function plainWords(w, run) {
    if (!new RegExp(w.joined).test(run)) return false;
    var piece = new RegExp(w.piece);
    return run.split(new RegExp(w.separators)).every(function (part) { return piece.test(part); });
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
    var lines = [], benign = Object.create(null), gpus = {}, versions = {}, before = {}, after = {}, seenTraceback = false, m;
    text.split("\n").forEach(function (raw) {
      raw = raw.replace(/\r$/, "").slice(0, q.maxChars * 4);
      if (errorish(q, raw)) {
        var line = errorLine(q, raw);
        if (line) {
          var at = lines.indexOf(line);
          if (at >= 0) lines.splice(at, 1);
          lines.push(line);
          benign[line] = harmless(q, raw);
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
      "```text"].concat(lines.length ? lines.filter(function (l) { return !benign[l]; })
                                            .concat(lines.filter(function (l) { return benign[l]; }))
                                     : ["(no error-looking line found)"]);
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

  window.kbRequest = { compile: compile, newCell: newCell, issueUrl: issueUrl, sections: sections };
})();

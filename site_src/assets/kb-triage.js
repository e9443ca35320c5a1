// The triage page (templates/pages/triage.html): a pasted, dropped or sample log matched by kbMatch
// (kb-match.js, with kb-wrapped, kb-evidence, kb-logfacts and kb-verdict.js, each the twin of its
// module in kb/triage/ or kb/records/verdict.py), the results shown best first with the words the
// build wrote for each cell, the family answer (kbMatch.placed: alone when nothing matches, then with
// kbRequest's new-failure request; first, marked, when every match rests only on a generic line and
// nothing decides, the entries then listed below it as also printing that line).
(function () {
  "use strict";

  var form = document.getElementById("kb-triage");
  if (!form) return;
  var log = document.getElementById("kb-triage-log");
  var file = document.getElementById("kb-triage-file");
  var status = form.querySelector(".kb-triage__status");
  var scope = form.querySelector(".kb-triage__scope");
  var hint = form.querySelector(".kb-triage__hint");
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
  var progress = form.querySelector(".kb-triage__progress");
  var stop = document.getElementById("kb-triage-stop");
  var SLICE_MS = 40;  // the page matches for this long, then lets the browser draw and take clicks
  var running = null;  // the match under way: {stopped}

  function load() {
    if (!engine) {
      engine = fetch(patternsUrl).then(function (r) {
        if (!r.ok) throw new Error("patterns.json: HTTP " + r.status);
        return r.json();
      }).then(function (data) {
        var e = kbMatch.compile(data);
        e.request = kbRequest.compile(data.request);
        e.verdicts = data.verdicts;
        e.results = data.results || {};
        return e;
      });
    }
    return engine;
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
      // Why the badge is not what the fixes suggest (kb.records.state): below the badge, not in it.
      if (about.status_reason) li.appendChild(element("p", "kb-status-reason", about.status_reason));
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
    li.appendChild(matchedLines(hit, only));
    return li;
  }

  // The log's lines that showed a result, folded under a single summary (open under a single result).
  function matchedLines(hit, only) {
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
    return lines;
  }

  // A family answer (kbMatch.placed): marked as such (`first`: above entries that match only a
  // generic line, rather than for a log no entry matches), with how to tell, the check and the
  // general fix from the family's record, and a link to its page.
  function familyResult(hit, only, first) {
    var site = new URL("..", patternsUrl);
    var li = element("li", "kb-triage__hit kb-triage__family");
    li.appendChild(element("p", "kb-triage__family-label", first
      ? "Family answer: every known failure that matches rests only on a generic line, which other GPUs and " +
        "other causes print too; they follow below."
      : "Family answer: no entry matches, but the log shows a line this family of failures prints."));
    var title = element("h3", "kb-triage__title");
    var a = element("a", "kb-triage__link", hit.title);
    a.href = new URL(hit.url, site).pathname;
    title.appendChild(a);
    li.appendChild(title);
    [["How to tell: ", hit.how_to_tell, "span"], ["Check: ", hit.check, "code"], ["Fix: ", hit.fix, "span"]]
      .forEach(function (part) {
        var p = element("p", "kb-triage__do");
        p.appendChild(element("strong", "", part[0]));
        p.appendChild(element(part[2], "", part[1]));
        li.appendChild(p);
      });
    li.appendChild(matchedLines(hit, only));
    return li;
  }

  function render(text, hits, found) {
    list.textContent = "";
    // The family answer (kbMatch.placed, as `kb match`): alone when no entry matched; first when
    // every entry matched only generic lines and nothing decides, each entry then marked as one
    // that also prints the line.
    var families = kbMatch.placed(engineNow, text, hits, found);
    var first = hits.length > 0 && families.length > 0;
    families.forEach(function (hit) { list.appendChild(familyResult(hit, families.length === 1 && !first, first)); });
    hits.forEach(function (hit) {
      var li = result(hit, hits.length === 1 && !first);
      if (first) li.insertBefore(element("p", "kb-triage__also", "Also prints this line: this known failure " +
        "matches only that generic line, and nothing in the log decides for it."), li.firstChild);
      list.appendChild(li);
    });
    var some = hits.length + " known failure" + (hits.length === 1 ? "" : "s");
    status.textContent = first ? "The family answer comes first: the " + some + " that match" +
      (hits.length === 1 ? "es" : "") + " this log rest" + (hits.length === 1 ? "s" : "") + " only on a generic line."
      : hits.length ? some + " match" + (hits.length === 1 ? "es" : "") + " this log, best first."
      : "No known failure matches this log." + (families.length ? " Its lines fit " + (families.length === 1 ?
        "a family of failures" : families.length + " families of failures") + ", below." : "");
    fresh.hidden = hits.length > 0;
    // The log's GPU outside the index, and a version that would decide: what `kb match` notes too.
    var facts = kbMatch.facts(engineNow, text, hits);
    note(scope, kbVerdict.outOfScope(engineNow.verdict, facts.gpus));
    note(hint, kbVerdict.pipHint(engineNow.verdict, hits.map(function (h) { return [h.verdict, engineNow.cells[h.entry]]; }), facts));
    var request = hits.length ? { title: "", text: "" } : kbRequest.newCell(engineNow.request, text);
    issue.value = request.text;
    titleBox.value = request.title;
    link();
    copied.textContent = "";
    form.setAttribute("data-results", JSON.stringify(hits.map(function (h) {
      var shown = { entry: h.entry, score: h.score, lines: h.lines, signature: h.signature, url: h.url,
                    verdict: h.verdict, why: h.why, generic_only: !h.specific };
      if (first) shown.answer = engineNow.families.also;  // as `kb match --json` marks it
      return shown;
    })));
    form.setAttribute("data-families", JSON.stringify(families.map(function (h) {
      return { answer: h.answer, entry: h.entry, family: h.family, title: h.title, url: h.url,
               lines: h.lines.slice(0, 5), signature: h.signature, check: h.check, fix: h.fix };
    })));
    // The answer is below the box the reader just used: take them there.
    heading.hidden = false;
    heading.scrollIntoView({ block: "start" });
    heading.focus({ preventScroll: true });
  }

  function note(node, words) {
    node.hidden = !words;
    node.textContent = words ? words.charAt(0).toUpperCase() + words.slice(1) + "." : "";
  }

  // The issue link follows the title and text as the reader leaves them.
  function link() {
    if (open) open.href = fresh.hidden ? "#" : kbRequest.issueUrl(open.getAttribute("data-base"), titleBox.value, issue.value);
  }

  // The log is matched a slice of lines at a time (kbMatch.start), with the browser free to draw
  // and take a click between slices: a big paste shows how far it got and can be stopped.
  function run(text) {
    if (running) running.stopped = true;
    var job = running = { stopped: false };
    form.removeAttribute("data-results");
    form.removeAttribute("data-families");
    status.textContent = "Matching\u2026";
    load().then(function (e) {
      if (job.stopped) return;
      engineNow = e;
      var match = kbMatch.start(e, text);
      (function slice() {
        if (job.stopped) return;
        var began = Date.now();
        while (!match.done() && Date.now() - began < SLICE_MS) match.step(200);
        if (!match.done()) {
          progress.hidden = false;
          status.textContent = "Matching\u2026 line " + match.at().toLocaleString("en") + " of " +
            match.total.toLocaleString("en");
          setTimeout(slice, 0);
          return;
        }
        progress.hidden = true;
        running = null;
        render(text, match.result(), match.families());
      })();
    }).catch(function (error) {
      progress.hidden = true;
      running = null;
      status.textContent = "Triage is unavailable: " + error;
    });
  }

  stop.addEventListener("click", function () {
    if (!running) return;
    running.stopped = true;
    running = null;
    progress.hidden = true;
    status.textContent = "Stopped: nothing was matched. Paste a shorter part of the log (the lines around the error) and try again.";
  });

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

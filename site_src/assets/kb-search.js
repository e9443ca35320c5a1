// The header search box. A pasted line is first normalised as the triage page normalises it
// (kb-normalise.js running the rules of kb/records/normalise.py), then search-only rules take off what
// varies around a literal (log prefixes, Xid prefixes, temporary file names) and numbers are
// masked. Two searches run side by side:
// - the literal strings of every cell (search/literals.json and the shards it names, fetched as
//   a query needs them) are scored against the query, word by word, forgiving a typo per word,
//   a cut first or last word and changed numbers;
// - Pagefind searches the page text (summaries, mechanisms), which the literals do not hold.
// Strong literal matches come first, then Pagefind's results, then weaker literal matches.
// Results are built as DOM text: nothing from the index is inserted as HTML except Pagefind's
// <mark> highlights, rebuilt node by node.
(function () {
  "use strict";
  var root = document.getElementById("kb-search");
  if (!root) return;
  var bundle = new URL(root.getAttribute("data-bundle"), document.baseURI).href;
  var siteRoot = new URL("..", bundle);
  var literalsUrl = new URL("search/literals.json", siteRoot).href;
  var triageUrl = new URL("triage/", siteRoot).href;
  var input = root.querySelector("input[type=search]");
  var list = root.querySelector(".kb-search__results");
  var status = root.querySelector(".kb-search__status");
  var selects = root.querySelectorAll("select[data-filter]");
  var scopeNote = document.createElement("p"); // above the results: the query names a GPU the index does not cover
  scopeNote.className = "kb-search__scope";
  root.insertBefore(scopeNote, status);
  var pagefind = null;
  var literals = null;
  var generation = 0;
  var CANDIDATES = 10; // Pagefind results whose data is loaded
  var SHOWN = 10;
  var GPU_NUMBER = /^(?:(?:rtx|gb|b)\s*)?\d{2,5}(?:\s*(?:ti|d))?$/;
  var showAll = false; // "Show all N results", or a ?q= link: every result, not the first SHOWN
  var STRONG = 0.6; // a literal scoring this much is put before Pagefind's results
  var WEAK = 0.4; // below this a literal is not shown at all
  var ASSEMBLED = 0.2; // taken off the score of a literal assembled from source (a tie goes to one seen)
  var MAX_TOKENS = 80; // words of a pasted line looked at
  var CARRIED = 8000; // characters carried over to the triage page

  list.id = list.id || "kb-search-results";
  list.setAttribute("role", "listbox");
  input.setAttribute("role", "combobox");
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-expanded", "false");

  function trim(text) {
    return text.replace(/^[\s"'\u201c\u201d`]+|[\s"'\u201c\u201d`]+$/g, "").replace(/\s+/g, " ");
  }

  // Pagefind, with every shard of the index merged in (kb-shards.json lists their folders, the
  // first holding pagefind.js; kb/site/index.py). A site without searched pages has no shard: its
  // searches find no page.
  var NO_PAGES = {
    search: function () { return Promise.resolve({ results: [] }); },
    filters: function () { return Promise.resolve({}); }
  };

  function load() {
    if (!pagefind) {
      var listed = fetch(bundle + "kb-shards.json").then(function (r) {
        if (!r.ok) throw new Error("kb-shards.json: HTTP " + r.status);
        return r.json();
      });
      var imported = import(bundle + "pagefind.js").then(null, function (error) { return { failed: error }; });
      pagefind = Promise.all([listed, imported]).then(function (both) {
        var folders = both[0].indexes, module = both[1];
        if (!folders.length) return NO_PAGES;
        if (module.failed) throw module.failed;
        var options = { baseUrl: siteRoot.pathname };
        return module.options(options).then(function () {
          return Promise.all(folders.slice(1).map(function (folder) {
            return module.mergeIndex(new URL(folder, bundle).href, options);
          }));
        }).then(function () { return module; });
      });
    }
    return pagefind;
  }

  // ---- The literal strings, prepared once -------------------------------------------------

  function weight(token) { return 1 + Math.min(token.length, 12); }

  // Runs of letters and digits, a letter beyond ASCII part of its word (search.words_of).
  function tokens(masked) {
    return masked.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  }

  // The rules and the shard table (search/literals.json), fetched once; the shards of literal
  // strings (search/literals/<n>.json, kb.site.search.literal_files) as a query needs them: those of
  // its `keys` longest uncommon words (kb.site.search.KEYS), or of its pair key when all its words are common.
  function loadLiterals() {
    if (!literals) {
      literals = fetch(literalsUrl).then(function (r) {
        if (!r.ok) throw new Error("literals.json: HTTP " + r.status);
        return r.json();
      }).then(function (data) {
        var scope = { covers: data.scope.covers, words: data.scope.words,
                      models: data.scope.models.map(function (m) { return [new RegExp(m.pattern, "i"), m.arch]; }) };
        return { rules: kbNormalise.compile(data.normalise.concat(data.search)), mask: kbNormalise.compile(data.mask), scope: scope,
                 passes: data.passes, filters: data.filters, shards: data.shards, keys: data.keys, common: new Set(data.common),
                 loaded: new Map(), pages: [], pageAt: new Map(), strings: [], held: new Set(), vocab: [],
                 ids: new Map(), postings: [], memo: new Map() };
      });
    }
    return literals;
  }

  // The sentence kb.records.verdict.out_of_scope writes (as My stack, the triage page and `kb match`
  // say it) when the query names GPUs and every one is outside the index's architectures: "this
  // index covers sm_120/sm_121; your GPU is H100 (sm_90)"; null otherwise. The GPU table is
  // kb.records.gpus.MODELS (search/literals.json `scope`), the first model matching a name wins.
  function outOfScope(scope, raw) {
    var named = [];
    var text = trim(raw).slice(0, 200);
    scope.models.forEach(function (model, i) {
      var re = new RegExp(model[0].source, "gi"), m;
      while ((m = re.exec(text)) !== null) {
        if (!m[0]) { re.lastIndex++; continue; }
        var name = m[0];
        var first = scope.models.findIndex(function (other) { return other[0].test(name); });
        if (first === i) named.push({ at: m.index, name: name, arch: model[1] });
      }
    });
    if (!named.length || named.some(function (g) { return !g.arch || scope.covers.indexOf(g.arch) >= 0; })) return null;
    var gpus = Array.from(new Set(named.sort(function (a, b) { return a.at - b.at; }).map(function (g) {
      return scope.words.scope_gpu.replace("{name}", g.name).replace("{arch}", g.arch);
    })));
    var words = scope.words.out_of_scope.replace("{scope}", scope.covers.join("/")).replace("{gpus}", gpus.join(", "));
    return words.charAt(0).toUpperCase() + words.slice(1) + ".";
  }

  var PAGEFIND_WORDS = 4; // words of a query Pagefind searches for (each costs a chunk per index shard)

  function shardOf(word, shards) {
    var h = 0x811c9dc5, bytes = new TextEncoder().encode(word);  // of its UTF-8, as search.shard_of
    for (var i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193) >>> 0;
    return h % shards;
  }

  function longest(words) {
    return Array.from(new Set(words)).sort(function (a, b) {
      return b.length - a.length || (a < b ? -1 : a > b ? 1 : 0);
    });
  }

  // The index with every shard the query `raw` needs.
  function literalsFor(raw) {
    return loadLiterals().then(function (index) {
      var words = prepare(index, raw).tokens.slice(0, MAX_TOKENS);
      var keys = longest(words.filter(function (w) { return !index.common.has(w); })).slice(0, index.keys);
      if (!keys.length && words.length) keys = [longest(words).slice(0, 2).sort().join(" ")];
      var wanted = Array.from(new Set(keys.map(function (k) { return shardOf(k, index.shards); })));
      return Promise.all(wanted.map(function (n) {
        if (!index.loaded.has(n)) {
          index.loaded.set(n, fetch(new URL("search/literals/" + n + ".json", siteRoot).href).then(function (r) {
            if (!r.ok) throw new Error("literals/" + n + ".json: HTTP " + r.status);
            return r.json();
          }).then(function (shard) { add(index, shard); }));
        }
        return index.loaded.get(n);
      })).then(function () { return index; });
    });
  }

  function add(index, shard) {
    shard.literals.forEach(function (item) {
      var number = item[0], p = item[1], text = item[2], assembled = item[3] === 1;
      if (index.held.has(number)) return;
      index.held.add(number);
      var at = index.pageAt.get(p);
      if (at === undefined) {
        var page = shard.pages[String(p)];
        page.href = new URL(page.url, siteRoot).pathname;
        at = index.pages.length;
        index.pageAt.set(p, at);
        index.pages.push(page);
      }
      var form = prepare(index, text);
      var ids = [];
      form.tokens.forEach(function (t) {
        var id = index.ids.get(t);
        if (id === undefined) {
          id = index.vocab.length;
          index.ids.set(t, id);
          index.vocab.push(t);
          index.postings.push([]);
        }
        if (ids.indexOf(id) < 0) ids.push(id);
      });
      var s = index.strings.length;
      ids.forEach(function (id) { index.postings[id].push(s); });
      var total = 0;
      ids.forEach(function (id) { total += weight(index.vocab[id]); });
      index.strings.push({ page: at, text: text, normal: form.normal, words: form.words, ids: ids,
                           total: total, numbers: form.numbers, assembled: assembled });
    });
    index.memo.clear(); // a word's matches depend on the words held
  }

  // The comparable forms of a line: normalised (shared rules, then the search-only ones), and
  // masked (numbers replaced), with the masked form's words (and joined, punctuation left out:
  // " runtimeerror no supported ... versions 0 ") and the numbers it lost.
  function prepare(index, text) {
    var normal = kbNormalise.normalise(index.rules, index.passes, trim(text));
    var masked = kbNormalise.normalise(index.mask, 1, normal);
    var words = tokens(masked);
    return { normal: normal, masked: masked, tokens: words, words: " " + words.join(" ") + " ",
             numbers: normal.match(/[0-9]+/g) || [] };
  }

  // Optimal string alignment distance (a swap of neighbours is one edit), or max + 1 beyond max.
  function distance(a, b, max) {
    if (Math.abs(a.length - b.length) > max) return max + 1;
    var before = null, prev = [], cur, i, j;
    for (j = 0; j <= b.length; j++) prev.push(j);
    for (i = 1; i <= a.length; i++) {
      cur = [i];
      var low = i;
      for (j = 1; j <= b.length; j++) {
        var v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (before && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, before[j - 2] + 1);
        cur.push(v);
        if (v < low) low = v;
      }
      if (low > max) return max + 1;
      before = prev;
      prev = cur;
    }
    return prev[b.length];
  }

  // How well query word `q` stands for literal word `t` (0..1). A typo per 4 letters, at most
  // two, is forgiven in words of 4 letters or more; the first and last words of a query may be
  // cut (a partial copy), so they may be the end or the start of a word.
  function similarity(q, t, cutStart, cutEnd) {
    if (q === t) return 1;
    var best = 0;
    if (q.length >= 2 && t.length > q.length) {
      var part = 0.6 + 0.35 * q.length / t.length;
      if (cutEnd && t.lastIndexOf(q, 0) === 0) best = part;
      if (cutStart && t.indexOf(q, t.length - q.length) >= 0) best = Math.max(best, part);
    }
    var allowed = q.length < 4 ? 0 : q.length < 8 ? 1 : 2;
    if (allowed) {
      var d = distance(q, t, allowed);
      if (d <= allowed) best = Math.max(best, 1 - 0.6 * d / Math.max(q.length, t.length));
    }
    return best;
  }

  // literal-word id -> similarity, for one query word (kept for the next keystrokes).
  function matches(index, q, cutStart, cutEnd) {
    var key = (cutStart ? "<" : "") + q + (cutEnd ? ">" : "");
    var found = index.memo.get(key);
    if (found) return found;
    found = new Map();
    var exact = index.ids.get(q);
    if (exact !== undefined) found.set(exact, 1);
    if (q.length >= 2) {
      index.vocab.forEach(function (t, id) {
        if (id === exact) return;
        var s = similarity(q, t, cutStart, cutEnd);
        if (s > 0) found.set(id, s);
      });
    }
    if (index.memo.size > 2000) index.memo.clear();
    index.memo.set(key, found);
    return found;
  }

  // Every page whose literal strings resemble the query, with its best literal and score.
  function scoreLiterals(index, raw, chosen) {
    var query = prepare(index, raw);
    var words = query.tokens.slice(0, MAX_TOKENS);
    if (!words.length) return [];
    var cutStart = /^[a-z0-9]/.test(query.masked);
    var cutEnd = /[a-z0-9]$/.test(query.masked);
    // The query's words as the literal would hold them: a cut edge need not end a word there.
    var inner = (cutStart ? "" : " ") + words.join(" ") + (cutEnd ? "" : " ");
    var seen = {};
    var terms = [];
    words.forEach(function (w, i) {
      var edgeStart = cutStart && i === 0, edgeEnd = cutEnd && i === words.length - 1;
      var key = w + (edgeStart ? "<" : "") + (edgeEnd ? ">" : "");
      if (seen[key]) return;
      seen[key] = true;
      terms.push({ weight: weight(w), sims: matches(index, w, edgeStart, edgeEnd) });
    });
    var queryTotal = 0;
    terms.forEach(function (term) { queryTotal += term.weight; });
    var candidates = new Set();
    terms.forEach(function (term) {
      term.sims.forEach(function (_, id) { index.postings[id].forEach(function (s) { candidates.add(s); }); });
    });
    var keys = Object.keys(chosen);
    var best = new Map();
    candidates.forEach(function (s) {
      var lit = index.strings[s];
      var page = index.pages[lit.page];
      if (keys.length && !keys.every(function (k) {
        return page.filters.some(function (f) { return index.filters[f] === k + ":" + chosen[k]; });
      })) return;
      var covered = 0;
      var byLiteralWord = new Map();
      terms.forEach(function (term) {
        var top = 0;
        lit.ids.forEach(function (id) {
          var v = term.sims.get(id) || 0;
          if (v > top) top = v;
          if (v > (byLiteralWord.get(id) || 0)) byLiteralWord.set(id, v);
        });
        covered += term.weight * top;
      });
      var back = 0;
      byLiteralWord.forEach(function (v, id) { back += weight(index.vocab[id]) * v; });
      var q = covered / queryTotal, l = lit.total ? back / lit.total : 0;
      var score = Math.max(q * (0.7 + 0.3 * l), l * (0.7 + 0.3 * q));
      // Word order counts too: a query held whole in the literal (a partial copy), or a literal
      // held whole in the query (a longer pasted line), the more so the more of it it is.
      if (inner.length >= 4 && lit.words.indexOf(inner) >= 0) {
        score += 0.15;
      } else if (lit.words.length >= 6 && query.words.indexOf(lit.words) >= 0) {
        score += 0.15 * lit.words.length / query.words.length;
      }
      // The same words with other numbers; the numbers themselves weigh more, so that a line
      // with the numbers of one literal and a word more lands there (`RuntimeError: ... [12]`).
      if (query.words === lit.words) score += 0.15;
      score += 0.3 * shared(query, lit.numbers);
      if (query.normal === lit.normal) score += 1;
      // A string assembled from the program's source, not seen in a report, loses every tie and
      // near-tie to one someone saw printed (a partial copy of it, held whole, still finds it).
      if (lit.assembled) score -= ASSEMBLED;
      var hit = { page: page, literal: lit.text, score: score, exact: query.normal === lit.normal,
                  numbers: agree(query, lit.numbers) };
      var held = best.get(lit.page);
      if (!held || before(hit, held) < 0) best.set(lit.page, hit);
    });
    return Array.from(best.values()).filter(function (hit) { return hit.score >= WEAK; })
      .sort(function (a, b) { return before(a, b) || a.page.href.localeCompare(b.page.href); });
  }

  // The order of literal matches, each rule deciding only where the ones before tie: strong
  // matches (STRONG) before weak ones; the query itself (once normalised); a literal whose numbers
  // agree with the query's before one that matched only once numbers were masked (the MLA
  // error's `Required: 102400` is not the fused-MoE config's `147456`, however many more of a
  // pasted line's words the other literal holds); then the score. Weights could not say this: a
  // masked literal holding every word of a pasted line outscores a shorter one with the right numbers.
  function before(a, b) {
    return ((b.score >= STRONG) - (a.score >= STRONG)) || (b.exact - a.exact) || (b.numbers - a.numbers)
      || (b.score - a.score);
  }

  // Whether a literal's numbers contradict the query's: the literal has a number the query does
  // not repeat while the query has one the literal lacks (102400 asked, 147456 held). A literal
  // whose numbers the query all repeats (amid a log prefix's pids and times), or a query whose
  // numbers the literal all holds (a partial copy, cut before the literal's later numbers), agrees.
  // At a cut edge of the query its first or last number may be the start or end of the literal's.
  function agree(query, numbers) {
    var left = numbers.slice();
    var endCut = cutNumber(query, "end"), startCut = cutNumber(query, "start");
    var last = query.numbers.length - 1, missing = 0;
    query.numbers.forEach(function (n, i) {
      var at = left.indexOf(n);
      if (at < 0 && endCut && i === last) at = left.findIndex(function (m) { return m.lastIndexOf(n, 0) === 0; });
      if (at < 0 && startCut && i === 0) {
        at = left.findIndex(function (m) { return m.length >= n.length && m.indexOf(n, m.length - n.length) >= 0; });
      }
      if (at >= 0) left.splice(at, 1); else missing++;
    });
    return !(left.length && missing);
  }

  // Whether the query starts (ends) with a number that a cut may have shortened: a number standing
  // alone at that edge, not the digits of a word (`gemm1` at the end is a word: its 1 is not the
  // start of the literal's 120).
  function cutNumber(query, edge) {
    return (edge === "end" ? /(?:^|[^a-z0-9])[0-9]+$/i : /^[0-9]+(?:[^a-z0-9]|$)/i).test(query.normal);
  }

  // The share of the query's numbers that the literal has too (0 when the query has none):
  // what tells `major versions [12]` from `[10]`, or one launch shape from another. A number
  // at a cut edge of the query may be the start (or end) of the literal's.
  function shared(query, literal) {
    var numbers = query.numbers;
    if (!numbers.length) return 0;
    var left = literal.slice(), common = 0;
    var endCut = cutNumber(query, "end"), startCut = cutNumber(query, "start");
    numbers.forEach(function (n, i) {
      var at = left.indexOf(n);
      if (at < 0 && endCut && i === numbers.length - 1) {
        at = left.findIndex(function (m) { return m.lastIndexOf(n, 0) === 0; });
      }
      if (at < 0 && startCut && i === 0) {
        at = left.findIndex(function (m) { return m.length >= n.length && m.indexOf(n, m.length - n.length) >= 0; });
      }
      if (at >= 0) { common++; left.splice(at, 1); }
    });
    return common / numbers.length;
  }

  // ---- Pagefind's own ranking, for its results --------------------------------------------

  function tier(query, data) {
    var title = trim(data.meta.title || "").toLowerCase();
    if (title === query) return 3;
    var signatures = Object.keys(data.meta).filter(function (k) { return /^sig\d+$/.test(k); })
      .map(function (k) { return trim(data.meta[k]).toLowerCase(); });
    if (signatures.indexOf(query) >= 0) return 2;
    if (title.indexOf(query) >= 0 || signatures.some(function (s) { return s.indexOf(query) >= 0; })) return 1;
    return 0;
  }

  // ---- Rendering ----------------------------------------------------------------------------

  function excerpt(html) {
    var out = document.createElement("p");
    out.className = "kb-search__excerpt";
    var doc = new DOMParser().parseFromString("<body>" + html + "</body>", "text/html");
    doc.body.childNodes.forEach(function (node) {
      if (node.nodeName === "MARK") {
        var mark = document.createElement("mark");
        mark.textContent = node.textContent;
        out.appendChild(mark);
      } else {
        out.appendChild(document.createTextNode(node.textContent));
      }
    });
    return out;
  }

  function filters() {
    var chosen = {};
    selects.forEach(function (s) { if (s.value) chosen[s.getAttribute("data-filter")] = s.value; });
    return chosen;
  }

  var active = -1;

  function links() { return list.querySelectorAll(".kb-search__link"); }

  function setActive(i) {
    var items = list.children;
    active = Math.max(-1, Math.min(i, items.length - 1));
    Array.prototype.forEach.call(items, function (li, j) {
      li.setAttribute("aria-selected", j === active ? "true" : "false");
    });
    if (active >= 0) {
      input.setAttribute("aria-activedescendant", items[active].id);
      items[active].scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function triageLink(raw) {
    var a = document.createElement("a");
    a.className = "kb-search__triage";
    // The text goes in the fragment, which browsers never send to a server (nor in Referer).
    a.href = triageUrl + "#log=" + encodeURIComponent(raw.slice(0, CARRIED));
    a.textContent = "Try the triage page with this text";
    return a;
  }

  function render(raw, items, total, closest, outside) {
    list.textContent = "";
    scopeNote.textContent = outside || "";
    items.forEach(function (item, i) {
      var li = document.createElement("li");
      li.id = "kb-search-option-" + i;
      li.setAttribute("role", "option");
      var a = document.createElement("a");
      a.className = "kb-search__link";
      a.href = item.href;
      a.textContent = item.title;
      li.appendChild(a);
      if (item.cell) {
        var cell = document.createElement("span");
        cell.className = "kb-search__cell";
        cell.textContent = item.cell;
        li.appendChild(cell);
      }
      if (item.status) {  // the failure's status in words, as its page's badge says it
        var state = document.createElement("span");
        state.className = "kb-search__state";
        state.textContent = "Status: " + item.status;
        li.appendChild(state);
      }
      if (item.excerpt !== null) {
        li.appendChild(excerpt(item.excerpt));
      } else {
        var literal = document.createElement("p");
        literal.className = "kb-search__excerpt kb-search__literal";
        literal.textContent = item.literal;
        li.appendChild(literal);
      }
      list.appendChild(li);
    });
    status.textContent = "";
    if (items.length) {
      status.textContent = total + " result" + (total === 1 ? "" : "s") + " for \u201c" + raw + "\u201d"
        + (closest ? " (closest literal strings)" : "");
    } else {
      status.textContent = "No results for \u201c" + raw + "\u201d. ";
      status.appendChild(triageLink(raw));
    }
    if (items.length) {
      if (total > items.length) {
        var more = document.createElement("button");
        more.type = "button";
        more.className = "kb-search__all";
        more.textContent = "Show all " + total + " results";
        more.addEventListener("click", function () { showAll = true; run(); input.focus(); });
        status.appendChild(document.createTextNode(" "));
        status.appendChild(more);
      }
      // A link that runs this search when opened (the query and filters in ?q=, ?component=...).
      var share = document.createElement("a");
      share.className = "kb-search__share";
      var params = new URLSearchParams();
      if (raw) params.set("q", raw);
      var chosen = filters();
      Object.keys(chosen).sort().forEach(function (k) { params.set(k, chosen[k]); });
      share.href = new URL("?" + params.toString(), siteRoot).href;
      share.textContent = "Link to this search";
      status.appendChild(document.createTextNode(" "));
      status.appendChild(share);
    }
    input.setAttribute("aria-expanded", items.length ? "true" : "false");
    setActive(-1);
    root.setAttribute("data-done-query", raw);
  }

  function close() {
    generation++;
    clearTimeout(timer);
    timer = null;
    list.textContent = "";
    status.textContent = "";
    scopeNote.textContent = "";
    input.setAttribute("aria-expanded", "false");
    setActive(-1);
    root.removeAttribute("data-done-query");
  }

  // Strong literal matches, then Pagefind's results (its own order, literal strings that equal
  // or hold the query first), then weaker literal matches; each page once.
  function merge(query, local, datas) {
    var out = [], byHref = {};
    var found = datas.map(function (data, i) {
      return { data: data, order: i, tier: query ? tier(query, data) : 0 };
    }).sort(function (a, b) { return b.tier - a.tier || a.order - b.order; });
    found.forEach(function (f) { byHref[new URL(f.data.url, siteRoot).pathname] = f.data; });
    function add(href, item) {
      if (out.some(function (o) { return o.href === href; })) return;
      out.push(item);
    }
    function fromLocal(hit) {
      var data = byHref[hit.page.href];
      return { href: hit.page.href, title: hit.page.title, cell: hit.page.cell, status: hit.page.status || "", literal: hit.literal,
               excerpt: data ? data.excerpt || "" : null };
    }
    local.filter(function (h) { return h.score >= STRONG; }).forEach(function (h) { add(h.page.href, fromLocal(h)); });
    found.forEach(function (f) {
      var href = new URL(f.data.url, siteRoot).pathname;
      add(href, { href: href, title: f.data.meta.title || f.data.url, cell: f.data.meta.cell || "",
                  status: f.data.meta.status || "", excerpt: f.data.excerpt || "" });
    });
    local.filter(function (h) { return h.score < STRONG; }).forEach(function (h) { add(h.page.href, fromLocal(h)); });
    return out;
  }

  var openWhenDone = false;
  var timer = null;

  // The results for the query `raw` under the filters `chosen` (filter -> value): a promise of
  // { items, total, closest }, every item when `all`, else the first SHOWN. What the box shows
  // (run, below); the tests call it as kbSearch.answer to search many strings in one page.
  function answer(raw, chosen, all) {
    var shown = raw.trim();
    var query = trim(raw).toLowerCase();
    // A bare number (5090, `rtx 5090`) is what a reader types for a GPU model: masked, it would
    // match every literal with any number, so only the page text is searched for it, as written.
    var bare = GPU_NUMBER.test(query);
    var local = query && !bare ? literalsFor(raw).then(function (index) {
      return { index: index, hits: scoreLiterals(index, raw, chosen) };
    }).catch(function (error) {
      if (window.console) console.warn("kb search: literal strings unavailable: " + error);
      return { index: null, hits: [] };
    }) : Promise.resolve({ index: null, hits: [] });
    // A query that is one of the literal strings (the same once normalised) is answered by them
    // alone: Pagefind is not loaded for it (its scripts, its index's metadata and a chunk per word
    // and index shard are most of what a cold search fetches). Else Pagefind searches the page
    // text for the longest words of the normalised line.
    var pages = local.then(function (found) {
      if (found.hits.some(function (h) { return h.exact; })) return null;
      return load().then(function (pf) {
        // Pagefind is given words of the normalised line: punctuation (`=`, `::`, `>=`) splits
        // its tokens unpredictably, and the words the rules write in (`n`, `pkgs`, `#`) are in no page.
        var text = found.index ? kbNormalise.normalise(found.index.rules, found.index.passes, shown) : query;
        var words = text.replace(/[^\p{L}\p{N}_.\s]+/gu, " ").split(/\s+/)
          .filter(function (w) { return w && !/^(?:n|pkgs|#)$/.test(w); });
        var kept = new Set(longest(words).slice(0, PAGEFIND_WORDS));
        var asked = words.filter(function (w) { return kept.delete(w); }).join(" ");
        return pf.search(asked || null, { filters: chosen }).then(function (search) {
          return search && { search: search, again: function (filters) { return pf.search(asked || null, { filters: filters }); } };
        });
      });
    }).then(function (searched) {
      if (!searched) return { datas: [], rest: [] };
      var results = searched.search.results, shown = all ? results.length : CANDIDATES;
      return Promise.all(results.slice(0, shown).map(function (r) { return r.data(); })).then(function (datas) {
        return { datas: datas, rest: results.slice(shown).map(function (r) { return r.id; }), again: searched.again };
      });
    });
    var outside = loadLiterals().then(function (index) { return outOfScope(index.scope, shown); }, function () { return null; });
    return Promise.all([pages, local, outside]).then(function (both) {
      var found = both[0], hits = both[1].hits;
      var items = merge(query, hits, found.datas);
      var strong = hits.some(function (h) { return h.score >= STRONG; });
      return unloaded(found, hits, chosen).then(function (extra) {
        return { items: all ? items : items.slice(0, SHOWN), total: items.length + extra,
                 closest: !found.datas.length && !strong && items.length > 0, outside: both[2] };
      });
    });
  }

  // How many pages Pagefind found beyond those whose data was loaded that are not already among
  // the results: the count must not change when "Show all" loads them. Such a page may also be a
  // literal-string hit, known by its URL; Pagefind's results beyond the loaded ones are known by
  // their ids only. Each searched page carries its URL as the `page` filter
  // (templates/pages/cell.html, disambiguation.html), so the same search narrowed to the URLs of
  // the literal hits not yet placed names, by id, those that are both.
  function unloaded(found, hits, chosen) {
    if (!found.rest.length) return Promise.resolve(0);
    var loaded = new Set(found.datas.map(function (d) { return new URL(d.url, siteRoot).pathname; }));
    var open = hits.filter(function (h) { return !loaded.has(h.page.href); }).map(function (h) { return h.page.url; });
    if (!open.length) return Promise.resolve(found.rest.length);
    var filters = Object.assign({}, chosen, { page: { any: open } });
    return found.again(filters).then(function (both) {
      var rest = new Set(found.rest), twice = 0;
      both.results.forEach(function (r) { if (rest.has(r.id)) twice++; });
      return found.rest.length - twice;
    });
  }

  function run() {
    var raw = input.value;
    var chosen = filters();
    var mine = ++generation;
    root.removeAttribute("data-done-query");
    if (!trim(raw) && !Object.keys(chosen).length) {
      openWhenDone = false;
      close();
      return;
    }
    status.textContent = "Searching\u2026";
    answer(raw, chosen, showAll).then(function (found) {
      if (mine !== generation) return;
      render(raw.trim(), found.items, found.total, found.closest, found.outside);
      if (openWhenDone) {
        openWhenDone = false;
        open(0);
      }
    }).catch(function (error) {
      if (mine !== generation) return;
      openWhenDone = false;
      status.textContent = "Search is unavailable: " + error;
    });
  }

  function open(i) {
    var all = links();
    if (all[i]) window.location.assign(all[i].href);
  }

  input.addEventListener("input", function () {
    showAll = false;
    clearTimeout(timer);
    timer = setTimeout(function () { timer = null; run(); }, 120);
  });
  selects.forEach(function (s) { s.addEventListener("change", function () { showAll = false; run(); }); });
  root.addEventListener("submit", function (event) { event.preventDefault(); });

  // Enter opens the chosen result (the first unless the arrows chose another), once the results
  // for what is typed are there; arrows move through the results; Escape closes them.
  input.addEventListener("keydown", function (event) {
    if (event.isComposing) return;
    var done = root.getAttribute("data-done-query");
    var current = done !== null && done === input.value.trim() && timer === null;
    if (event.key === "Enter") {
      event.preventDefault();
      if (current && links().length) {
        open(Math.max(active, 0));
      } else if (trim(input.value)) {
        clearTimeout(timer);
        timer = null;
        openWhenDone = true;
        run();
      }
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!list.children.length) {
        if (event.key === "ArrowDown" && trim(input.value)) { event.preventDefault(); run(); }
        return;
      }
      event.preventDefault();
      setActive(active + (event.key === "ArrowDown" ? 1 : -1));
    } else if (event.key === "Escape") {
      if (list.children.length || status.textContent) {
        event.preventDefault(); // and keep the text: Chromium would clear a search field
        openWhenDone = false;
        close();
      }
    }
  });

  // `/` anywhere but in a field puts the cursor in the search box.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(?:input|textarea|select)$/i.test(target.nodeName))) return;
    event.preventDefault();
    input.focus();
    input.select();
  });

  // Fetch the literal strings' table when the box is first used. The filter menus hold every
  // option from the build (templates/theme/main.html), so opening one fetches nothing and moves nothing.
  input.addEventListener("focus", function () {
    loadLiterals().catch(function () {});
  }, { once: true });

  // A link with ?q= (and ?component=, ?architecture=, ?status=) runs that search when the page
  // opens, every result shown: what "Link to this search" gives.
  var asked = new URLSearchParams(window.location.search);
  var askedFilter = false;
  selects.forEach(function (s) {
    var v = asked.get(s.getAttribute("data-filter"));
    if (!v) return;
    if (!Array.prototype.some.call(s.options, function (o) { return o.value === v; })) {
      var option = document.createElement("option");
      option.value = v;
      option.textContent = v;
      s.appendChild(option);
    }
    s.value = v;
    askedFilter = true;
  });
  if (asked.get("q") || askedFilter) {
    input.value = asked.get("q") || "";
    showAll = true;
    run();
  }

  window.kbSearch = { answer: answer };
})();

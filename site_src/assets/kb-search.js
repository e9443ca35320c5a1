// The header search box. Pagefind finds candidate pages; this script then puts first the page
// whose literal error string equals, or contains, what was typed, so that a pasted error line
// (quoted or not) lands on its own cell. Results are built as DOM text: nothing from the index
// is inserted as HTML except Pagefind's <mark> highlights, rebuilt node by node.
(function () {
  "use strict";
  var root = document.getElementById("kb-search");
  if (!root) return;
  var bundle = new URL(root.getAttribute("data-bundle"), document.baseURI).href;
  var input = root.querySelector("input[type=search]");
  var list = root.querySelector(".kb-search__results");
  var status = root.querySelector(".kb-search__status");
  var selects = root.querySelectorAll("select[data-filter]");
  var pagefind = null;
  var generation = 0;
  var CANDIDATES = 10;

  function normalise(text) {
    return text.replace(/^[\s"'\u201c\u201d`]+|[\s"'\u201c\u201d`]+$/g, "").replace(/\s+/g, " ").toLowerCase();
  }

  function load() {
    if (!pagefind) {
      pagefind = import(bundle + "pagefind.js").then(function (module) {
        return module.options({ baseUrl: new URL("..", bundle).pathname }).then(function () {
          return module;
        });
      });
    }
    return pagefind;
  }

  function tier(query, data) {
    var title = normalise(data.meta.title || "");
    if (title === query) return 3;
    var signatures = Object.keys(data.meta).filter(function (k) { return /^sig\d+$/.test(k); })
      .map(function (k) { return normalise(data.meta[k]); });
    if (signatures.indexOf(query) >= 0) return 2;
    if (title.indexOf(query) >= 0 || signatures.some(function (s) { return s.indexOf(query) >= 0; })) return 1;
    return 0;
  }

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

  function render(query, results, shown) {
    list.textContent = "";
    results.forEach(function (item) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.className = "kb-search__link";
      a.href = item.data.url;
      a.textContent = item.data.meta.title || item.data.url;
      li.appendChild(a);
      if (item.data.meta.cell) {
        var cell = document.createElement("span");
        cell.className = "kb-search__cell";
        cell.textContent = item.data.meta.cell;
        li.appendChild(cell);
      }
      li.appendChild(excerpt(item.data.excerpt || ""));
      list.appendChild(li);
    });
    status.textContent = results.length
      ? shown + " result" + (shown === 1 ? "" : "s") + " for \u201c" + query + "\u201d"
      : "No results for \u201c" + query + "\u201d";
    root.setAttribute("data-done-query", query);
  }

  function run() {
    var raw = input.value;
    var query = normalise(raw);
    var chosen = filters();
    var mine = ++generation;
    root.removeAttribute("data-done-query");
    if (!query && !Object.keys(chosen).length) {
      list.textContent = "";
      status.textContent = "";
      return;
    }
    status.textContent = "Searching\u2026";
    load().then(function (pf) {
      // Pagefind is given the words only: punctuation inside pasted lines (`=`, `::`, `>=`)
      // splits its tokens unpredictably; the exact text decides the order below.
      var words = query.replace(/[^\p{L}\p{N}_.\s]+/gu, " ").replace(/\s+/g, " ").trim();
      return pf.search(words || null, { filters: chosen });
    }).then(function (search) {
      var top = search.results.slice(0, CANDIDATES);
      return Promise.all(top.map(function (r) { return r.data(); })).then(function (datas) {
        return { total: search.results.length, datas: datas };
      });
    }).then(function (found) {
      if (mine !== generation) return;
      var ranked = found.datas.map(function (data, i) {
        return { data: data, order: i, tier: query ? tier(query, data) : 0 };
      }).sort(function (a, b) { return b.tier - a.tier || a.order - b.order; });
      render(raw.trim(), ranked, found.total);
    }).catch(function (error) {
      if (mine !== generation) return;
      status.textContent = "Search is unavailable: " + error;
    });
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(run, 120);
  });
  selects.forEach(function (s) { s.addEventListener("change", run); });
  root.addEventListener("submit", function (event) { event.preventDefault(); run(); });

  // Fill the filter menus from the index, on first use.
  input.addEventListener("focus", function () {
    load().then(function (pf) { return pf.filters(); }).then(function (available) {
      selects.forEach(function (s) {
        if (s.options.length > 1) return;
        var values = Object.keys(available[s.getAttribute("data-filter")] || {}).sort();
        values.forEach(function (v) {
          var option = document.createElement("option");
          option.value = v;
          option.textContent = v;
          s.appendChild(option);
        });
      });
    });
  }, { once: true });
})();

// The every-failure page's filters (templates/pages/all.html): status, component and "updated in
// or after" a month, over each row's data-status, data-components ("|vLLM|FlashInfer|") and
// data-updated. The listing is paged (PER_PAGE rows to a page), and a reader filtering it means
// every failure: the first time a filter is chosen the other pages are fetched (page n at the form's
// data-first + "n/"), their rows taken with each link resolved against its own page, and the matches
// of every page shown in id order. Clearing the filters returns to this page's own rows. A page that
// cannot be fetched is named in the count line, never silently left out. The form is hidden in the
// HTML, so without JavaScript the page is the plain paged list.
(function () {
  "use strict";
  var form = document.querySelector("form.kb-all__filter");
  if (!form) return;
  var body = document.querySelector("table.kb-all tbody");
  var own = Array.prototype.slice.call(body.children);
  var shown = form.querySelector(".kb-all__shown");
  var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-filter]"));
  var number = Number(form.getAttribute("data-page"));
  var pages = Number(form.getAttribute("data-pages"));
  var total = Number(form.getAttribute("data-total"));
  var first = new URL(form.getAttribute("data-first"), location.href);
  var every = pages > 1 ? null : own;  // every page's rows in id order, once fetched
  var loading = null;  // the fetch of the other pages while it runs: a promise of the pages that failed
  var current = own;  // the rows in the table now

  function keeps(row, filter, value) {
    if (!value) return true;
    if (filter === "status") return row.getAttribute("data-status") === value;
    if (filter === "components") return row.getAttribute("data-components").indexOf("|" + value + "|") >= 0;
    return row.getAttribute("data-updated") >= value;  // ISO dates and months sort as text
  }

  function rowsOf(n) {
    if (n === number) return Promise.resolve(own);
    var url = n === 1 ? first : new URL(n + "/", first);
    return fetch(url).then(function (response) {
      if (!response.ok) throw new Error(url + ": " + response.status);
      return response.text();
    }).then(function (html) {
      var rows = new DOMParser().parseFromString(html, "text/html").querySelectorAll("table.kb-all tbody tr");
      if (!rows.length) throw new Error(url + ": no rows");
      return Array.prototype.map.call(rows, function (row) {
        // The page's links are relative to its own URL, not to this page's.
        Array.prototype.forEach.call(row.querySelectorAll("a[href]"), function (a) {
          a.setAttribute("href", new URL(a.getAttribute("href"), url).href);
        });
        return document.importNode(row, true);
      });
    }).catch(function () { return n; });
  }

  function load() {
    if (!loading) {
      var wanted = [];
      for (var n = 1; n <= pages; n++) wanted.push(rowsOf(n));
      loading = Promise.all(wanted).then(function (got) {
        loading = null;  // a failed page is tried again at the next change
        var failed = got.filter(function (g) { return typeof g === "number"; });
        if (!failed.length) every = [].concat.apply([], got);
        return failed;
      });
    }
    return loading;
  }

  function show(rows, of, note) {
    if (current !== rows) body.replaceChildren.apply(body, rows);
    current = rows;
    var count = 0;
    rows.forEach(function (row) {
      var ok = selects.every(function (s) { return keeps(row, s.getAttribute("data-filter"), s.value); });
      row.hidden = !ok;
      if (ok) count++;
    });
    shown.textContent = (note ? note + "; " : "")
      + (count === of ? of + " failures" : count + " of " + of + " failures shown");
  }

  function chosen() {
    return selects.some(function (s) { return s.value; });
  }

  function apply() {
    if (!chosen()) return show(own, total);
    if (every) return show(every, total);
    show(own, own.length, "loading the other pages");
    load().then(function (failed) {
      if (!chosen()) return;  // cleared while loading: this page's rows are back already
      if (!failed.length) return show(every, total);
      show(own, own.length, "could not load page" + (failed.length > 1 ? "s " : " ") + failed.join(", ")
        + ": showing this page only");
    });
  }

  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.hidden = false;
  apply();  // a reload or Back keeps the browser's remembered choices
})();

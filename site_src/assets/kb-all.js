// The every-failure page's filters (templates/pages/all.html): status, component and "updated in
// or after" a month, over each row's data-status, data-components ("|vLLM|FlashInfer|") and
// data-updated. The form is hidden in the HTML, so without JavaScript the page is the plain list.
(function () {
  "use strict";
  var form = document.querySelector("form.kb-all__filter");
  if (!form) return;
  var rows = Array.prototype.slice.call(document.querySelectorAll("table.kb-all tbody tr"));
  var shown = form.querySelector(".kb-all__shown");
  var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-filter]"));

  function keeps(row, filter, value) {
    if (!value) return true;
    if (filter === "status") return row.getAttribute("data-status") === value;
    if (filter === "components") return row.getAttribute("data-components").indexOf("|" + value + "|") >= 0;
    return row.getAttribute("data-updated") >= value;  // ISO dates and months sort as text
  }

  function apply() {
    var count = 0;
    rows.forEach(function (row) {
      var ok = selects.every(function (s) { return keeps(row, s.getAttribute("data-filter"), s.value); });
      row.hidden = !ok;
      if (ok) count++;
    });
    shown.textContent = count === rows.length ? rows.length + " failures"
      : count + " of " + rows.length + " failures shown";
  }

  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.hidden = false;
  apply();  // a reload or Back keeps the browser's remembered choices
})();

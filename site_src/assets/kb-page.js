// Copy buttons: the error string at the top of a cell page, and every code block; a tap on a long
// error string that narrow screens cut to four lines shows it whole.
(function () {
  "use strict";
  function copy(text, button) {
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { select(button); });
    } else {
      select(button);
    }
  }
  function select(button) {  // no clipboard access: select the text so Ctrl+C copies it
    var target = document.getElementById(button.getAttribute("data-copy-from"));
    if (!target) return;
    var range = document.createRange();
    range.selectNodeContents(target);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  document.querySelectorAll("pre > code").forEach(function (code, i) {
    if (!code.id) code.id = "kb-code-" + i;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "kb-copy kb-copy--code";
    button.textContent = "Copy";
    button.setAttribute("data-copy-from", code.id);
    button.setAttribute("aria-label", "Copy this code");
    code.parentNode.insertBefore(button, code);
  });
  document.querySelectorAll(".kb-head h1.kb-literal").forEach(function (h1) {
    h1.addEventListener("click", function () { h1.classList.toggle("kb-open"); });
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy-from]");
    if (!button) return;
    var target = document.getElementById(button.getAttribute("data-copy-from"));
    if (target) copy(target.textContent, button);
  });
})();

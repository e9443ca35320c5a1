// The normalisation of kb/records/normalise.py in the browser, loaded by the triage page and the header
// search box alike. The rules themselves are data, exported by the build (triage/patterns.json,
// search/literals.json); this file only runs them, exactly as `normalise()` in Python does.
(function (global) {
  "use strict";

  // `[{pattern, replacement}]` as exported (replacement in `$1` form) -> [[RegExp, replacement]].
  function compile(rules) {
    return rules.map(function (n) { return [new RegExp(n.pattern, "g"), n.replacement]; });
  }

  // Lower-cased, every rule applied in order, again until the line stops changing (a prefix may
  // hide another), at most `passes` times.
  function normalise(compiled, passes, line) {
    var text = line.toLowerCase();
    for (var pass = 0; pass < passes; pass++) {
      var before = text;
      compiled.forEach(function (pair) { text = text.replace(pair[0], pair[1]); });
      text = text.trim();
      if (text === before) break;
    }
    return text;
  }

  global.kbNormalise = { compile: compile, normalise: normalise };
})(window);

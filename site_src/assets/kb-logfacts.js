// Facts from a log (kb/triage/logfacts.py) in the browser: the same table of rules, exported in
// triage/patterns.json as `logfacts`, run on each raw line; tests/vectors/logfacts.json holds the
// vectors both pass (tests/test_twins_node.py runs them here). A capability and an sm_ number are
// converted by kbVerdict (kb-verdict.js, loaded first) on the table the export carries, as
// logfacts.py converts them with kb.records.verdict.
(function () {
  "use strict";

  function logFacts(d, text) {
    var rules = d.rules.map(function (r) { return { fact: r.fact, regex: new RegExp(r.pattern, "gi") }; });
    var ignore = new RegExp(d.ignore, "i");
    var models = d.models.map(function (m) { return [new RegExp(m.pattern, "i"), m.capability]; });
    var out = { gpus: null, driver_version: null, cuda_driver_version: null, cuda_runtime_version: null,
                packages: {}, lines: {} };
    var strong = [], weak = [];
    function model(name) {
      for (var i = 0; i < models.length; i++) if (models[i][0].test(name)) return models[i][1];
      return null;
    }
    var keys = { "driver": "driver_version", "cuda-driver": "cuda_driver_version",
                 "cuda-runtime": "cuda_runtime_version", "cuda-toolkit": "packages.cuda-toolkit" };
    text.split("\n").forEach(function (raw, i) {
      var line = raw.slice(0, d.line_limit), number = i + 1, m;
      rules.forEach(function (rule) {
        rule.regex.lastIndex = 0;
        if (rule.fact === "arch") {
          var found = [];
          while ((m = rule.regex.exec(line)) !== null) found.push(m[1]);
          var distinct = found.filter(function (x, k) { return found.indexOf(x) === k; });
          if (found.length && distinct.length <= d.max_listed && !ignore.test(line)) {
            distinct.forEach(function (digits) { weak.push({ name: null, compute_capability: kbVerdict.capability(d.architecture, digits), line: number }); });
          }
          return;
        }
        while ((m = rule.regex.exec(line)) !== null) {
          if (m[0] === "") { rule.regex.lastIndex++; continue; }
          if (rule.fact === "gpu" || rule.fact === "gpu-bare") {
            var given = m[0];  // the first group that matched, else the match (logfacts.py does the same)
            for (var g = 1; g < m.length; g++) if (m[g]) { given = m[g]; break; }
            var name = given.replace(/\s+/g, " ").trim(), cc = model(name);
            if (cc) strong.push({ name: name, compute_capability: cc, line: number, bare: rule.fact === "gpu-bare" });
          } else if (rule.fact === "capability") {
            strong.push({ name: null, compute_capability: parseInt(m[1], 10) + "." + m[2], line: number });
          } else if (rule.fact === "frame") {  // logfacts.frame_package: the folder as pip names the package
            var folder = m[1].toLowerCase();
            var framed = "frames." + (Object.prototype.hasOwnProperty.call(d.packages, folder) ? d.packages[folder] : folder).replace(/_/g, "-");
            if (!(framed in out.lines)) out.lines[framed] = number;
          } else if (rule.fact.indexOf("package") === 0) {
            var pkg = rule.fact.split(":")[1] || m[1].toLowerCase();
            pkg = Object.prototype.hasOwnProperty.call(d.packages, pkg) ? d.packages[pkg] : pkg;
            if (!Object.prototype.hasOwnProperty.call(out.packages, pkg)) {
              out.packages[pkg] = m[m.length - 1];
              out.lines["packages." + pkg] = number;
            }
          } else {
            var key = keys[rule.fact];
            if (key in out.lines) continue;
            out.lines[key] = number;
            if (key.indexOf("packages.") === 0) { out.packages["cuda-toolkit"] = m[1]; continue; }
            out[key] = m[1];
            if (key === "cuda_runtime_version" && !("cuda" in out.packages)) out.packages.cuda = m[1];
          }
        }
      });
    });
    var gpus = strong.length ? strong : weak;
    if (gpus.length) {
      var seen = {}, order = [], named = {}, full = {};
      function arch(g) { return kbVerdict.arch(d.architecture, g.compute_capability); }
      gpus.forEach(function (g) {  // one GPU named in prose (gpu-bare) per architecture
        var k = JSON.stringify([g.bare ? null : g.name, arch(g), !!g.bare]);
        if (!(k in seen)) {
          seen[k] = g; order.push(g);
          if (g.name) named[arch(g)] = true;
          if (g.name && !g.bare) full[arch(g)] = true;
        }
      });
      out.gpus = order.filter(function (g) {
        return (g.name && !(g.bare && full[arch(g)])) || !named[arch(g)];
      }).map(function (g) { return { name: g.name, compute_capability: g.compute_capability, line: g.line }; });
      out.gpus.forEach(function (g, k) { out.lines["gpus." + k] = g.line; });
    }
    return out;
  }
  window.kbLogFacts = { read: logFacts };
})();

// Runs the browser twins of kb/triage/*.py and kb/records/verdict.py under node, as the pages load
// them: each site_src/assets file in order, as a plain script, on a `window` that is node's global
// object. Reads one JSON object on stdin ({assets, data, vectors}: the exported tables the build
// writes and tests/vectors/*.json) and writes what the scripts give for every vector on stdout;
// tests/test_twins_node.py compares that with Python's answers and the vectors' own.
"use strict";
const fs = require("fs");
const vm = require("vm");

const input = JSON.parse(fs.readFileSync(0, "utf-8"));
globalThis.window = globalThis;
for (const path of input.assets) vm.runInThisContext(fs.readFileSync(path, "utf-8"), { filename: path });

const { data, vectors } = input;
const joined = (v) => v.log.join("\n");
const engine = kbMatch.compile(data.patterns);
const request = kbRequest.compile(data.patterns.request);
const base = "https://github.com/example/kb/issues/new";

const out = {
  logfacts: vectors.logfacts.vectors.map((v) => kbLogFacts.read(data.patterns.logfacts, joined(v))),
  match: vectors.match.vectors.map((v) => kbMatch.match(engine, joined(v)).map((h) => ({
    entry: h.entry, score: h.score, lines: h.lines, signature: h.signature, url: h.url,
    verdict: h.verdict, why: h.why, generic_only: !h.specific }))),
  // An entry's score from its matched signatures alone (match.signature_score), on made-up ones.
  score: vectors.match.score.map((v) => kbMatch.score(v.signatures, v.found)),
  // The family answer, as the triage page takes it (kb-triage.js): kbMatch.placed's, alone when no
  // entry matched, first when every entry matched only generic lines and nothing decides.
  families: vectors.match.vectors.map((v) => {
    const run = kbMatch.start(engine, joined(v));
    run.step(run.total);
    return kbMatch.placed(engine, joined(v), run.result(), run.families());
  }).map((found) => found.map((h) => ({
      answer: h.answer, entry: h.entry, family: h.family, title: h.title, url: h.url, lines: h.lines.slice(0, 5),
      signature: h.signature, check: h.check, fix: h.fix }))),
  request: vectors.request.vectors.map((v) => {
    const made = kbRequest.newCell(request, joined(v));
    const fields = Object.fromEntries(new URL(kbRequest.issueUrl(base, made.title, made.text)).searchParams);
    return { title: made.title, text: made.text, fields: fields };
  }),
  verdict: vectors.verdict.vectors.map((v) => kbVerdict.decide(data.patterns.verdict, v.cell, v.facts, v.specific, undefined, v.matched || [])),
  rank: kbVerdict.rank(data.patterns.verdict, vectors.verdict.rank.hits).map((h) => h.entry),
  stack: vectors.verdict.stack.map((v) => kbVerdict.stack(data.stack.verdict, v.cell, v.facts)),
  scope: vectors.verdict.scope.map((v) => kbVerdict.outOfScope(data.stack.verdict, v.gpus)),
  pip: vectors.verdict.pip.map((v) => kbVerdict.pipHint(data.stack.verdict, v.hits, v.facts)),
};
process.stdout.write(JSON.stringify(out));

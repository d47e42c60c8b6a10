#!/usr/bin/env node
// Checks that math spans parse with KaTeX.
// stdin:  JSON array of {"tex": "...", "display": true|false}
// stdout: JSON array, one entry per input: null if it rendered, else the error message.
// Used by tests/markdown_math.py; run `npm ci --prefix tests/katex` first.
"use strict";

const katex = require("katex");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const results = JSON.parse(input).map(({ tex, display }) => {
    // Untrusted commands (\href, \url, \includegraphics) do not throw: KaTeX draws them as red text.
    // Trust nothing, as by default, but note the refusal so that it is reported as an error too.
    let refused = null;
    const trust = (context) => ((refused ??= context.command), false);
    try {
      // strict: "error" turns KaTeX's non-LaTeX-compatibility warnings into errors.
      katex.renderToString(tex, { displayMode: Boolean(display), throwOnError: true, strict: "error", trust });
      return refused && `KaTeX does not render untrusted command ${refused}`;
    } catch (err) {
      return String(err && err.message ? err.message : err);
    }
  });
  process.stdout.write(JSON.stringify(results) + "\n");
});

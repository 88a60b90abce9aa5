// The package's JavaScript keeps its functions short: none over MAX_LINES lines (views/js and static/js). A long
// function is where a view's layout, its DOM and its wiring end up tangled; the views' habit is small pure
// functions that node can call. The scan is plain brace matching over the source with strings, template text,
// comments and regular expressions blanked out: enough for our own modules, checked here on made-up sources.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

export const MAX_LINES = 120;
const PACKAGE = new URL("../../bertviz_app/", import.meta.url);
const FOLDERS = ["views/js/", "static/js/"];
const KEYWORDS = new Set(["if", "for", "while", "switch", "catch", "function", "return", "typeof", "await", "with"]);

/** The source with the text of strings, templates, comments and regular expressions replaced by spaces (lines and
 * code braces kept, a template's ${...} kept as code). */
export function codeOnly(source) {
  const out = [...source];
  const blank = (from, to) => { for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " "; };
  const stack = []; // one entry per open "${": the brace depth at which its template resumes
  let depth = 0;
  let i = 0;
  let last = ""; // the last code character that is not a space: tells a regular expression from a division
  const templateFrom = (start) => { // from inside a template's text, up to its end or a "${"
    let k = start;
    while (k < source.length && source[k] !== "`" && !(source[k] === "$" && source[k + 1] === "{")) {
      k += source[k] === "\\" ? 2 : 1;
    }
    blank(start, k);
    if (source[k] === "`") return k + 1;
    stack.push(depth);
    depth += 1;
    return k + 2;
  };
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      blank(i, end < 0 ? source.length : end);
      i = end < 0 ? source.length : end;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2) + 2;
      blank(i, end);
      i = end;
    } else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < source.length && source[k] !== c) k += source[k] === "\\" ? 2 : 1;
      blank(i + 1, k);
      i = k + 1;
      last = c;
    } else if (c === "`") {
      i = templateFrom(i + 1);
      last = "`";
    } else if (c === "/" && (last === "" || "(,=:[!&|?{};+-*%<>~^".includes(last)
      || /\b(return|typeof|in|of)\s*$/.test(source.slice(Math.max(0, i - 8), i)))) {
      let k = i + 1;
      let inClass = false;
      while (k < source.length && (inClass || source[k] !== "/") && source[k] !== "\n") {
        if (source[k] === "[") inClass = true;
        else if (source[k] === "]") inClass = false;
        k += source[k] === "\\" ? 2 : 1;
      }
      blank(i + 1, k);
      i = k + 1;
      last = "/";
    } else {
      if (c === "{") depth += 1;
      else if (c === "}") {
        depth -= 1;
        if (stack.length && stack[stack.length - 1] === depth) {
          stack.pop();
          i = templateFrom(i + 1);
          last = "`";
          continue;
        }
      }
      if (!/\s/.test(c)) last = c;
      i += 1;
    }
  }
  return out.join("");
}

/** The index just past the bracket that closes the one at `open` (code as codeOnly leaves it). */
function closing(code, open) {
  const pairs = { "(": ")", "{": "}", "[": "]" };
  let depth = 0;
  for (let k = open; k < code.length; k++) {
    if (code[k] in pairs) depth += 1;
    else if (")}]".includes(code[k])) {
      depth -= 1;
      if (depth === 0) return k + 1;
    }
  }
  return code.length;
}

/** Every function of a module with a body in braces (declarations, expressions, arrows, methods): {name, line,
 * lines}, lines counted from the line of its name to the line of its closing brace. */
export function functionSizes(source) {
  const code = codeOnly(source);
  const lineAt = (index) => code.slice(0, index).split("\n").length;
  const found = [];
  const add = (name, start, open) => {
    if (code[open] !== "{") return;
    found.push({ name, line: lineAt(start), lines: lineAt(closing(code, open) - 1) - lineAt(start) + 1 });
  };
  const afterParams = (paren) => { // the first non-space after a parameter list
    let k = closing(code, paren);
    while (/\s/.test(code[k] || "")) k += 1;
    return k;
  };
  for (const m of code.matchAll(/\bfunction\b\s*\*?\s*([A-Za-z_$][\w$]*)?\s*\(/g)) {
    add(m[1] || "(anonymous function)", m.index, afterParams(m.index + m[0].length - 1));
  }
  for (const m of code.matchAll(/=>\s*\{/g)) add("(arrow)", m.index, m.index + m[0].length - 1);
  for (const m of code.matchAll(/^[ \t]*(?:async\s+)?(?:get\s+|set\s+)?([A-Za-z_$][\w$]*)\s*\(/gm)) {
    if (KEYWORDS.has(m[1])) continue;
    add(m[1], m.index, afterParams(m.index + m[0].length - 1));
  }
  // An arrow's line is where its name is: `const start = (doc) => {` starts at `const`.
  return found;
}

/** The package's .mjs files, as [path relative to bertviz_app/, source]. */
export function packageModules() {
  return FOLDERS.flatMap((folder) => readdirSync(new URL(folder, PACKAGE)).filter((f) => f.endsWith(".mjs"))
    .map((f) => [`${folder}${f}`, readFileSync(new URL(`${folder}${f}`, PACKAGE), "utf-8")]));
}

test("the scan finds each kind of function and measures it to its closing brace", () => {
  const source = [
    "export function a(x = { y: 1 }) {", // 1
    "  const s = \"}}}\"; const t = `${x ? `{` : '}'}` + '{';", // 2: braces in strings and templates
    "  return /[{]}/.test(s) // }", // 3: and in a regular expression and a comment
    "}", // 4
    "const b = async (p) => {", // 5
    "  /* { */", // 6
    "  return {", // 7
    "    async c(q) {", // 8: a method
    "      if (q) { return q; }", // 9: not a function
    "    } };", // 10
    "};", // 11
    "const d = (v) => v / 2 / 3; const e = function () {}; ", // 12: a division, not a regular expression
  ].join("\n");
  const sizes = functionSizes(source).map(({ name, line, lines }) => [name, line, lines]);
  assert.deepEqual(sizes.sort((x, y) => x[1] - y[1] || x[0].localeCompare(y[0])),
    [["a", 1, 4], ["(arrow)", 5, 7], ["c", 8, 3], ["(anonymous function)", 12, 1]]);
});

test(`no function in the package's JavaScript is over ${MAX_LINES} lines`, () => {
  const modules = packageModules();
  assert.ok(modules.length >= 20, "the package's modules were not found");
  const long = modules.flatMap(([path, source]) => functionSizes(source).filter((f) => f.lines > MAX_LINES)
    .map((f) => `${path}:${f.line} ${f.name} is ${f.lines} lines`));
  assert.deepEqual(long, [], `split these into small pure functions:\n${long.join("\n")}`);
});

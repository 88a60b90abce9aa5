// Shared by the node tests: the fixture that tests/js/make_fixture.py writes with our Python encoder.

import { readFileSync } from "node:fs";

const here = new URL("./fixtures/", import.meta.url);
export const payloadBytes = () => new Uint8Array(readFileSync(new URL("small.bvz", here)));
export const queryKeyBytes = () => new Uint8Array(readFileSync(new URL("small.qk.bvz", here)));
// A model whose scores have three terms ("terms"), or a blob with queries and keys only ("none").
export const termsQueryKeyBytes = (which = "terms") => new Uint8Array(readFileSync(
  new URL(which === "terms" ? "small.terms.qk.bvz" : "small.noterms.qk.bvz", here)));
export const expected = JSON.parse(readFileSync(new URL("small.json", here), "utf-8"));

export function close(actual, wanted, tolerance, message = "") {
  const a = Array.from(actual), w = Array.from(wanted);
  if (a.length !== w.length) throw new Error(`${message} length ${a.length} != ${w.length}`);
  for (let k = 0; k < a.length; k++) {
    if (!(Math.abs(a[k] - w[k]) <= tolerance)) {
      throw new Error(`${message} [${k}]: ${a[k]} differs from ${w[k]} by more than ${tolerance}`);
    }
  }
}

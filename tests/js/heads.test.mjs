// The heads' vocabulary in the page: the JavaScript names every head of the default model's run (the fixture that
// tests/js/make_heads_fixture.py writes from Python, whose rule is bertviz_app/heads.py) as Python does, and the
// rule's edges (ties, the thresholds themselves) fall the same way as heads.roles' (tests/test_heads.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { headStatistics, roleOf } from "../../bertviz_app/static/js/views-data.mjs";
import { HEADS } from "../../bertviz_app/views/js/heads.mjs";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/default-heads.json", import.meta.url), "utf-8"));

test("the page names every head of the default model's run as Python does", () => {
  const bytes = Buffer.from(fixture.attention, "base64");
  const attention = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  const T = fixture.tokens.length;
  const { dominant } = headStatistics(attention, fixture.layers, fixture.heads, T, fixture.special);
  assert.equal(dominant.length * dominant[0].length, 72);
  assert.deepEqual(dominant, fixture.roles);
  assert.ok(new Set(fixture.roles.flat()).size >= 4, "the run should show several roles, or it proves little");
});

test("the rule's edges: the threshold belongs to the role, a tie to the first share, then broad or mixed", () => {
  const none = { cls: 0, sep: 0, self: 0, previous: 0, next: 0 };
  assert.equal(roleOf({ ...none, sep: HEADS.dominantShare }, 0), "[SEP]");
  assert.equal(roleOf({ ...none, self: 0.5, next: 0.5 }, 0), "self");
  assert.equal(roleOf({ ...none, previous: 0.49 }, HEADS.broadEntropy), "broad");
  assert.equal(roleOf({ ...none, previous: 0.49 }, 0.74), "mixed");
});

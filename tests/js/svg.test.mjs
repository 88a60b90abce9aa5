import assert from "node:assert/strict";
import { test } from "node:test";

import { createSvgContext, escapeXml } from "../../bertviz_app/views/js/svg.mjs";

function balanced(svg) {
  const tags = svg.replace(/<\?xml[^>]*>|<!--[\s\S]*?-->/g, "").match(/<\/?[a-zA-Z][^>]*?\/?>/g);
  const stack = [];
  for (const tag of tags) {
    if (tag.endsWith("/>")) continue;
    const name = tag.match(/<\/?([a-zA-Z]+)/)[1];
    if (tag.startsWith("</")) assert.equal(stack.pop(), name, `unbalanced ${tag}`);
    else stack.push(name);
  }
  assert.deepEqual(stack, []);
}

test("tokens are text: markup in a token is escaped, never interpreted", () => {
  const ctx = createSvgContext(100, 50);
  ctx.font = "15px sans-serif";
  ctx.fillText("<script>alert(1)</script>", 10, 20);
  ctx.fillText("&amp; \"q\" 'a'", 10, 40);
  const svg = ctx.toString();
  assert.ok(!svg.includes("<script>"));
  assert.ok(svg.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert.ok(svg.includes("&amp;amp; &quot;q&quot; &#39;a&#39;"));
  balanced(svg);
  assert.equal(escapeXml("a\u0001b"), "a\ufffdb"); // not even escapable in XML 1.0
});

test("transforms, clips and dashes come out as SVG", () => {
  const ctx = createSvgContext(200, 100);
  ctx.save();
  ctx.beginPath();
  ctx.rect(10, 10, 100, 50);
  ctx.clip();
  ctx.translate(5, 5);
  ctx.fillStyle = "#ff0000";
  ctx.fillRect(0, 0, 10, 10);
  ctx.setLineDash([6, 4]);
  ctx.strokeStyle = "#00f";
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(0, 0);
  ctx.lineTo(20, 0);
  ctx.stroke();
  ctx.save();
  ctx.rotate(-Math.PI / 2);
  ctx.fillText("up", 0, 0);
  ctx.restore();
  ctx.restore();
  ctx.globalAlpha = 0.5;
  ctx.fillRect(0, 0, 1, 1);
  const svg = ctx.toString();
  balanced(svg);
  assert.match(svg, /<clipPath id="clip0"><path d="M10 10L110 10L110 60L10 60Z"\/><\/clipPath>/);
  assert.match(svg, /<rect x="5" y="5" width="10" height="10" fill="#ff0000"\/>/);
  assert.match(svg, /<path d="M5 5L25 5" fill="none" stroke="#00f" stroke-width="2" stroke-dasharray="6 4"\/>/);
  assert.match(svg, /transform="matrix\(0 -1 1 0 5 5\)"/);
  assert.match(svg, /<rect x="0" y="0" width="1" height="1" fill="#000" opacity="0.5"\/>/); // restore() reset the fill
});

test("a bitmap is embedded once, cropped by a viewBox, pixelated when smoothing is off", () => {
  const image = { width: 4, height: 3 };
  let encoded = 0;
  const ctx = createSvgContext(100, 100, { imageUrl: () => { encoded++; return "data:image/png;base64,AAAA"; } });
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(image, 1, 0, 2, 3, 10, 10, 40, 60);
  ctx.drawImage(image, 0, 0, 4, 3);
  ctx.note("cells are a bitmap -- see the docs");
  const svg = ctx.toString();
  assert.equal(encoded, 1);
  assert.equal(svg.split("data:image/png").length - 1, 1); // in the file once, in its defs
  assert.match(svg, /<defs>[^]*<image id="image0" width="4" height="3" href="data:image\/png;base64,AAAA"\/>[^]*<\/defs>/);
  assert.equal((svg.match(/<use href="#image0"/g) || []).length, 2); // each drawing refers to it
  assert.match(svg, /viewBox="1 0 2 3" preserveAspectRatio="none"/);
  assert.match(svg, /image-rendering="pixelated"/);
  assert.ok(svg.includes("<!-- cells are a bitmap \u2013 see the docs -->")); // "--" cannot sit in a comment
  balanced(svg);
});

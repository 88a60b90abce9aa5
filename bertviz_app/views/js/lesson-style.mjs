// The lesson's own styles (the list of ready lessons, a step's question, the bar on a phone), injected by the
// modules that draw them, so that both hosts share them without a stylesheet of their own.

const CSS = `
.bv-lesson-shelf { flex: 1 1 100%; margin: 2px 0 6px; }
.bv-lesson-shelf h3 { margin: 0 0 4px; font-size: 15px; }
.bv-lesson-shelf ul { list-style: none; margin: 0; padding: 0; display: grid; gap: 4px;
  grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); }
.bv-lesson-shelf button { width: 100%; text-align: left; padding: 4px 8px; border: 1px solid #9ecae1;
  border-radius: 4px; background: #fff; color: #08306b; cursor: pointer; font: inherit; }
.bv-lesson-shelf button:hover, .bv-lesson-shelf button:focus-visible { background: #deebf7; }
.bv-lesson-shelf strong { display: block; font-size: 14px; }
.bv-lesson-shelf span { font-size: 12px; color: #444; }
.bv-veiled { visibility: hidden; } /* a question waits for its answer: the picture would tell it */
.bv-question { margin: 4px 0; }
.bv-question-ask { font-weight: 600; margin: 0 0 4px; font-size: 16px; }
.bv-question-choices { display: flex; flex-wrap: wrap; gap: 6px; }
#lesson-bar .bv-question-choices button:disabled { opacity: 1; cursor: default; color: #555; }
#lesson-bar .bv-question-choices button { padding: 3px 12px; border: 1px solid #6baed6; border-radius: 4px;
  background: #fff; color: #08306b; font: inherit; cursor: pointer; }
#lesson-bar .bv-question-choices button[data-mark="right"] { background: #c7e9c0; border-color: #238b45; color: #00441b;
  font-weight: 600; }
#lesson-bar .bv-question-choices button[data-mark="wrong"] { background: #fcbba1; border-color: #a50f15; color: #67000d;
  text-decoration: line-through; }
.bv-question-verdict { margin: 4px 0 0; font-weight: 600; }
.bv-question-verdict:empty { display: none; }
body.bv-presenter .bv-question-ask { font-size: 24px; }
body.bv-presenter #lesson-bar .bv-question-choices button { font-size: 20px; }
.bv-poll { display: flex; gap: 16px; align-items: flex-start; margin: 6px 0; }
.bv-poll[hidden] { display: none; }
#lesson-poll-qr { width: 180px; height: 180px; image-rendering: pixelated; background: #fff; flex: none; }
#lesson-poll-address { font: 600 20px/1.3 monospace; margin: 0 0 6px; overflow-wrap: anywhere; }
.bv-tally { list-style: none; margin: 0; padding: 0; min-width: 240px; }
.bv-tally li { display: flex; align-items: center; gap: 8px; margin: 3px 0; }
.bv-tally-label { flex: 0 0 110px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.bv-tally-bar { height: 18px; background: #4292c6; min-width: 2px; flex: none; }
body.bv-presenter .bv-tally { font-size: 20px; }
.bv-tally-count { font-weight: 600; }
.bv-poll-said { color: #a50f15; margin: 0; }
/* the first visit's offer of the tour (lesson-tour.mjs): over the page's corner, so that nothing moves */
.bv-tour { position: fixed; right: 16px; bottom: 16px; z-index: 1000; max-width: 330px; box-sizing: border-box;
  padding: 10px 12px; background: #fff; color: #08306b; border: 2px solid #2171b5; border-radius: 6px;
  box-shadow: 0 2px 12px rgba(0, 0, 0, 0.25); font: 15px/1.35 system-ui, sans-serif; }
.bv-tour p { margin: 0 0 8px; }
.bv-tour button { font: inherit; padding: 4px 10px; margin: 0 6px 0 0; border-radius: 4px; cursor: pointer; }
#tour-start { background: #08519c; color: #fff; border: 1px solid #08306b; font-weight: 600; }
#tour-skip { background: #fff; color: #08306b; border: 1px solid #6baed6; }
/* on a phone the lesson's name and step get a line of their own above its buttons (beside them, a word a line) */
@media (max-width: 700px) {
  .bv-lesson .bv-lesson-row { flex-wrap: wrap; }
  .bv-lesson .bv-lesson-row #lesson-where { flex: 1 1 100%; order: -1; }
  .bv-tour { left: 8px; right: 8px; bottom: 8px; max-width: none; }
}
`;

/** Put the lessons' styles into the document once. */
export function injectLessonStyle(doc) {
  if (doc.getElementById("bv-lesson-style")) return;
  const style = doc.createElement("style");
  style.id = "bv-lesson-style";
  style.textContent = CSS;
  doc.head.append(style);
}

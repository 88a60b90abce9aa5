
(async () => {
  for (let waited = 0; !window.BertvizViews && waited < 10000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // the lesson panel's words (lesson-panel.html) in the page's language
  if (window.BertvizViews) window.BertvizViews.i18n.translateTree(document.querySelector("#lesson-panel"));
  if (window.BertvizViews && !window.bvLessons) window.bvLessons = window.BertvizViews.appLessons(document);
  // the projector theme this browser chose last (theme.mjs remembers it)
  if (window.BertvizViews) window.BertvizViews.theme.restoreTheme(document, document.querySelector("#projector-theme"));
  if (window.BertvizViews) {
    window.BertvizViews.palette.restorePalette(document, document.querySelector("#colorblind-theme"));
    window.BertvizViews.nameFigures(document);  // plotly figures: their titles and axes as their names
  }
})();

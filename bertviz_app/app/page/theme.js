() => { if (window.BertvizViews) {
  window.BertvizViews.theme.toggleTheme(document, document.querySelector("#projector-theme")); } }

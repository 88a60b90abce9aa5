() => { if (window.BertvizViews) {
  window.BertvizViews.palette.togglePalette(document, document.querySelector("#colorblind-theme")); } }

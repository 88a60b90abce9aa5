() => { const row = document.querySelector("#title-row");
  if (row && window.BertvizViews) window.BertvizViews.showKeys(row); }

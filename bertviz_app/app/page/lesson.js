() => {
  const panel = document.querySelector("#lesson-panel");
  if (panel) panel.hidden = !panel.hidden;
}

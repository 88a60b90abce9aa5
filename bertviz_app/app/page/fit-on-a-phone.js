() => {
  if (window.bvFitFigures) return;
  const ROOM = 150; // under the plot, for a legend in rows
  const fit = (plot) => {
    const layout = plot.layout;
    if (!window.Plotly || !layout || !plot.isConnected) return;
    if (layout.width !== Number(plot.dataset.bvFitted)) {  // a width other than the one set here: a new figure
      plot.dataset.bvNatural = layout.width || "";
      plot.dataset.bvOwn = JSON.stringify({ height: layout.height, b: layout.margin?.b, legend: layout.legend || {},
        moveLegend: Boolean(plot._fullLayout?.showlegend), title: layout.title?.font?.size ?? null,
        drag: layout.dragmode ?? null });
    }
    const natural = Number(plot.dataset.bvNatural), box = plot.clientWidth;
    if (!natural || !box) return;
    // no narrower than the figure says it stays readable (meta.phone_width, figures/_base.py): it scrolls in its box
    const least = Math.min(natural, Number(layout.meta?.phone_width) || 0);
    const width = window.innerWidth <= 700 && natural > box ? Math.max(box, least) : natural;
    if (width === layout.width) return;
    plot.dataset.bvFitted = width;
    const own = JSON.parse(plot.dataset.bvOwn);
    // a smaller title, so that it fits the phone's width too; no pan or zoom on one wider than its box, so that a
    // swipe scrolls the box
    const update = { width, "title.font.size": width < natural ? 13 : own.title,
      dragmode: width > box ? false : own.drag };
    if (own.moveLegend) {  // a legend beside the plot would take most of a phone's width: under it, in rows
      const fitted = width < natural;
      Object.assign(update, fitted ? { "legend.orientation": "h", "legend.yref": "container", "legend.y": 0,
        "legend.yanchor": "bottom", "legend.x": 0, height: (own.height || 450) + ROOM,
        "margin.b": (own.b ?? 80) + ROOM } : { legend: own.legend, height: own.height, "margin.b": own.b });
    }
    window.Plotly.relayout(plot, update);
  };
  let pending = false;
  const fitAll = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll(".bv-fit-phone .js-plotly-plot").forEach(fit);
    });
  };
  // gradio draws each new figure with Plotly.newPlot, which drops listeners on the plot: watch the page instead
  window.bvFitFigures = new MutationObserver((changes) => {
    if (changes.some((c) => c.target.closest?.(".bv-fit-phone"))) fitAll();
  });
  window.bvFitFigures.observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", fitAll);
  fitAll();
}

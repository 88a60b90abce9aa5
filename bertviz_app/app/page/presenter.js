() => {
  const on = document.body.classList.toggle("bv-presenter");
  const button = document.querySelector("#presenter");
  const t = (text) => window.BertvizViews?.i18n.t(text) ?? text;
  if (button) button.textContent = on ? t("Leave presenter mode") : t("Presenter mode");
  // the picture gets the screen: one row of controls, the others folded under "More options", also in the views
  // that a new input mounts afresh
  const fold = () => document.querySelectorAll("#attention-host .bv-more").forEach((more) => {
    more.open = !document.body.classList.contains("bv-presenter"); });
  fold();
  // a phone's presenter mode has rules of its own (app.css): gradio scopes an @media rule under its container, where
  // body.bv-presenter cannot match, so the page's width is a class on the body
  const narrow = () => document.body.classList.toggle("bv-narrow", window.innerWidth <= 700);
  narrow();
  if (!window.bvNarrow) { window.bvNarrow = narrow; window.addEventListener("resize", narrow); }
  if (!window.bvPresenterObserver) {
    window.bvPresenterObserver = new MutationObserver((changes) => {
      if (changes.some((c) => [...c.addedNodes].some((n) => n.querySelector && n.querySelector(".bv-more")))) fold();
    });
    const host = document.querySelector("#attention-host");
    if (host) window.bvPresenterObserver.observe(host, { childList: true, subtree: true });
  }
}

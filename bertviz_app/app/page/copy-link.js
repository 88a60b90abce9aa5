() => {
  const url = window.location.href;
  const t = (text, values) => window.BertvizViews?.i18n.t(text, values) ?? text;
  const button = document.querySelector("#copy-link");
  const done = (text) => { if (button) { const old = button.textContent; button.textContent = text;
    setTimeout(() => { button.textContent = old; }, 1800); } };
  if (url.length > 8000) alert(t("This link is {n} characters long; some browsers and servers refuse links over "
    + "8,000. Shorter sentences make a link that opens everywhere.", { n: url.length }));
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(url).then(() => done(t("Link copied")), () => window.prompt(t("Copy this link:"), url));
  } else {
    window.prompt(t("Copy this link:"), url);
  }
}

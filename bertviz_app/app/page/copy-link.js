() => {
  const url = window.location.href;
  const button = document.querySelector("#copy-link");
  const done = (text) => { if (button) { const old = button.textContent; button.textContent = text;
    setTimeout(() => { button.textContent = old; }, 1800); } };
  if (url.length > 8000) alert(`This link is ${url.length} characters long; some browsers and servers refuse links `
    + "over 8,000. Shorter sentences make a link that opens everywhere.");
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(url).then(() => done("Link copied"), () => window.prompt("Copy this link:", url));
  } else {
    window.prompt("Copy this link:", url);
  }
}

() => {
  if (window.innerWidth > 700) return;
  const host = document.querySelector("#attention-host");
  if (host) host.scrollIntoView({ block: "start" });
}

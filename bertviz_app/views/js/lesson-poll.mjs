// A class poll on the presenting page: a question step's "Poll the class" opens a poll on the app's server
// (bertviz_app/app/server/class_polls.py), shows its QR code and short address for the students' phones, and the
// tally (counts and bars, no names) once a second; answering or revealing in the bar closes it, and the last tally
// stays. Only the app has a server to count answers: the static page's bar has no such button.

const TALLY_MS = 1000;
const BAR_PX = 260; // the longest bar: the choice most picked

/** The poll routes of the server that served this page: { open(question), tally(key), close(key) }, each a
 * Promise of the server's JSON, or a rejection whose message is the server's sentence. */
export function pollServer(fetchImpl, origin) {
  const call = async (path, body) => {
    const response = await fetchImpl(path, body === undefined ? {} : { method: "POST",
      headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const value = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(value.error || `The poll server answered ${response.status}.`);
    return value;
  };
  return {
    open: (q) => call("/poll/open", { ask: q.ask, choices: q.choices, origin }),
    tally: (key) => call(`/poll/tally?key=${encodeURIComponent(key)}`),
    close: (key) => call("/poll/close", { key }),
  };
}

/** Draw `tally` ({ counts, answers, open }) of `choices` into `list` (made once, updated after). */
function drawTally(doc, list, choices, tally) {
  const most = Math.max(1, ...tally.counts);
  choices.forEach((choice, i) => {
    let row = list.children[i];
    if (!row) {
      row = doc.createElement("li");
      const label = doc.createElement("span");
      label.className = "bv-tally-label";
      label.textContent = choice;
      const bar = doc.createElement("span");
      bar.className = "bv-tally-bar";
      const count = doc.createElement("span");
      count.className = "bv-tally-count";
      row.append(label, bar, count);
      list.append(row);
    }
    row.children[1].style.width = `${Math.round((BAR_PX * tally.counts[i]) / most)}px`;
    row.children[2].textContent = String(tally.counts[i]);
    row.dataset.count = String(tally.counts[i]);
  });
  list.dataset.answers = String(tally.answers);
  list.dataset.open = String(tally.open);
}

/**
 * Open a poll of `q` ({ ask, choices }) through `server` (pollServer's) and show it in `box`: the QR code, the
 * address, the tally. Returns { stop() } (closes the poll; the last tally stays), or null with the refusal said in
 * `box` when the server would not open one.
 */
export async function startPoll(doc, box, q, server, every = TALLY_MS) {
  box.replaceChildren();
  box.hidden = false;
  const say = (text) => {
    const line = doc.createElement("p");
    line.className = "bv-poll-said";
    line.textContent = text;
    box.append(line);
  };
  let poll;
  try {
    poll = await server.open(q);
  } catch (error) {
    say(error.message);
    return null;
  }
  const qr = doc.createElement("img");
  qr.id = "lesson-poll-qr";
  qr.alt = `QR code of ${poll.address}`;
  qr.src = poll.qr; // a data: URI of an SVG the server made (segno)
  const where = doc.createElement("p");
  where.id = "lesson-poll-address";
  where.textContent = poll.address;
  const list = doc.createElement("ol");
  list.id = "lesson-tally";
  list.className = "bv-tally";
  const side = doc.createElement("div");
  side.append(where, list);
  box.append(qr, side);
  drawTally(doc, list, q.choices, { counts: q.choices.map(() => 0), answers: 0, open: true });
  let stopped = false;
  const timer = setInterval(async () => {
    try {
      const tally = await server.tally(poll.key);
      if (!stopped) drawTally(doc, list, q.choices, tally);
    } catch { /* one missed tally: the next second asks again */ }
  }, every);
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      try { drawTally(doc, list, q.choices, await server.close(poll.key)); } catch (error) { say(error.message); }
    },
  };
}

// The list of ready lessons, the same in both hosts: one button per lesson with its title, level and minutes (the
// cards of bertviz_app/lessons.py lesson_card, which the app's page and the static page's manifest carry). Picking
// one plays it from its first step in the host's player. Titles are text: a title's markup is shown, never run.

import { addStylesheet } from "./dom.mjs";
import { validName } from "./lesson.mjs";
import { t, translated } from "./i18n.mjs";

const MAX_CARDS = 200;

/** The cards a host was given, each checked: { name, title, level, minutes, steps }; those that are not lessons'
 * (no valid name) are left out. */
export function readCards(value) {
  if (!Array.isArray(value)) return [];
  return value.slice(0, MAX_CARDS).filter((c) => c && validName(c.name)).map((c) => ({
    name: c.name,
    title: String(translated(c, "title") || c.name).slice(0, 200),
    level: typeof c.level === "string" ? c.level.slice(0, 40) : "",
    minutes: Number.isInteger(c.minutes) && c.minutes > 0 ? c.minutes : null,
    steps: Number.isInteger(c.steps) && c.steps > 0 ? c.steps : null,
  }));
}

/** A card's second line: "beginner · 8 min · 5 steps". */
export function cardLine(card) {
  return [card.level && t(card.level), card.minutes && t("{n} min", { n: card.minutes }),
    card.steps && (card.steps === 1 ? t("{n} step", { n: 1 }) : t("{n} steps", { n: card.steps }))].filter(Boolean).join(" · ");
}

/** The list of `cards` (readCards') as a new element (id lesson-shelf) for the host to place; open(name) plays one. */
export function makeShelf(doc, cards, open) {
  addStylesheet(doc, "lesson.css");
  const shelf = doc.createElement("section");
  shelf.id = "lesson-shelf";
  shelf.className = "bv-lesson-shelf";
  shelf.setAttribute("aria-label", t("Ready lessons"));
  const heading = doc.createElement("h3");
  heading.textContent = t("Ready lessons");
  const list = doc.createElement("ul");
  for (const card of cards) {
    const button = doc.createElement("button");
    button.type = "button";
    button.dataset.lesson = card.name;
    const title = doc.createElement("strong");
    title.textContent = card.title;
    const line = doc.createElement("span");
    line.textContent = cardLine(card);
    button.append(title, line);
    button.addEventListener("click", () => open(card.name));
    const item = doc.createElement("li");
    item.append(button);
    list.append(item);
  }
  shelf.append(heading, list);
  return shelf;
}

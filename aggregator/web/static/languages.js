// The respondent page's language switcher (docs/surveys.md): respond.js imports this module
// only for a survey written in several languages. It picks the page's language (?lang=, else
// the browser's, else the survey's default) and writes <html lang dir>, the survey's own texts,
// its questions' plain-words explanations and the switcher in the language chosen; respond.js
// writes the product's fixed texts (its catalogs) and keeps the answers, which never change.

const RTL = new Set(["ar", "he", "fa", "ur"]);
let rendered = "en";
let fixedTexts = () => {};

/** Show the page in its language and let the switcher change it: `rendered` is the language
 * the server wrote the page in, `showFixed(tag)` writes respond.js's fixed texts in `tag`. */
export function start(survey, renderedIn, showFixed) {
  rendered = renderedIn;
  fixedTexts = showFixed;
  show(survey, pickLanguage(survey));
  const switcher = document.querySelector("[data-lang-switcher]");
  switcher?.addEventListener("change", () => {
    const chosen = matchLanguage(surveyLanguages(survey), switcher.value);
    if (chosen) show(survey, chosen);
  });
}

/** Show the page in `tag`: <html lang dir>, the survey's texts, then the fixed texts. */
export function show(survey, tag) {
  document.documentElement.lang = tag;
  document.documentElement.dir = RTL.has(primary(tag)) ? "rtl" : "ltr";
  document.getElementById("main").dataset.lang = tag;
  showSurveyTexts(survey, tag, rendered);
  fixedTexts(tag);
}

/** The survey's languages: its default first, then its translations'. */
export function surveyLanguages(survey) {
  const first = survey.language || "en";
  return [first, ...Object.keys(survey.translations || {}).filter((tag) => tag !== first)];
}

const primary = (tag) => String(tag).split("-")[0].toLowerCase();

/** The one of `languages` that serves `wanted`: the same tag, else the same primary subtag. */
export function matchLanguage(languages, wanted) {
  if (!wanted) return null;
  const low = String(wanted).toLowerCase();
  return (
    languages.find((tag) => tag.toLowerCase() === low) ||
    languages.find((tag) => primary(tag) === primary(low)) ||
    null
  );
}

/** The page's language: ?lang= when the survey has it, else the browser's first language the
 * survey has (full tag, then primary subtag), else the survey's default. */
export function pickLanguage(survey) {
  const languages = surveyLanguages(survey);
  const asked = matchLanguage(languages, new URLSearchParams(window.location.search).get("lang"));
  if (asked) return asked;
  const browser = navigator.languages?.length ? navigator.languages : [navigator.language];
  for (const wanted of browser) {
    const found = languages.find((tag) => tag.toLowerCase() === String(wanted).toLowerCase());
    if (found) return found;
  }
  for (const wanted of browser) {
    const found = matchLanguage(languages, wanted);
    if (found) return found;
  }
  return languages[0];
}

/** The survey's own texts in `tag` (as Survey.text_in: a translation's words when the survey
 * has one in `tag`, else the default language's), option labels in option order. */
export function surveyTexts(survey, tag) {
  const translations = survey.translations || {};
  const own = Object.hasOwn(translations, tag) ? translations[tag] : null;
  const questions = {};
  for (const question of survey.questions) {
    const mine = own && Object.hasOwn(own.questions || {}, question.id) ? own.questions[question.id] : null;
    const options = question.options || [];
    const labels = Array.isArray(mine?.options) && mine.options.length === options.length;
    questions[question.id] = {
      text: mine ? mine.text : question.text,
      options: labels ? mine.options : options,
      hint: (mine ? mine.hint : question.hint) || "",
      note: (mine ? mine.note : question.note) || "",
    };
  }
  return {
    title: own ? own.title : survey.title,
    description: (own ? own.description : survey.description) || "",
    questions,
  };
}

/** The name of a language in that language ("français", "العربية"), for the switcher. */
function languageName(tag) {
  try {
    const name = new Intl.DisplayNames([tag], { type: "language" }).of(tag);
    return name ? name.charAt(0).toLocaleUpperCase(tag) + name.slice(1) : tag;
  } catch {
    return tag;
  }
}

/** The explanations the page carries: {tag: {questions: {id: text}, totals: [line]}} for the
 * languages the page was not rendered in; the rendered one's are read from the page itself. */
function carriedExplanations(rendered) {
  let found = {};
  try {
    found = JSON.parse(document.getElementById("page-explanations")?.textContent || "{}");
  } catch {
    found = {};
  }
  const questions = {};
  for (const element of document.querySelectorAll("[data-explain]")) {
    questions[element.dataset.explain] = element.textContent;
  }
  const totals = Array.from(document.querySelectorAll("[data-totals] p"), (p) => p.textContent);
  return { ...found, [rendered]: { questions, totals } };
}

let explained = null;

/** Write the survey's texts in `tag`: title, description, questions, options, hints, notes,
 * explanations and the switcher (the fixed texts are respond.js's). */
export function showSurveyTexts(survey, tag, rendered) {
  explained ??= carriedExplanations(rendered);
  const texts = surveyTexts(survey, tag);
  const title = document.querySelector('[data-text="title"]');
  if (title) title.textContent = texts.title;
  document.title = `${texts.title} · deniable`;
  const description = document.querySelector('[data-text="description"]');
  if (description) {
    description.textContent = texts.description;
    description.hidden = !texts.description;
  }
  for (const [id, words] of Object.entries(texts.questions)) {
    const key = CSS.escape(id);
    const text = document.querySelector(`[data-question-text="${key}"]`);
    if (text) text.textContent = words.text;
    for (const label of document.querySelectorAll(`[data-option="${key}"]`)) {
      label.textContent = words.options[Number(label.dataset.index)] ?? label.textContent;
    }
    setOwnText(id, "data-hint", words.hint, "question-hint", "legend", "after");
    setOwnText(id, "data-note", words.note, "note", null, "before");
  }
  const own = Object.hasOwn(explained, tag) ? explained[tag] : null;
  if (own) {
    for (const element of document.querySelectorAll("[data-explain]")) {
      const text = own.questions?.[element.dataset.explain];
      if (typeof text === "string") element.textContent = text;
    }
    const totals = document.querySelector("[data-totals]");
    if (totals && Array.isArray(own.totals)) {
      totals.replaceChildren(
        ...own.totals.map((line) => {
          const paragraph = document.createElement("p");
          paragraph.textContent = line;
          return paragraph;
        }),
      );
    }
  }
  const switcher = document.querySelector("[data-lang-switcher]");
  if (switcher) {
    const languages = surveyLanguages(survey);
    switcher.replaceChildren(
      ...languages.map((each) => {
        const option = document.createElement("option");
        option.value = each;
        option.lang = each;
        option.textContent = languageName(each);
        return option;
      }),
    );
    switcher.value = tag;
    switcher.closest(".languages").hidden = languages.length < 2;
  }
}

/** A question's hint or note in the page's language (an element made when only a
 * translation has one, removed when the language has none). */
function setOwnText(id, attribute, text, className, anchor, where) {
  const item = document.querySelector(`[data-item="${CSS.escape(id)}"]`);
  if (!item) return;
  let element = item.querySelector(`[${attribute}]`);
  if (!text) {
    element?.remove();
    return;
  }
  if (!element) {
    element = document.createElement("p");
    element.className = className;
    element.setAttribute(attribute, id);
    const fieldset = item.querySelector("fieldset");
    if (where === "before") item.insertBefore(element, fieldset);
    else fieldset.querySelector(anchor).after(element);
  }
  element.textContent = text;
}

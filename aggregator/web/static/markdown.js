// ODK's markdown in the survey's texts (docs/xlsform.md), for the respondent page: respond.js
// imports this module only for a survey whose texts may hold it (a star, an underscore, a
// backslash or a line break).
// ODK's markdown in the survey's texts (docs/xlsform.md): **bold** or __bold__, *italic* or
// _italic_, \* for a star, line breaks; built as elements and text nodes, never parsed as HTML,
// so any HTML in a text shows as written.
const MARKDOWN =
  /\\([*_\\])|\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__|\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\p{L}\p{N}_])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\p{L}\p{N}_])|(\n)/gu;

/** `text` as nodes: strings, <strong>, <em> and <br>. */
export function markdownNodes(text) {
  const nodes = [];
  let at = 0;
  for (const found of text.matchAll(MARKDOWN)) {
    if (found.index > at) nodes.push(text.slice(at, found.index));
    const [, escaped, strong, strong2, em, em2, newline] = found;
    if (escaped) nodes.push(escaped);
    else if (newline) nodes.push(document.createElement("br"));
    else {
      const element = document.createElement(strong ?? strong2 ? "strong" : "em");
      element.append(...markdownNodes(strong ?? strong2 ?? em ?? em2));
      nodes.push(element);
    }
    at = found.index + found[0].length;
  }
  if (at < text.length) nodes.push(text.slice(at));
  return nodes;
}

/** Show the survey's texts with their markdown (each once per text it is given). */
export function showMarkdown() {
  const texts = "[data-question-text], [data-option], [data-hint], [data-note], .description";
  for (const element of document.querySelectorAll(texts)) {
    if (element.dataset.shown === element.textContent) continue;
    element.replaceChildren(...markdownNodes(element.textContent));
    element.dataset.shown = element.textContent;
  }
}

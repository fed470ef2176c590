/**
 * HTML as tagged template literals: every interpolated value is escaped
 * (`escape-html`: `& < > " '`) unless it is `Html` made by `html` itself or by
 * `raw`. Arrays are joined; `null`, `undefined` and `false` print nothing.
 */
import escapeHtml from "escape-html";

/** Markup that is already safe: made by `html`, or trusted text passed to `raw`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Value = Html | string | number | boolean | null | undefined | Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** A template whose interpolations are escaped (see the module comment). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return new Html(out);
}

/** Trusted markup, inserted as is. */
export const raw = (text: string): Html => new Html(text);

/**
 * `value` as JSON for a `<script type="application/json">` element: `<`, `>`, `&` and the
 * line separators written as `\u` escapes, so no text in it can close the element.
 */
export function jsonForScript(value: unknown): Html {
  return raw(
    JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );
}

/** A count as people read it: `12,345`. */
export const count = (n: number): string => n.toLocaleString("en-US");

/** A labelled figure of a `.stats` row; `field` names it for tests (`data-field`), `title` explains it on hover. */
export function stat(label: string, field: string, value: string, title?: string, wide = false): Html {
  return html`<div class="stat${wide ? " wide" : ""}"${title ? html` title="${title}"` : ""}><div class="label">${label}</div><div class="value" data-field="${field}">${value}</div></div>`;
}

/** The page frame: title, the stylesheets and scripts served under `/ui/assets`, a header linking back to the list. */
export function layout(title: string, body: Html, scripts: string[] = []): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${title} · Straggler</title>
<link rel="stylesheet" href="/ui/assets/uPlot.min.css">
<link rel="stylesheet" href="/ui/assets/page.css">
${scripts.map((s) => html`<script src="${s}" defer></script>`)}
</head>
<body>
<header class="top"><a href="/ui" class="brand">Straggler</a><span class="where">${title}</span></header>
<main>
${body}
</main>
</body>
</html>
`.text;
}

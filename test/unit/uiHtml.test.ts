/** The pipeline pages' HTML helpers: escaping, JSON inside a script element, where a delay falls on the lateness histogram. */
import { describe, expect, it } from "vitest";
import { html, jsonForScript, raw } from "../../src/ui/html.js";
import { histogramPosition } from "../../src/ui/latenessSection.js";

describe("html", () => {
  it("escapes every interpolated value but its own markup and raw", () => {
    const key = `<img src=x onerror="alert('k')">&`;
    expect(html`<td title="${key}">${key}</td>`.text).toBe(
      '<td title="&lt;img src=x onerror=&quot;alert(&#39;k&#39;)&quot;&gt;&amp;">&lt;img src=x onerror=&quot;alert(&#39;k&#39;)&quot;&gt;&amp;</td>',
    );
    expect(html`<ul>${["a<", html`<li>b</li>`, raw("<hr>"), null, undefined, false, 0]}</ul>`.text).toBe(
      "<ul>a&lt;<li>b</li><hr>0</ul>",
    );
  });

  it("writes JSON that no string in it can end the script element with", () => {
    const text = jsonForScript({ key: "</script><script>alert(1)</script>", amp: "a&b", ls: "\u2028" }).text;
    expect(text).toBe(
      '{"key":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e","amp":"a\\u0026b","ls":"\\u2028"}',
    );
    expect(JSON.parse(text)).toEqual({ key: "</script><script>alert(1)</script>", amp: "a&b", ls: "\u2028" });
  });
});

describe("histogramPosition", () => {
  it("puts a delay inside its bucket: linear below 1 s, logarithmic above, half a bar per decade past 30 days", () => {
    // Bar 0 is "< 0", bar 1 is [0, 1 s), bar 2 [1 s, 10 s), … each spans its index ± 0.5.
    expect(histogramPosition(-5)).toBe(0);
    expect(histogramPosition(0)).toBe(0.5);
    expect(histogramPosition(500)).toBe(1);
    expect(histogramPosition(1_000)).toBe(1.5);
    expect(histogramPosition(10_000)).toBe(2.5);
    expect(histogramPosition(Math.sqrt(10) * 1_000)).toBeCloseTo(2, 12);
    expect(histogramPosition(3_600_000)).toBe(5.5);
    expect(histogramPosition(7_200_000)).toBeCloseTo(5.5 + Math.log(2) / Math.log(6), 12);
    expect(histogramPosition(2_592_000_000)).toBe(9.5);
    expect(histogramPosition(10 * 2_592_000_000)).toBe(10);
    expect(histogramPosition(1e6 * 2_592_000_000)).toBe(10.4);
  });
});

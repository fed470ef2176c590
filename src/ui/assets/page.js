// The pipeline page's script: after the page has loaded, draws the batches' charts (uPlot) from
// GET /ui/pipelines/{pipeline}/batches and fills the lateness section (GET /ui/pipelines/{pipeline}/lateness:
// its markup and the histogram's data; the section is marked loaded once the charts are drawn too), and
// sends the actions (recompute, hold, release) to the REST API with the bearer token, kept in this tab's sessionStorage.
"use strict";

(function () {
  const COLORS = {
    blue: "#2563eb",
    orange: "#ea580c",
    green: "#16a34a",
    red: "#dc2626",
    purple: "#7c3aed",
    grey: "#6b7280",
    teal: "#0d9488",
    amber: "#d97706",
  };
  const REASON_COLORS = [
    COLORS.red,
    COLORS.amber,
    COLORS.purple,
    COLORS.teal,
    COLORS.grey,
    COLORS.blue,
    COLORS.green,
    COLORS.orange,
  ];
  const HEIGHT = 200;
  const charts = {};
  window.stragglerCharts = charts;

  const num = (v) => (v === null || v === undefined ? "-" : v.toLocaleString("en-US", { maximumFractionDigits: 1 }));
  const iso = (s) => (s === null || s === undefined ? "-" : new Date(s * 1000).toISOString().replace(".000Z", "Z"));
  const utc = (s) => uPlot.tzDate(new Date(s * 1000), "Etc/UTC");

  function widthOf(el) {
    return Math.max(260, Math.floor(el.clientWidth) - 2);
  }

  function make(name, opts, data) {
    const el = document.querySelector(`[data-chart="${name}"]`);
    if (!el) return;
    const base = { width: widthOf(el), height: HEIGHT, tzDate: utc, cursor: { drag: { x: true, y: false } } };
    charts[name] = new uPlot(Object.assign(base, opts), data, el);
  }

  const batchAxis = { label: "batch", labelSize: 18, size: 36 };
  const line = (label, stroke, extra) =>
    Object.assign({ label, stroke, width: 1.5, value: (_u, v) => num(v) }, extra || {});
  const bars = (label, fill, maxWidth) => ({
    label,
    stroke: fill,
    fill,
    width: 0,
    value: (_u, v) => num(v),
    paths: uPlot.paths.bars({ size: [0.7, maxWidth || 12] }),
    points: { show: false },
  });

  /** Seconds as the largest unit that keeps them readable: `[divisor, unit]`. */
  function unitFor(maxSeconds) {
    if (maxSeconds >= 2 * 86400) return [86400, "d"];
    if (maxSeconds >= 2 * 3600) return [3600, "h"];
    if (maxSeconds >= 120) return [60, "min"];
    return [1, "s"];
  }

  function drawBatches(b) {
    const x = b.batchId;
    make(
      "rates",
      {
        title: "Input rate vs processing rate (rows/s)",
        scales: { x: { time: false } },
        axes: [batchAxis, { size: 72 }],
        series: [{ label: "batch" }, line("input rows/s", COLORS.blue), line("processed rows/s", COLORS.orange)],
      },
      [x, b.inputRowsPerSecond, b.processedRowsPerSecond],
    );

    make(
      "duration",
      {
        title: "Batch duration (ms)",
        scales: { x: { time: false } },
        axes: [batchAxis, { size: 50 }],
        series: [{ label: "batch" }, line("duration ms", COLORS.teal, { fill: "rgba(13,148,136,0.12)" })],
      },
      [x, b.durationMs],
    );

    // The gap (max event time so far − watermark: the watermark's lag) is tiny beside months of event time: it has its own axis.
    const gap = b.maxEventTimeSoFar.map((m, i) => (m === null || b.watermark[i] === null ? null : m - b.watermark[i]));
    // Batches whose rows were all behind the max so far (late data) show as points.
    const behind = b.eventTimeMax.map((m, i) =>
      m !== null && b.maxEventTimeSoFar[i] !== null && m < b.maxEventTimeSoFar[i] ? m : null,
    );
    const [div, unit] = unitFor(Math.max(0, ...gap.filter((g) => g !== null)));
    make(
      "eventTime",
      {
        title: "Max event time and watermark (UTC), and the gap between them",
        scales: {
          x: { time: false },
          y: { time: true },
          gap: { time: false, range: (_u, _min, max) => [0, Math.max(max, 1) * 1.1] },
        },
        axes: [
          batchAxis,
          { size: 90 },
          {
            scale: "gap",
            side: 1,
            size: 50,
            grid: { show: false },
            incrs: [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100].map((v) => v * div),
            values: (_u, splits) => splits.map((v) => `${+(v / div).toFixed(2)}${unit}`),
          },
        ],
        series: [
          { label: "batch" },
          line("max event time", COLORS.blue, { value: (_u, v) => iso(v), spanGaps: true }),
          line("watermark", COLORS.red, { value: (_u, v) => iso(v), spanGaps: true }),
          {
            label: "a batch's newest event, when behind the max",
            stroke: COLORS.grey,
            width: 0,
            paths: () => null,
            points: { show: true, size: 4, fill: COLORS.grey, stroke: COLORS.grey },
            value: (_u, v) => iso(v),
          },
          {
            label: `gap (${unit})`,
            scale: "gap",
            stroke: COLORS.amber,
            width: 1.5,
            dash: [4, 3],
            value: (_u, v) => (v === null || v === undefined ? "-" : `${+(v / div).toFixed(2)} ${unit}`),
            points: { show: false },
          },
        ],
        bands: [{ series: [1, 2], fill: "rgba(37,99,235,0.10)" }],
      },
      [x, b.maxEventTimeSoFar, b.watermark, behind, gap],
    );

    make(
      "dropped",
      {
        title: "Dropped (event, window) pairs (numRowsDroppedByWatermark)",
        scales: { x: { time: false } },
        axes: [batchAxis, { size: 50 }],
        series: [{ label: "batch" }, bars("dropped pairs", COLORS.red)],
      },
      [x, b.droppedPairs],
    );

    const reasons = Object.keys(b.quarantinedByReason);
    const qSeries = reasons.length > 0 ? reasons : ["quarantined"];
    make(
      "quarantined",
      {
        title: "Quarantined rows by reason",
        scales: { x: { time: false } },
        axes: [batchAxis, { size: 50 }],
        series: [{ label: "batch" }, ...qSeries.map((r, i) => bars(r, REASON_COLORS[i % REASON_COLORS.length]))],
      },
      [x, ...qSeries.map((r) => b.quarantinedByReason[r] || x.map(() => 0))],
    );
  }

  function drawLateness(l) {
    const labels = l.buckets.map((b) => b.label);
    const markColors = { configured: COLORS.red, recommended: COLORS.green };
    make(
      "lateness",
      {
        title: "Lateness histogram (accepted rows), with the configured and recommended delays",
        height: 240,
        scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
        axes: [
          {
            values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? labels[v] || "" : "")),
            incrs: [1],
            size: 36,
            label: "lateness",
            labelSize: 18,
          },
          { size: 60 },
        ],
        legend: { show: true },
        series: [
          { label: "lateness", value: (_u, v) => (v === null || v === undefined ? "-" : labels[Math.round(v)] || "-") },
          bars("rows", COLORS.blue, 90),
        ],
        hooks: {
          draw: [
            (u) => {
              const ctx = u.ctx;
              ctx.save();
              ctx.font = `${Math.round(12 * devicePixelRatio)}px sans-serif`;
              ctx.fillStyle = COLORS.grey;
              ctx.textAlign = "center";
              l.buckets.forEach((b, i) => {
                if (b.count === 0) return;
                ctx.fillText(
                  num(b.count),
                  u.valToPos(i, "x", true),
                  u.valToPos(b.count, "y", true) - 4 * devicePixelRatio,
                );
              });
              l.marks.forEach((m, i) => {
                const px = Math.round(u.valToPos(m.x, "x", true));
                ctx.strokeStyle = ctx.fillStyle = markColors[m.kind] || COLORS.grey;
                ctx.lineWidth = 2 * devicePixelRatio;
                ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
                ctx.beginPath();
                ctx.moveTo(px, u.bbox.top);
                ctx.lineTo(px, u.bbox.top + u.bbox.height);
                ctx.stroke();
                ctx.textAlign = px > u.bbox.left + u.bbox.width * 0.75 ? "right" : "left";
                const dx = ctx.textAlign === "right" ? -4 * devicePixelRatio : 4 * devicePixelRatio;
                ctx.fillText(m.label, px + dx, u.bbox.top + (14 + 16 * i) * devicePixelRatio);
              });
              ctx.restore();
            },
          ],
        },
      },
      [labels.map((_, i) => i), l.buckets.map((b) => b.count)],
    );
  }

  function resize() {
    for (const name of Object.keys(charts)) {
      const el = document.querySelector(`[data-chart="${name}"]`);
      if (el) charts[name].setSize({ width: widthOf(el), height: charts[name].height });
    }
  }

  // Actions: the token is asked for in the form and kept for this tab only.
  const TOKEN_KEY = "straggler.token";

  function show(answer, text) {
    answer.hidden = false;
    answer.textContent = text;
  }

  async function send(pipeline, action, body) {
    const form = document.getElementById("recompute");
    const input = document.getElementById("token");
    const answer = document.getElementById("action-answer");
    const token = input.value.trim() || sessionStorage.getItem(TOKEN_KEY) || "";
    if (token === "") {
      show(answer, "Enter the API token (STRAGGLER_API_TOKEN) first.");
      input.focus();
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    input.value = "";
    input.placeholder = "token kept in this tab";
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    show(answer, `${action}: running…`);
    answer.className = "";
    try {
      const res = await fetch(`/pipelines/${encodeURIComponent(pipeline)}/${action}`, {
        method: "POST",
        headers: Object.assign(
          { authorization: `Bearer ${token}` },
          body ? { "content-type": "application/json" } : {},
        ),
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      let json;
      try {
        json = JSON.parse(text);
      } catch (_e) {
        json = undefined;
      }
      if (res.status === 401) sessionStorage.removeItem(TOKEN_KEY);
      answer.className = res.ok ? "ok" : "failed";
      let head = `${action}: HTTP ${res.status}`;
      if (json && action === "recompute" && res.status < 500 && json.runId !== undefined) {
        head += ` — run ${json.runId} ${json.status}: ${json.windowsExamined} windows examined, ${json.windowsChanged} changed, ${json.eventsRecovered} events recovered`;
      } else if (json && json.message) {
        head += ` — ${json.message}`;
      }
      show(
        answer,
        `${head}\n\n${json ? JSON.stringify(json, null, 2) : text}${res.ok ? "\n\nReload the page to see what it changed." : ""}`,
      );
    } catch (e) {
      answer.className = "failed";
      show(answer, `${action}: the request failed: ${e.message}`);
    } finally {
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
    // After a hold or a release, reload: the state, the windows and the buttons change with it.
    if (answer.className === "ok" && action !== "recompute") location.reload();
  }

  function wireActions() {
    const form = document.getElementById("recompute");
    if (!form) return;
    const pipeline = form.dataset.pipeline;
    if (sessionStorage.getItem(TOKEN_KEY)) document.getElementById("token").placeholder = "token kept in this tab";
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const body = {};
      const from = form.elements.from.value.trim();
      const to = form.elements.to.value.trim();
      const keys = form.elements.keys.value
        .split(",")
        .map((k) => k.trim())
        .filter((k) => k !== "");
      if (from !== "") body.from = from;
      if (to !== "") body.to = to;
      if (keys.length > 0) body.keys = keys;
      send(pipeline, "recompute", Object.keys(body).length > 0 ? body : undefined);
    });
    document.getElementById("hold-button").addEventListener("click", () => {
      const reason = form.elements.reason.value.trim();
      if (reason === "") {
        show(
          document.getElementById("action-answer"),
          "Give a reason for the hold: it is kept with it and shown while the pipeline is held.",
        );
        form.elements.reason.focus();
        return;
      }
      send(pipeline, "hold", { reason });
    });
    document.getElementById("release-button").addEventListener("click", () => send(pipeline, "release", undefined));
  }

  /** Draws the batches' charts from their series, fetched after the page; on a failure the section says why. */
  async function loadBatches() {
    const section = document.getElementById("batches");
    if (!section || !section.querySelector("[data-chart]")) return;
    try {
      const q = new URLSearchParams({ batches: section.dataset.batches });
      const res = await fetch(`/ui/pipelines/${encodeURIComponent(section.dataset.pipeline)}/batches?${q}`);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const batches = await res.json();
      if (batches.batchId.length > 0) drawBatches(batches);
    } catch (e) {
      const p = document.createElement("p");
      p.className = "error";
      p.id = "batches-error";
      p.textContent = `The batches could not be read: ${e.message}`;
      section.appendChild(p);
    }
  }

  /**
   * Fills the lateness section: "loading…" until the report comes, then the report or why there is none;
   * marked loaded once `charts` (the batches' charts, fetched beside it) are drawn too.
   */
  async function loadLateness(charts) {
    const section = document.getElementById("lateness");
    if (!section) return;
    const fail = (why) => {
      section.innerHTML = '<h2>Lateness</h2><p class="error" id="lateness-error"></p>';
      section.querySelector("#lateness-error").textContent = `The lateness report could not be read: ${why}`;
      section.dataset.state = "failed";
    };
    try {
      const res = await fetch(`/ui/pipelines/${encodeURIComponent(section.dataset.pipeline)}/lateness`);
      if (!res.ok) return fail(`HTTP ${res.status}`);
      const answer = await res.json();
      // The markup is the server's, every value in it escaped (src/ui/latenessSection.ts).
      section.innerHTML = answer.html;
      if (answer.chart) drawLateness(answer.chart);
      await charts;
      section.dataset.state = "loaded";
    } catch (e) {
      fail(e.message);
    }
  }

  function start() {
    loadLateness(loadBatches());
    wireActions();
    let timer;
    window.addEventListener("resize", () => {
      clearTimeout(timer);
      timer = setTimeout(resize, 100);
    });
  }

  start();
})();

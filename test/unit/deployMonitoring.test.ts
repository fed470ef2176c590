/**
 * The shipped monitoring (deploy/): the Prometheus alerting rules pass `promtool check rules` and
 * their unit tests (`promtool test rules`), forward every built-in alert, and name only metrics
 * `/metrics` serves; every Grafana panel's query parses as PromQL (`promtool check rules` on a
 * recording rule per query).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml, stringify } from "yaml";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import { configuredAlerts } from "../../src/observe/alerts.js";
import { createMetrics } from "../../src/observe/metrics.js";

const root = path.resolve(import.meta.dirname, "../..");
const alertsFile = path.join(root, "deploy/prometheus/alerts.yml");
const dashboardFile = path.join(root, "deploy/grafana/straggler.json");

function promtool(args: string[]): { status: number | null; output: string } {
  const r = spawnSync("promtool", args, { encoding: "utf8" });
  if (r.error) throw new Error(`promtool could not be run (Debian: apt-get install prometheus): ${r.error.message}`);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
}
const groups = (parseYaml(readFileSync(alertsFile, "utf8")) as { groups: { name: string; rules: Rule[] }[] }).groups;

interface Panel {
  id: number;
  title: string;
  targets: { refId: string; expr: string }[];
}
const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as { uid: string; panels: Panel[] };

/** The metric names `/metrics` serves (a histogram's `_bucket`, `_sum`, `_count` included). */
function servedNames(): Set<string> {
  const names = createMetrics([])
    .registry.getMetricsAsArray()
    .map((m) => m.name);
  const histograms = ["straggler_stream_batch_duration_seconds", "straggler_http_request_duration_seconds"];
  return new Set([...names, ...histograms.flatMap((h) => [`${h}_bucket`, `${h}_sum`, `${h}_count`])]);
}

const referenced = (exprs: string[]) =>
  [...new Set(exprs.flatMap((e) => e.match(/\bstraggler_[a-z_]+/g) ?? []))].sort();

describe("deploy/prometheus/alerts.yml", () => {
  it("passes promtool check rules and its unit tests (alerts.test.yml)", () => {
    expect(promtool(["check", "rules", alertsFile])).toEqual({
      status: 0,
      output: `Checking ${alertsFile}\n  SUCCESS: 11 rules found\n\n`,
    });
    const tested = promtool(["test", "rules", path.join(root, "deploy/prometheus/alerts.test.yml")]);
    expect([
      tested.status,
      tested.output
        .trim()
        .split("\n")
        .map((l) => l.trim()),
    ]).toEqual([0, [`Unit Testing:  ${path.join(root, "deploy/prometheus/alerts.test.yml")}`, "SUCCESS"]]);
  });

  it("forwards each built-in alert (src/observe/alerts.ts) from straggler_alert_firing, and names only served metrics", () => {
    const everyAlert = pipelineSchema.parse({
      name: "all",
      fields: { eventTime: "t" },
      window: { type: "tumbling", size: "1 minute" },
      watermark: { delay: "1 minute" },
      alerts: { quarantineShare: { above: "5%" }, watermarkStalled: { for: "15 minutes" }, backlog: { above: 1000 } },
      correction: { reconcile: { schedule: "0 * * * *" } },
    });
    const builtIn = groups.find((g) => g.name === "straggler-built-in")!.rules;
    expect(builtIn.map((r) => [r.labels?.alert_name, r.expr])).toEqual(
      configuredAlerts(everyAlert).map((name) => [
        name,
        `max by (pipeline) (straggler_alert_firing{alert="${name}"}) == 1`,
      ]),
    );
    expect(builtIn.map((r) => r.alert)).toEqual([
      "StragglerDropShare",
      "StragglerQuarantineShare",
      "StragglerWatermarkStalled",
      "StragglerBacklog",
      "StragglerCorrectionFailed",
      "StragglerReconcileDrift",
    ]);
    const names = referenced(groups.flatMap((g) => g.rules.map((r) => r.expr)));
    expect(names.filter((n) => !servedNames().has(n))).toEqual([]);
    expect(names).toEqual([
      "straggler_alert_firing",
      "straggler_backlog_rows",
      "straggler_correction_runs_total",
      "straggler_dropped_pairs_total",
      "straggler_reconcile_mismatched_windows",
      "straggler_rows_landed_total",
      "straggler_stream_input_rows_total",
      "straggler_watermark_seconds",
    ]);
  });
});

describe("deploy/grafana/straggler.json", () => {
  it("has the panels, each query valid PromQL (promtool check rules) over served metrics", () => {
    expect([dashboard.uid, dashboard.panels.map((p) => p.title)]).toEqual([
      "straggler",
      [
        "Watermark lag",
        "Input vs processed rows",
        "Dropped pairs",
        "Quarantined rows by reason",
        "Stream backlog",
        "Correction backlog",
        "Corrections",
        "Alerts firing",
      ],
    ]);
    const rules = dashboard.panels.flatMap((p) =>
      p.targets.map((t) => ({ record: `straggler:panel_${p.id}_${t.refId}`, expr: t.expr })),
    );
    expect(rules).toHaveLength(13);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "straggler-panels-")), "panels.rules.yml");
    writeFileSync(file, stringify({ groups: [{ name: "grafana-panels", rules }] }));
    expect(promtool(["check", "rules", file])).toEqual({
      status: 0,
      output: `Checking ${file}\n  SUCCESS: 13 rules found\n\n`,
    });
    const names = referenced(rules.map((r) => r.expr));
    expect(names.filter((n) => !servedNames().has(n))).toEqual([]);
    expect(names).toEqual([
      "straggler_alert_firing",
      "straggler_backlog_rows",
      "straggler_correction_backlog_windows",
      "straggler_correction_runs_running",
      "straggler_correction_runs_total",
      "straggler_correction_windows_changed_total",
      "straggler_dropped_pairs_total",
      "straggler_ledger_quarantined_rows",
      "straggler_max_event_time_lag_seconds",
      "straggler_rows_landed_total",
      "straggler_stream_input_rows_total",
      "straggler_watermark_lag_seconds",
    ]);
  });

  it("a panel query that is not PromQL is refused by the same check (the control)", () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "straggler-panels-")), "bad.rules.yml");
    writeFileSync(
      file,
      stringify({
        groups: [
          {
            name: "grafana-panels",
            rules: [{ record: "straggler:bad", expr: "rate(straggler_rows_landed_total[$__rate_interval])" }],
          },
        ],
      }),
    );
    const r = promtool(["check", "rules", file]);
    expect([
      r.status,
      r.output.includes(
        '"straggler:bad": could not parse expression: 1:34: parse error: missing unit character in duration',
      ),
    ]).toEqual([1, true]);
  });
});

/**
 * The monitoring package (config/monitoring, and the chart's copies in
 * charts/internal-services/files): the alerting rules pass `promtool check
 * rules` and their unit tests (test/monitoring/*.test.yaml, `promtool test
 * rules`); the chart carries exactly the same rules and dashboard; every
 * PromQL expression of the dashboard is valid (promtool) and, like every
 * alert, reads only metrics the controller exports (src/metrics.ts, read
 * from its registry); every alert links to its runbook in
 * docs/troubleshooting.md.
 *
 * promtool comes from hack/promtool/install.sh (Debian's package, or built
 * from the Prometheus Go module, cached); the tests fail if it cannot.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseDocument, stringify } from 'yaml';
import { repoRoot } from '../../src/util/repo.js';
import { createMetrics } from '../../src/metrics.js';

const root = repoRoot();
const path = (...p: string[]) => join(root, ...p);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleSpec {
  groups: Array<{ name: string; rules: Rule[] }>;
}
interface Run {
  status: number | null;
  out: string;
}

function run(cmd: string, args: string[], cwd = root): Run {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

// ---------------------------------------------------------------- PromQL

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: identifiers that are not
 * functions, aggregations, keywords, label names (in {…} or in by/without/
 * on/ignoring/group_* lists), strings, durations or numbers.
 */
export function metricNames(expr: string): string[] {
  let s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  s = s.replace(/\{[^}]*\}/g, ' ');
  s = s.replace(/\[[^\]]*\]/g, ' ');
  s = s.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of s.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const at = m.index ?? 0;
    if (/^\s*\(/.test(s.slice(at + word.length))) continue; // a function or an aggregation
    if (KEYWORDS.has(word.toLowerCase())) continue;
    if (at > 0 && /[0-9.]/.test(s[at - 1] ?? '')) continue; // 1e3, 25h
    names.add(word);
  }
  return [...names];
}

/** Grafana's variables as a query would see them (all values selected). */
function grafanaToPromQL(expr: string): string {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}/g, '5m')
    .replace(/\$__interval|\$\{__interval\}/g, '1m')
    .replace(/\$__range|\$\{__range\}/g, '1h')
    .replace(/\$\{?(?:job|remote|namespace|pipeline)\}?/g, '.*');
}

interface DashboardQuery {
  where: string;
  expr: string;
}

/** Every query of the dashboard: panel targets (rows included) and the selectors of label_values() variables. */
function dashboardQueries(d: { panels: unknown[]; templating: { list: Array<{ name: string; type: string; query?: unknown; definition?: string }> } }): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: unknown[]) => {
    for (const p of panels as Array<{ id: number; title: string; panels?: unknown[]; targets?: Array<{ expr?: string; refId: string }> }>) {
      if (p.panels) walk(p.panels);
      for (const t of p.targets ?? []) {
        assert.ok(t.expr && t.expr.trim(), `panel ${p.id} "${p.title}" target ${t.refId} has no expr`);
        out.push({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: t.expr });
      }
    }
  };
  walk(d.panels);
  for (const v of d.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
    const m = /^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(q.trim());
    assert.ok(m, `variable ${v.name}: expected label_values(selector, label), got ${q}`);
    out.push({ where: `variable ${v.name}`, expr: m[1]! });
  }
  return out;
}

/** GitHub's anchor of a Markdown heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

// ---------------------------------------------------------------- fixtures

const prometheusRule = parse(readFileSync(path('config', 'monitoring', 'prometheusrule.yaml'), 'utf8')) as { apiVersion: string; kind: string; spec: RuleSpec };
const spec = prometheusRule.spec;
const rules = spec.groups.flatMap((g) => g.rules);
const alerts = rules.filter((r): r is Rule & { alert: string } => typeof r.alert === 'string');
const dashboardText = readFileSync(path('config', 'monitoring', 'grafana-dashboard.json'), 'utf8');
const dashboard = JSON.parse(dashboardText) as Parameters<typeof dashboardQueries>[0] & { schemaVersion: number; uid: string; templating: { list: Array<{ name: string; type: string; query?: unknown }> } };
const testFiles = readdirSync(path('test', 'monitoring')).filter((f) => f.endsWith('.test.yaml'));

/** What the controller exports, as Prometheus names the series: histograms as _bucket, _sum and _count. */
async function exportedSeriesNames(): Promise<{ series: Set<string>; families: string[] }> {
  const metrics = await createMetrics().registry.getMetricsAsJSON();
  const series = new Set<string>();
  for (const m of metrics) {
    const type = String(m.type); // 'counter', 'gauge', 'histogram', 'summary' at run time (the typings say an enum)
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) series.add(m.name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) series.add(m.name + suffix);
    else series.add(m.name);
  }
  return { series, families: metrics.map((m) => m.name) };
}

let work = '';
let rulesFile = '';

before(() => {
  work = mkdtempSync(join(tmpdir(), 'internal-services-monitoring-'));
  rulesFile = join(work, 'prometheus-rules.yaml');
  writeFileSync(rulesFile, stringify(spec));
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

let installed: { path: string } | { error: string } | undefined;

/** The path of promtool from hack/promtool/install.sh (run once); a test that needs it fails if it cannot be had. */
function promtool(): string {
  if (!installed) {
    const r = spawnSync('bash', [path('hack', 'promtool', 'install.sh')], { cwd: root, encoding: 'utf8' });
    const printed = (r.stdout ?? '').trim();
    if (r.status !== 0 || !printed.startsWith('/')) {
      installed = { error: `hack/promtool/install.sh could not provide promtool (exit ${r.status}${r.error ? `: ${r.error.message}` : ''}); the monitoring tests need it. Its output:\n${r.stderr ?? ''}${r.stdout ?? ''}` };
    } else {
      installed = { path: printed };
    }
  }
  if ('error' in installed) assert.fail(installed.error);
  return installed.path;
}

test('promtool is available (hack/promtool/install.sh)', () => {
  const r = run(promtool(), ['--version']);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /promtool, version/);
});

describe('alerting rules', () => {
  test('config/monitoring/prometheusrule.yaml is a PrometheusRule with alerts', () => {
    assert.equal(prometheusRule.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(prometheusRule.kind, 'PrometheusRule');
    assert.ok(alerts.length >= 6, `only ${alerts.length} alerts`);
    assert.equal(new Set(alerts.map((a) => a.alert)).size, alerts.length, 'two alerts share a name');
  });

  test('promtool check rules accepts its spec, and the chart copy as it is', () => {
    const r = run(promtool(), ['check', 'rules', rulesFile]);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${rules.length} rules found`));
    const chart = run(promtool(), ['check', 'rules', path('charts', 'internal-services', 'files', 'prometheus-rules.yaml')]);
    assert.equal(chart.status, 0, chart.out);
  });

  test('promtool test rules: the rule tests of test/monitoring pass against the spec', () => {
    assert.ok(testFiles.length > 0, 'no test/monitoring/*.test.yaml');
    for (const f of testFiles) {
      // Edited as a document, so that every other scalar keeps its source text
      // (parsed and printed again, a series value like 0x49 would become 73).
      const t = parseDocument(readFileSync(path('test', 'monitoring', f), 'utf8'));
      t.set('rule_files', [rulesFile]);
      const copy = join(work, f);
      writeFileSync(copy, String(t));
      const r = run(promtool(), ['test', 'rules', copy], work);
      assert.equal(r.status, 0, `promtool test rules ${f} failed:\n${r.out}`);
      assert.match(r.out, /SUCCESS/);
    }
  });

  test('every alert is tested firing (with its annotations) and not firing', () => {
    const firing = new Map<string, number>();
    const silent = new Map<string, number>();
    const annotated = new Set<string>();
    for (const f of testFiles) {
      const t = parse(readFileSync(path('test', 'monitoring', f), 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: Array<{ exp_annotations?: unknown }> }> }> };
      for (const group of t.tests) {
        for (const a of group.alert_rule_test ?? []) {
          const exp = a.exp_alerts ?? [];
          const m = exp.length ? firing : silent;
          m.set(a.alertname, (m.get(a.alertname) ?? 0) + 1);
          if (exp.some((e) => e.exp_annotations)) annotated.add(a.alertname);
        }
      }
    }
    for (const a of alerts) {
      assert.ok(firing.get(a.alert), `${a.alert}: no test expects it to fire`);
      assert.ok(silent.get(a.alert), `${a.alert}: no test expects it to stay silent`);
      assert.ok(annotated.has(a.alert), `${a.alert}: no test checks its rendered annotations`);
    }
  });

  test('each alert has a severity, a summary, a description and a runbook in docs/troubleshooting.md#alerts', () => {
    const doc = readFileSync(path('docs', 'troubleshooting.md'), 'utf8');
    const alertsSection = doc.split(/^## /m).find((s) => s.startsWith('Alerts\n'));
    assert.ok(alertsSection, 'docs/troubleshooting.md has no "## Alerts" section');
    const runbooks = new Set([...alertsSection.matchAll(/^### (.+)$/gm)].map((m) => slug(m[1]!)));
    for (const a of alerts) {
      assert.match(a.labels?.severity ?? '', /^(critical|warning|info)$/, `${a.alert}: severity`);
      assert.ok(a.annotations?.summary, `${a.alert}: summary`);
      assert.ok(a.annotations?.description, `${a.alert}: description`);
      const url = a.annotations?.runbook_url ?? '';
      const m = /\/docs\/troubleshooting\.md#([a-z0-9_-]+)$/.exec(url);
      assert.ok(m, `${a.alert}: runbook_url ${url} does not point to a section of docs/troubleshooting.md`);
      assert.equal(m[1], slug(a.alert), `${a.alert}: its runbook anchor should be its own heading`);
      assert.ok(runbooks.has(m[1]!), `${a.alert}: no "### ${a.alert}" in the Alerts section of docs/troubleshooting.md`);
    }
    const table = readFileSync(path('docs', 'monitoring.md'), 'utf8');
    for (const a of alerts) assert.ok(table.includes(`\`${a.alert}\``), `${a.alert} is missing from docs/monitoring.md`);
  });
});

describe('the Helm chart carries the same files', () => {
  test('files/prometheus-rules.yaml is exactly the PrometheusRule spec (top level: groups)', () => {
    const chart = parse(readFileSync(path('charts', 'internal-services', 'files', 'prometheus-rules.yaml'), 'utf8')) as unknown;
    assert.deepEqual(Object.keys(chart as object), ['groups']);
    assert.deepEqual(chart, spec, 'charts/internal-services/files/prometheus-rules.yaml differs from the spec of config/monitoring/prometheusrule.yaml');
  });

  test('files/grafana-dashboard.json is identical to config/monitoring/grafana-dashboard.json', () => {
    const chart = readFileSync(path('charts', 'internal-services', 'files', 'grafana-dashboard.json'), 'utf8');
    assert.ok(chart === dashboardText, 'charts/internal-services/files/grafana-dashboard.json differs from config/monitoring/grafana-dashboard.json: copy it over');
  });
});

describe('the dashboard', () => {
  test('a Grafana dashboard with a Prometheus datasource variable, used by every query', () => {
    assert.ok(dashboard.schemaVersion >= 39, `schemaVersion ${dashboard.schemaVersion} is older than Grafana 11`);
    assert.equal(dashboard.uid, 'internal-services');
    const ds = dashboard.templating.list.find((v) => v.type === 'datasource');
    assert.ok(ds && ds.name === 'datasource' && ds.query === 'prometheus', 'no datasource variable of type prometheus');
    for (const name of ['remote', 'namespace']) assert.ok(dashboard.templating.list.some((v) => v.name === name), `no ${name} variable`);
    const refs = [...dashboardText.matchAll(/"datasource":\s*\{\s*"type":\s*"([^"]+)",\s*"uid":\s*"([^"]+)"/g)].map((m) => `${m[1]}/${m[2]}`);
    assert.ok(refs.length > 0);
    for (const r of refs) assert.ok(r === 'prometheus/${datasource}' || r === 'grafana/-- Grafana --', `a hard-wired datasource: ${r}`);
    const ids = new Set<number>();
    const walk = (ps: Array<{ id: number; panels?: unknown[] }>) => {
      for (const p of ps) {
        assert.ok(!ids.has(p.id), `two panels with id ${p.id}`);
        ids.add(p.id);
        if (p.panels) walk(p.panels as Array<{ id: number }>);
      }
    };
    walk(dashboard.panels as Array<{ id: number }>);
  });

  test('the metric name extraction finds metric names and nothing else', () => {
    assert.deepEqual(
      metricNames('histogram_quantile(0.9, sum by (le, request) (rate(a_seconds_bucket{job=~"x", reason=~"Succeeded|Failed"}[5m]))) / on (job) group_left () b_total offset 1h > 1e3 and bool c'),
      ['a_seconds_bucket', 'b_total', 'c'],
    );
    assert.deepEqual(metricNames('count((up{a="b"} and on (job, instance) (x == 1)) == 0) or vector(0)'), ['up', 'x']);
    assert.deepEqual(metricNames('min_over_time(max by (job) (g)[25h:5m]) - sum(h unless h offset 25h)'), ['g', 'h']);
  });

  test('every query reads only metrics the controller exports', async () => {
    const { series } = await exportedSeriesNames();
    const queries = dashboardQueries(dashboard);
    assert.ok(queries.length >= 20, `only ${queries.length} queries`);
    for (const q of queries) {
      const names = metricNames(q.expr);
      assert.ok(names.length > 0, `${q.where}: reads no metric: ${q.expr}`);
      for (const n of names) assert.ok(series.has(n), `${q.where}: ${n} is not exported by the controller (src/metrics.ts): ${q.expr}`);
    }
  });

  test('every metric family of the controller is on the dashboard', async () => {
    // internal_services_reconcile_errors_total counts what internal_services_reconcile_total{result="error"} shows.
    const notShown = new Set(['internal_services_reconcile_errors_total']);
    const { families } = await exportedSeriesNames();
    const used = new Set(dashboardQueries(dashboard).flatMap((q) => metricNames(q.expr)));
    for (const f of families) {
      if (!f.startsWith('internal_') || notShown.has(f)) continue;
      assert.ok([f, `${f}_bucket`, `${f}_sum`, `${f}_count`].some((n) => used.has(n)), `${f} is exported (src/metrics.ts) but no panel shows it`);
    }
  });

  test('promtool parses every query (as recording rules, with the variables filled in)', () => {
    const queries = dashboardQueries(dashboard);
    const file = join(work, 'dashboard-queries.yaml');
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: grafanaToPromQL(q.expr), labels: { where: q.where } })) }] }));
    const r = run(promtool(), ['check', 'rules', file]);
    assert.equal(r.status, 0, `promtool rejects a dashboard query:\n${r.out}`);
    assert.match(r.out, new RegExp(`SUCCESS: ${queries.length} rules found`));
  });
});

describe('alerts read only exported metrics', () => {
  test('every rule expression', async () => {
    const { series } = await exportedSeriesNames();
    for (const r of rules) {
      const names = metricNames(r.expr);
      assert.ok(names.length > 0, `${r.alert ?? r.record}: reads no metric`);
      for (const n of names) assert.ok(series.has(n), `${r.alert ?? r.record}: ${n} is not exported by the controller (src/metrics.ts)`);
    }
  });
});

describe('config/monitoring/kustomization.yaml', () => {
  test('ships the rules, the ServiceMonitor and the dashboard as a ConfigMap for the Grafana sidecar', () => {
    const k = parse(readFileSync(path('config', 'monitoring', 'kustomization.yaml'), 'utf8')) as {
      resources: string[];
      configMapGenerator: Array<{ name: string; files: string[]; options?: { labels?: Record<string, string>; disableNameSuffixHash?: boolean } }>;
    };
    assert.ok(k.resources.includes('prometheusrule.yaml'));
    assert.ok(k.resources.includes('servicemonitor.yaml'));
    for (const r of k.resources) readFileSync(path('config', 'monitoring', r));
    const gen = k.configMapGenerator.find((g) => g.files.some((f) => f.endsWith('=grafana-dashboard.json') || f === 'grafana-dashboard.json'));
    assert.ok(gen, 'no configMapGenerator entry with grafana-dashboard.json');
    assert.equal(gen.options?.labels?.grafana_dashboard, '1');
    assert.equal(gen.options?.disableNameSuffixHash, true);
    const sm = parse(readFileSync(path('config', 'monitoring', 'servicemonitor.yaml'), 'utf8')) as { spec: { endpoints: Array<{ port: string; honorLabels?: boolean }> } };
    assert.equal(sm.spec.endpoints[0]?.port, 'metrics');
    assert.equal(sm.spec.endpoints[0]?.honorLabels, true, 'the queries need the controller\'s own namespace label');
  });
});

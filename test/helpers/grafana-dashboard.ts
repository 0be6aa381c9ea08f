// The PromQL of grafana/tenantgate.json as data: every panel's queries, and Grafana's variables filled in the way
// Grafana fills them, for the dashboard's unit test and bench/prometheus-check.ts. Reads the file; never writes it.
import { readFileSync } from 'node:fs';

export const DASHBOARD_PATH = new URL('../../grafana/tenantgate.json', import.meta.url).pathname;

export interface DashboardTarget {
  refId: string;
  expr: string;
  datasource?: { type: string; uid: string };
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: DashboardTarget[];
  panels?: DashboardPanel[];
}

export interface DashboardVariable {
  name: string;
  type: string;
  definition?: string;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}

export interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: DashboardVariable[] };
}

export interface DashboardQuery {
  panel: string;
  refId: string;
  expr: string;
}

export function readDashboard(path = DASHBOARD_PATH): Dashboard {
  return JSON.parse(readFileSync(path, 'utf8')) as Dashboard;
}

/** The panels that draw something (rows left out, their nested panels included). */
export function dataPanels(dashboard: Dashboard): DashboardPanel[] {
  return dashboard.panels.flatMap((panel) => (panel.type === 'row' ? (panel.panels ?? []) : [panel]));
}

export function dashboardQueries(dashboard: Dashboard): DashboardQuery[] {
  return dataPanels(dashboard).flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, refId: target.refId, expr: target.expr })));
}

/**
 * The expression as Grafana sends it to Prometheus: `$tenant` as the regex of the chosen tenants (Grafana joins a
 * multi-value selection as `(a|b)`), `$__rate_interval` and `$__range` (the dashboard's time range) as fixed ranges.
 */
export function expandVariables(expr: string, values: { tenants: string[]; rateInterval: string; range: string }): string {
  return expr
    .replaceAll('$__rate_interval', values.rateInterval)
    .replaceAll('$__range', values.range)
    .replaceAll('$tenant', `(${values.tenants.join('|')})`);
}

// One bench scenario: what it measures, run once per `npm run bench`, bounded in count and time, loopback only.
export interface ScenarioOptions {
  /** `npm run bench -- --quick`: every scenario briefly (all of them together under 3 minutes), to catch breakage. */
  quick: boolean;
  log(line: string): void;
}
/** A target from issue 6, stated as met or not with the figure measured in the same run. */
export interface TargetCheck {
  target: string; // e.g. "small GET: >= 0.90x direct requests/s"
  value: number;
  unit: string; // e.g. "x direct", "ms", "MB/s", "KB"
  met: boolean;
}
export interface Chart {
  title: string;
  unit: string;
  /** Bars: label -> value (e.g. direct, passthrough, tenantgate). */
  bars: Record<string, number>;
}
export interface ScenarioResult {
  scenario: string;
  /** Every figure of the run, JSON-serializable, with units in the key names (e.g. p99Ms, requestsPerSecond). */
  figures: Record<string, unknown>;
  targets: TargetCheck[];
  charts: Chart[];
}
export interface Scenario {
  name: string; // file-name safe: results go to bench/results/<name>.json
  description: string;
  run(options: ScenarioOptions): Promise<ScenarioResult>;
}

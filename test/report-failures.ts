// After a failed `tap` run: print each failed assertion, with the subtests it sits in and the start of its
// diagnostics, from the TAP that tap saved per file in .tap/test-results. CI shows only the tail of a long
// log, where tap's own lines say how many failed but not which.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const RESULTS = '.tap/test-results';
const DIAGNOSTIC_LINES = 24;
// Diagnostic keys that say where the runner ran, not what failed.
const UNTOLD_KEYS = new Set(['at', 'stack', 'stdio', 'cwd', 'command', 'args', 'externalID', 'signal']);

function tapFiles(dir: string): string[] {
  let found: string[] = [];
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) found = found.concat(tapFiles(path));
      else if (entry.name.endsWith('.tap')) found.push(path);
    }
  } catch {
    // no results saved: nothing to report
  }
  return found.sort();
}

function failuresIn(tap: string): string[] {
  const report: string[] = [];
  const subtestAt: string[] = [];
  const lines = tap.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const depth = Math.floor((line.length - line.trimStart().length) / 4);
    const text = line.trimStart();
    if (text.startsWith('# Subtest: ')) {
      subtestAt[depth] = text.slice('# Subtest: '.length);
      subtestAt.length = depth + 1;
      continue;
    }
    if (!text.startsWith('not ok ') || /#\s*(TODO|SKIP)\b/i.test(text)) continue;
    // A failed subtest's own "not ok" only repeats what its failed assertions said.
    if (lines[i - 1]?.trimStart().startsWith('1..') && lines[i - 1]!.length - lines[i - 1]!.trimStart().length > line.length - text.length) continue;
    report.push(`  ${[...subtestAt.slice(0, depth), text].join(' > ')}`);
    if (lines[i + 1]?.trim() === '---') {
      const keyIndent = lines[i + 1]!.indexOf('---');
      let shown = 0;
      let told = true;
      for (let j = i + 2; j < lines.length && lines[j]!.trim() !== '...' && shown < DIAGNOSTIC_LINES; j++) {
        const diagnostic = lines[j]!;
        const key = /^(\w+):/.exec(diagnostic.slice(keyIndent));
        if (key) told = !UNTOLD_KEYS.has(key[1]!);
        if (!told) continue;
        report.push(`      ${diagnostic.slice(keyIndent)}`);
        shown++;
      }
    }
  }
  return report;
}

let failedFiles = 0;
for (const file of tapFiles(RESULTS)) {
  const report = failuresIn(readFileSync(file, 'utf8'));
  if (report.length === 0) continue;
  failedFiles++;
  console.log(`\n# failed in ${relative(RESULTS, file).replace(/\.tap$/, '')}:`);
  for (const line of report) console.log(line);
}
console.log(`\n# ${failedFiles} test file(s) with failures`);

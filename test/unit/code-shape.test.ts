// The size a newcomer can still change safely: no module of lib/ or workers/ over 800 lines unless its opening comment
// says why it is long (issue 29). Fails when a file grows past the line, naming it, so a split is decided, not drifted into.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAX_LINES = 800;
/** What an opening comment says when a module is long on purpose: `// Long on purpose: <why>`. */
const REASON = /^\/\/ Long on purpose: \S/m;

function modulesUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(folder, file));
}

/** The comment lines a module opens with (its job), where a reason for its length belongs. */
function openingComment(text: string): string {
  const lines = text.split('\n');
  const end = lines.findIndex((line) => !line.startsWith('//'));
  return lines.slice(0, end === -1 ? lines.length : end).join('\n');
}

t.test(`no module in lib/ or workers/ is over ${MAX_LINES} lines without a reason at its top`, async (t) => {
  const modules = [...modulesUnder('lib'), ...modulesUnder('workers')];
  t.ok(modules.length > 100, `read the modules (${modules.length})`);
  const tooLong = modules.flatMap((module) => {
    const text = readFileSync(join(ROOT, module), 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    return lines > MAX_LINES && !REASON.test(openingComment(text)) ? [`${module}: ${lines} lines`] : [];
  });
  t.same(tooLong, [], 'split these along their seams, or say at their top why they are long');
});

t.test('the check reads an opening comment, not a reason further down', async (t) => {
  t.ok(REASON.test(openingComment('// The job.\n// Long on purpose: one state machine.\nimport x from "y";\n')));
  t.notOk(REASON.test(openingComment('// The job.\nimport x from "y";\n// Long on purpose: too late.\n')));
});

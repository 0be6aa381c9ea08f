// Build step (npm run build, the Dockerfile): assembles each WebAssembly text file under lib/ into binary, beside
// its source (tests and the bench run lib/ as TypeScript) and under dist/ (the compiled server). The binaries are
// never committed; wabt, the WebAssembly Binary Toolkit, is a build-time dependency only.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import wabtModule from 'wabt';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wabt = await wabtModule();
const sources = readdirSync(join(root, 'lib'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.wat'));
for (const source of sources) {
  const path = join(root, 'lib', source);
  const module = wabt.parseWat(relative(root, path), readFileSync(path, 'utf8'), { simd: true });
  try {
    module.validate();
    const { buffer } = module.toBinary({});
    const wasm = source.replace(/\.wat$/, '.wasm');
    for (const target of [join(root, 'lib', wasm), join(root, 'dist', 'lib', wasm)]) {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, buffer);
    }
    console.log(`assembled lib/${source}: ${buffer.length} bytes`);
  } finally {
    module.destroy();
  }
}

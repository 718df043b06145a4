// Validates rendered Kubernetes objects (multi-document YAML files, "-" for
// stdin) two ways:
//   1. the OpenAPI schemas bundled in kubernetes-models (built-in kinds) and
//      @kubernetes-models/prometheus-operator and /keda (the CRDs the chart
//      uses): types, formats, required fields, quantities;
//   2. unknown fields (like kubeconform -strict): every object becomes a
//      typed TypeScript literal of its kind's interface and `tsc --strict`
//      checks it, so a misspelt or misplaced key fails.
// Run from (or with NODE_PATH at) the directory holding node_modules.
// Usage: node validate_k8s.mjs CI_DIR FILE...
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [ciDir, ...files] = process.argv.slice(2);
const requireFromCi = createRequire(path.join(path.resolve(ciDir), 'package.json'));
const { parseAllDocuments } = requireFromCi('yaml');
const packageOf = (group) =>
  group === 'monitoring.coreos.com' ? '@kubernetes-models/prometheus-operator'
  : group === 'keda.sh' ? '@kubernetes-models/keda' : 'kubernetes-models';
const modulePath = (group, version) => `${packageOf(group)}/${group ? group + '/' : ''}${version}`;

let failed = 0, checked = 0;
const literals = [];
for (const file of files) {
  const text = readFileSync(file === '-' ? 0 : file, 'utf8');
  for (const doc of parseAllDocuments(text)) {
    const obj = doc.toJS();
    if (!obj) continue;
    const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
    const name = `${file}: ${obj.kind}/${obj.metadata?.name}`;
    try {
      const spec = modulePath(group, version);
      // The packages export ESM only: import the file itself.
      const file = path.join(path.resolve(ciDir), 'node_modules', spec, `${obj.kind}.js`);
      const mod = await import(pathToFileURL(file).href);
      new mod[obj.kind](obj).validate();
      literals.push({ spec, kind: obj.kind, obj, name });
      checked++;
    } catch (e) {
      failed++;
      console.error(`${name}: ${String(e.message).split('\n')[0]}`);
    }
  }
}
console.log(`schemas: ${checked} objects valid, ${failed} invalid`);

// Unknown fields: typed literals through tsc.
const tmp = mkdtempSync(path.join(path.resolve(ciDir), '.k8scheck-'));
try {
  literals.forEach(({ spec, kind, obj }, i) => {
    writeFileSync(path.join(tmp, `o${i}.ts`),
      `import type { I${kind} } from '${spec}/${kind}';\nexport const o: I${kind} = ${JSON.stringify(obj, null, 2)};\n`);
  });
  if (literals.length > 0) {
    try {
      execFileSync('node', [path.join(path.resolve(ciDir), 'node_modules/typescript/bin/tsc'), '--noEmit',
        '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext',
        '--target', 'es2020', ...literals.map((_, i) => path.join(tmp, `o${i}.ts`))],
      { cwd: path.resolve(ciDir), encoding: 'utf8', stdio: 'pipe' });
      console.log(`unknown fields: none in ${literals.length} objects (tsc --strict)`);
    } catch (e) {
      failed++;
      const out = String(e.stdout || '') + String(e.stderr || '');
      for (const line of out.split('\n').filter(Boolean)) {
        const m = line.match(/o(\d+)\.ts/);
        console.error(m ? line.replace(/^.*o\d+\.ts/, literals[Number(m[1])].name) : line);
      }
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

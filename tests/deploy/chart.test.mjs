// Unit tests of the Helm chart over `helm template` output (node --test).
// Env: HELM (the helm binary), CI_DIR (tools/ci, for the yaml package),
// SOURCE_DIR (the repository).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import test from 'node:test';

const { HELM, CI_DIR, SOURCE_DIR } = process.env;
const requireFromCi = createRequire(path.join(path.resolve(CI_DIR), 'package.json'));
const YAML = requireFromCi('yaml');
const chart = path.join(SOURCE_DIR, 'helm/kvmesh');
const monitoringApis = ['monitoring.coreos.com/v1/ServiceMonitor', 'monitoring.coreos.com/v1/PrometheusRule'];

function helm(args, { apis = [], values = [] } = {}) {
  const argv = ['template', 'r', chart, '--namespace', 'llm', '--kube-version', '1.30.0'];
  for (const a of apis) argv.push('--api-versions', a);
  for (const v of values) argv.push('-f', path.join(chart, 'ci', v));
  return execFileSync(HELM, [...argv, ...args], {
    encoding: 'utf8', stdio: 'pipe', env: { ...process.env, KUBECONFIG: '/dev/null' } });
}
function render(opts = {}, args = []) {
  return YAML.parseAllDocuments(helm(args, opts)).map((d) => d.toJS()).filter(Boolean);
}
function renderError(args, opts = {}) {
  try { helm(args, opts); } catch (e) { return String(e.stderr); }
  assert.fail(`helm template ${args.join(' ')} succeeded`);
}
const find = (objs, kind, name) => objs.find((o) => o.kind === kind && (!name || o.metadata.name === name));
const all = (objs, kind) => objs.filter((o) => o.kind === kind);
const podSpecs = (objs) => objs.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind)).map((o) => o.spec.template.spec);
const args = (container) => container.args;

test('routers: a Deployment of 2 that find every ready worker through one headless Service', () => {
  const objs = render();
  const router = find(objs, 'Deployment', 'r-kvmesh-router');
  assert.equal(router.spec.replicas, 2);
  const dns = args(router.spec.template.spec.containers[0]).find((a) => a.startsWith('--workers-dns='));
  assert.equal(dns, '--workers-dns=r-kvmesh-workers.llm.svc.cluster.local:50051');
  const headless = find(objs, 'Service', 'r-kvmesh-workers');
  assert.equal(headless.spec.clusterIP, 'None');
  assert.equal(headless.spec.publishNotReadyAddresses, false, 'only ready workers are routed to');
  assert.equal(headless.spec.selector['app.kubernetes.io/component'], 'worker');
  const sts = find(objs, 'StatefulSet', 'r-kvmesh-stories');
  assert.equal(sts.spec.serviceName, 'r-kvmesh-stories');
  assert.equal(find(objs, 'Service', 'r-kvmesh-stories').spec.clusterIP, 'None');
  assert.equal(sts.spec.template.spec.containers[0].readinessProbe.httpGet.path, '/healthz');
});

test('the grace period outlasts preStop plus the drain, and a shorter one is refused', () => {
  for (const values of [[], ['gpu-values.yaml']]) {
    for (const spec of podSpecs(render({ values }))) {
      const c = spec.containers[0];
      const preStop = Number(c.lifecycle.preStop.exec.command[1]);
      const drain = Number(args(c).find((a) => a.startsWith('--shutdown-grace-seconds=')).split('=')[1]);
      assert.ok(spec.terminationGracePeriodSeconds > preStop + drain,
        `${spec.terminationGracePeriodSeconds} <= ${preStop} + ${drain}`);
    }
  }
  assert.match(renderError(['--set', 'worker.terminationGracePeriodSeconds=60']),
    /worker.terminationGracePeriodSeconds \(60\) must exceed worker.preStopSeconds \+ worker.drainSeconds \(130\)/);
});

test('monitoring objects render only where the Prometheus Operator is, and rules can be turned off', () => {
  assert.equal(find(render(), 'ServiceMonitor'), undefined);
  const objs = render({ apis: monitoringApis });
  assert.ok(find(objs, 'ServiceMonitor'));
  assert.ok(find(objs, 'PodMonitor'));
  const rule = find(objs, 'PrometheusRule');
  const rules = YAML.parse(readFileSync(path.join(SOURCE_DIR, 'deploy/prometheus/rules.yml'), 'utf8'));
  assert.deepEqual(rule.spec.groups, rules.groups, 'the PrometheusRule is deploy/prometheus/rules.yml');
  assert.equal(find(render({ apis: monitoringApis }, ['--set', 'monitoring.prometheusRule.enabled=false']), 'PrometheusRule'), undefined);
  assert.equal(all(objs, 'ConfigMap').length, 3, 'one ConfigMap per Grafana dashboard');
});

test('the chart carries the same rules and dashboards as deploy/', () => {
  assert.equal(readFileSync(path.join(chart, 'files/rules.yml'), 'utf8'),
    readFileSync(path.join(SOURCE_DIR, 'deploy/prometheus/rules.yml'), 'utf8'));
  const dashboards = readdirSync(path.join(SOURCE_DIR, 'deploy/grafana')).filter((f) => f.endsWith('.json'));
  assert.deepEqual(readdirSync(path.join(chart, 'files/dashboards')).sort(), dashboards.sort());
  for (const f of dashboards) {
    assert.equal(readFileSync(path.join(chart, 'files/dashboards', f), 'utf8'),
      readFileSync(path.join(SOURCE_DIR, 'deploy/grafana', f), 'utf8'), f);
  }
});

test('GPU workers ask for GPUs, land on GPU nodes and get their devices and split', () => {
  const objs = render({ values: ['gpu-values.yaml'] });
  const big = find(objs, 'StatefulSet', 'r-kvmesh-llama-8b').spec.template.spec;
  assert.equal(big.containers[0].resources.limits['nvidia.com/gpu'], 2);
  assert.equal(big.nodeSelector['nvidia.com/gpu.product'], 'NVIDIA-H100-80GB-HBM3');
  assert.ok(big.tolerations.some((t) => t.key === 'nvidia.com/gpu'));
  assert.ok(args(big.containers[0]).includes('--devices=cuda:0,cuda:1'));
  assert.ok(args(big.containers[0]).includes('--split=tensor'));
  assert.ok(args(big.containers[0]).some((a) => a.startsWith('--model-sha256=0123')), 'the sha256 is required');
  assert.equal(big.initContainers[0].name, 'download-model');
  const small = find(objs, 'StatefulSet', 'r-kvmesh-qwen-coder').spec.template.spec;
  assert.equal(small.containers[0].resources.limits['nvidia.com/gpu'], 1);
  assert.equal(small.volumes.find((v) => v.name === 'models').persistentVolumeClaim.claimName, 'models');
  const cpu = find(render(), 'StatefulSet', 'r-kvmesh-stories').spec.template.spec;
  assert.equal(cpu.containers[0].resources.limits['nvidia.com/gpu'], undefined, 'no GPU unless asked');
  assert.equal(cpu.nodeSelector, undefined);
});

test('every container runs restricted: non-root, read-only root, no capabilities, RuntimeDefault seccomp', () => {
  for (const spec of podSpecs(render({ values: ['gpu-values.yaml'] }))) {
    assert.equal(spec.securityContext.runAsNonRoot, true);
    assert.equal(spec.securityContext.seccompProfile.type, 'RuntimeDefault');
    assert.equal(spec.automountServiceAccountToken, false);
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      assert.equal(c.securityContext.runAsNonRoot, true, c.name);
      assert.equal(c.securityContext.readOnlyRootFilesystem, true, c.name);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, c.name);
      assert.deepEqual(c.securityContext.capabilities.drop, ['ALL'], c.name);
      assert.equal(c.securityContext.seccompProfile.type, 'RuntimeDefault', c.name);
    }
  }
});

test('topology spread is on by default and can be turned off', () => {
  for (const spec of podSpecs(render())) {
    const keys = spec.topologySpreadConstraints.map((t) => t.topologyKey);
    assert.deepEqual(keys, ['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
  }
  for (const spec of podSpecs(render({ values: ['hpa-values.yaml'] }))) {
    assert.equal(spec.topologySpreadConstraints, undefined);
  }
});

test('network policy: routers, metrics scrapers and peer workers reach workers, which reach only DNS and each other', () => {
  const objs = render();
  const np = find(objs, 'NetworkPolicy', 'r-kvmesh-workers');
  const component = (rule) => rule.from ? rule.from[0].podSelector.matchLabels['app.kubernetes.io/component']
    : rule.to[0].podSelector.matchLabels['app.kubernetes.io/component'];
  assert.deepEqual(np.spec.policyTypes, ['Ingress', 'Egress']);
  assert.equal(component(np.spec.ingress[0]), 'router');
  assert.equal(component(np.spec.ingress[1]), 'worker', 'KV pages between workers');
  assert.deepEqual(np.spec.ingress[1].ports, [{ protocol: 'TCP', port: 50051 }], 'peers get the gRPC port only');
  assert.deepEqual(np.spec.ingress[2].ports, [{ protocol: 'TCP', port: 9090 }], 'scrapers get the metrics port only');
  assert.equal(np.spec.egress.length, 2);
  assert.ok(np.spec.egress[0].ports.every((p) => p.port === 53));
  assert.equal(component(np.spec.egress[1]), 'worker');
  assert.deepEqual(np.spec.egress[1].ports, [{ protocol: 'TCP', port: 50051 }]);
  const gpu = find(render({ values: ['gpu-values.yaml'] }), 'NetworkPolicy', 'r-kvmesh-workers');
  assert.equal(gpu.spec.egress[2].to[0].ipBlock.cidr, '203.0.113.10/32', 'the download host only');
  assert.equal(find(render({ values: ['hpa-values.yaml'] }), 'NetworkPolicy'), undefined);
});

test('API keys come from a Secret; TLS from a Secret mounted into the router', () => {
  const objs = render({ values: ['full-values.yaml'], apis: ['keda.sh/v1alpha1/ScaledObject'] });
  const secret = find(objs, 'Secret', 'r-kvmesh-api-keys');
  assert.equal(secret.stringData['api-keys'], 'sk-local-0123456789');
  const router = find(objs, 'Deployment').spec.template.spec;
  const env = router.containers[0].env.find((e) => e.name === 'KVMESH_ROUTER_API_KEYS');
  assert.equal(env.valueFrom.secretKeyRef.name, 'r-kvmesh-api-keys');
  assert.ok(args(router.containers[0]).includes('--tls-cert=/etc/kvmesh/tls/tls.crt'));
  assert.equal(router.volumes.find((v) => v.name === 'tls').secret.secretName, 'kvmesh-tls');
  assert.equal(router.containers[0].readinessProbe.httpGet.scheme, 'HTTPS');
  assert.equal(find(render(), 'Secret'), undefined, 'no keys, no Secret');
});

test('inside the cluster: mutual TLS on every call to a worker, and the service token', () => {
  const objs = render({ values: ['full-values.yaml'], apis: ['keda.sh/v1alpha1/ScaledObject', ...monitoringApis] });
  const worker = find(objs, 'StatefulSet').spec.template.spec;
  const wargs = args(worker.containers[0]);
  for (const a of ['--tls-cert=/etc/kvmesh/internal-tls/tls.crt', '--tls-key=/etc/kvmesh/internal-tls/tls.key',
    '--tls-ca=/etc/kvmesh/internal-tls/ca.crt', '--tls-client-auth', '--tls-server-name=kvmesh-internal']) {
    assert.ok(wargs.includes(a), a);
  }
  assert.equal(worker.volumes.find((v) => v.name === 'internal-tls').secret.secretName, 'kvmesh-internal-tls');
  assert.equal(worker.containers[0].readinessProbe.httpGet.scheme, 'HTTPS');
  const token = (c, name) => c.env.find((e) => e.name === name).valueFrom.secretKeyRef;
  assert.deepEqual(token(worker.containers[0], 'KVMESH_WORKER_SERVICE_TOKEN'),
    { name: 'kvmesh-service-token', key: 'service-token' });
  const router = find(objs, 'Deployment').spec.template.spec;
  const rargs = args(router.containers[0]);
  for (const a of ['--worker-tls-ca=/etc/kvmesh/internal-tls/ca.crt', '--worker-tls-cert=/etc/kvmesh/internal-tls/tls.crt',
    '--worker-tls-key=/etc/kvmesh/internal-tls/tls.key', '--worker-tls-server-name=kvmesh-internal']) {
    assert.ok(rargs.includes(a), a);
  }
  assert.deepEqual(token(router.containers[0], 'KVMESH_ROUTER_WORKER_TOKEN'),
    { name: 'kvmesh-service-token', key: 'service-token' });
  const scrape = find(objs, 'PodMonitor').spec.podMetricsEndpoints[0];
  assert.equal(scrape.scheme, 'https');
  assert.equal(scrape.tlsConfig.ca.secret.name, 'kvmesh-internal-tls');
  // Off by default: plaintext, no token.
  const plain = render();
  const plainWorker = find(plain, 'StatefulSet').spec.template.spec.containers[0];
  assert.ok(!args(plainWorker).some((a) => a.startsWith('--tls')));
  assert.ok(!plainWorker.env.some((e) => e.name === 'KVMESH_WORKER_SERVICE_TOKEN'));
  assert.match(renderError(['--set', 'tls.internal.serverName=Bad_Name']), /tls.internal.serverName/);
});

test('autoscaling: a KEDA ScaledObject per model on queue depth, or an HPA', () => {
  const keda = render({ values: ['full-values.yaml'], apis: ['keda.sh/v1alpha1/ScaledObject'] });
  const so = find(keda, 'ScaledObject', 'r-kvmesh-stories');
  assert.equal(so.spec.scaleTargetRef.name, 'r-kvmesh-stories');
  assert.match(so.spec.triggers[0].metadata.query, /kvmesh_worker_queue_depth\{kvmesh_io_model="stories"\}/);
  assert.equal(find(keda, 'StatefulSet').spec.replicas, undefined, 'the autoscaler owns replicas');
  assert.match(renderError([], { values: ['full-values.yaml'] }), /autoscaling.kind keda needs KEDA/);
  const hpa = find(render({ values: ['hpa-values.yaml'] }), 'HorizontalPodAutoscaler');
  assert.equal(hpa.spec.metrics[0].pods.metric.name, 'kvmesh_worker_queue_depth');
});

test('disaggregation: prefill and decode sets of a model get their roles, the routers peer fetch', () => {
  const models = [{ name: 'stories-prefill', role: 'prefill' }, { name: 'stories-decode', role: 'decode' },
    { name: 'stories' }].map((m) => ({ replicas: 1, file: 'stories260K.gguf',
    source: { type: 'hostPath', hostPath: { path: '/models' } }, ...m }));
  const objs = render({}, ['--set-json', 'models=' + JSON.stringify(models), '--set', 'router.peerFetch=true']);
  const workerArgs = (name) => args(find(objs, 'StatefulSet', name).spec.template.spec.containers[0]);
  assert.ok(workerArgs('r-kvmesh-stories-prefill').includes('--role=prefill'));
  assert.ok(workerArgs('r-kvmesh-stories-decode').includes('--role=decode'));
  assert.ok(!workerArgs('r-kvmesh-stories').some((a) => a.startsWith('--role')), 'both is the default');
  assert.ok(args(find(objs, 'Deployment').spec.template.spec.containers[0]).includes('--prefix-peer-fetch'));
  assert.ok(!args(find(render(), 'Deployment').spec.template.spec.containers[0]).includes('--prefix-peer-fetch'));
  assert.match(renderError(['--set', 'worker.role=prefil']), /worker.role/);
});

test('KV eviction: least recently used by default, adaptive per model or for all', () => {
  const stories = (objs) => args(find(objs, 'StatefulSet', 'r-kvmesh-stories').spec.template.spec.containers[0]);
  assert.ok(!stories(render()).some((a) => a.startsWith('--kv-eviction')), 'lru is the worker default');
  assert.ok(stories(render({}, ['--set', 'worker.kvEviction=adaptive'])).includes('--kv-eviction=adaptive'));
  const model = [{ name: 'stories', replicas: 1, file: 'stories260K.gguf', kvEviction: 'adaptive',
    source: { type: 'hostPath', hostPath: { path: '/models' } } }];
  assert.ok(stories(render({}, ['--set-json', 'models=' + JSON.stringify(model)])).includes('--kv-eviction=adaptive'));
  assert.match(renderError(['--set', 'worker.kvEviction=mru']), /worker.kvEviction/);
});

test('bad values are refused with a message naming them', () => {
  assert.match(renderError(['--set', 'router.replicas=two']), /router.replicas: Invalid type. Expected: integer/);
  assert.match(renderError(['--set', 'router.replica=2']), /Additional property replica is not allowed/);
  const model = (extra) => ['--set-json', 'models=' + JSON.stringify([{ name: 'm', replicas: 1, file: 'm.gguf',
    source: { type: 'hostPath', hostPath: { path: '/models' } }, ...extra }])];
  assert.ok(render({}, model({})).length > 0, 'the base model renders');
  assert.match(renderError(model({ sha256: 'abc' })), /models.0.sha256: Does not match pattern/);
  assert.match(renderError(model({ name: 'Big_Model' })), /models.0.name: Does not match pattern/);
  assert.match(renderError(['--set', 'worker.kvType=q3']), /worker.kvType/);
  const url = { source: { type: 'url', url: 'https://x/m.gguf' } };
  assert.match(renderError(model(url)), /a model downloaded from a url needs its sha256/);
  assert.match(renderError(model({ ...url, sha256: 'a'.repeat(64) })),
    /list the download host in networkPolicy.downloadTo/);
  assert.match(renderError(model({ source: { type: 'pvc' } })), /source pvc needs pvc.claimName/);
  assert.match(renderError(['--set-json', 'models=[]']), /models: Array must have at least 1 items/);
});

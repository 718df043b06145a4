#!/bin/sh
# ctest entry: every Grafana dashboard in deploy/grafana type-checks against
# @grafana/schema's Dashboard type (tsc --noEmit, loosened only where the
# schema declares string enums), and every PromQL expression in them parses
# (promtool check rules over the expressions as recording rules, with
# Grafana's $__rate_interval and $instance filled in).
# Prints SKIP and passes when node, promtool, jq or the npm packages are missing.
# Usage: check_dashboards.sh SOURCE_DIR CI_DIR
set -eu
src="$1"; ci_dir="$2"
for tool in node promtool jq; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is not installed; the dashboard check did not run"; exit 0; }
done
for package in typescript @grafana/schema; do
  [ -f "$ci_dir/node_modules/$package/package.json" ] ||
    { echo "SKIP: npm package $package is not installed in $ci_dir; the dashboard check did not run"; exit 0; }
done
tmp=$(mktemp -d "$ci_dir/.dashcheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/loose.ts" <<'TS'
import type { Dashboard } from '@grafana/schema';
// The schema's enums (e.g. thresholds.mode) as the strings JSON holds.
type Loose<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T
  : T extends readonly (infer U)[] ? Loose<U>[] : T extends object ? { [K in keyof T]: Loose<T[K]> } : T;
export type JsonDashboard = Loose<Dashboard>;
TS
count=0
for f in "$src"/deploy/grafana/*.json; do
  n=$(basename "$f" .json)
  { echo "import type { JsonDashboard } from './loose';"; printf 'export const d: JsonDashboard = '; cat "$f"; echo ';'; } >"$tmp/$n.ts"
  count=$((count + 1))
done
(cd "$ci_dir" && node node_modules/typescript/bin/tsc --noEmit --strict --skipLibCheck \
  --moduleResolution bundler --module esnext --target es2020 "$tmp"/*.ts)
echo "$count dashboards type-check against @grafana/schema"
exprs=0
for f in "$src"/deploy/grafana/*.json; do
  n=$(basename "$f" .json)
  jq -r --arg n "$n" '[.. | objects | select(has("expr")) | .expr] | to_entries |
    "groups:\n- name: \($n)\n  rules:\n" +
    (map("  - record: dashboard:\($n):\(.key)\n    expr: \(.value | gsub("\\$__rate_interval|\\$__interval"; "5m") | gsub("\\$instance"; ".*") | tojson)") | join("\n"))' \
    "$f" >"$tmp/$n.rules.yml"
  promtool check rules "$tmp/$n.rules.yml" >/dev/null
  exprs=$((exprs + $(grep -c "record:" "$tmp/$n.rules.yml")))
done
echo "$exprs PromQL expressions parse (promtool)"
echo "PASS"

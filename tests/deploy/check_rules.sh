#!/bin/sh
# ctest entry: deploy/prometheus's rules and config are valid
# (promtool check rules / check config) and its unit tests pass
# (promtool test rules: each alert fires on the series that should fire it
# and stays quiet on the near misses). Prints SKIP and passes without promtool.
# Usage: check_rules.sh SOURCE_DIR
set -eu
dir="$1/deploy/prometheus"
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool is not installed; the rules check did not run"; exit 0; }
promtool check rules "$dir/rules.yml"
promtool check config "$dir/prometheus.yml"
(cd "$dir" && promtool test rules rules_test.yml)
echo "PASS"

#!/usr/bin/env bash
# Fails when a C++ source in the tree differs from its clang-format output.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' '*.cu' '*.cuh')
[ ${#files[@]} -eq 0 ] && exit 0
clang-format --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"

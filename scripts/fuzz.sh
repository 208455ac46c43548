#!/usr/bin/env bash
# Runs every Fuzz target of the main module for a short time each.
#
#   scripts/fuzz.sh [FUZZTIME]     (default 10s; any `go test -fuzztime` value)
#
# `go test -fuzz` takes one package and one target at a time, so the targets
# are found by their declarations (`func FuzzXxx(f *testing.F)` in *_test.go)
# and run one by one. Modules nested below the root (e2e/) are left out: they
# are not part of ./... either.
set -euo pipefail

fuzztime="${1:-10s}"
cd "$(dirname "$0")/.."

# Directories holding their own go.mod, other than the root: not our packages.
nested=()
while IFS= read -r mod; do
	nested+=("$(dirname "$mod")")
done < <(find . -mindepth 2 -name go.mod -not -path '*/.*' -not -path '*/testdata/*' | sort)

in_nested() {
	local d
	for d in "${nested[@]+"${nested[@]}"}"; do
		case "$1" in "$d" | "$d"/*) return 0 ;; esac
	done
	return 1
}

targets=()
while IFS= read -r file; do
	dir=$(dirname "$file")
	in_nested "$dir" && continue
	while IFS= read -r name; do
		targets+=("$dir $name")
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*\*testing\.F).*/\1/p' "$file")
done < <(find . -name '*_test.go' -not -path '*/.*' -not -path '*/testdata/*' | sort)

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no Fuzz targets found; nothing to do"
	exit 0
fi

echo "fuzz: ${#targets[@]} target(s), ${fuzztime} each"
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	echo "fuzz: ${dir} ${name}"
	go test -run='^$' -fuzz="^${name}\$" -fuzztime="${fuzztime}" "${dir}"
done

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

# fuzz_one runs one target. Go 1.26's fuzzing coordinator can fail a
# target with a bare "context deadline exceeded" when -fuzztime ends while
# a worker is busy (golang/go#75804, fixed in Go 1.27; it shows on a loaded
# machine, a few times in a hundred target runs here). Such a failure, with
# no failing input written and no panic, is run again, up to three runs in
# all; any other failure, or the same one three times, fails.
fuzz_one() {
	local dir=$1 name=$2 out rc
	for attempt in 1 2 3; do
		out=$(mktemp)
		set +e
		go test -run='^$' -fuzz="^${name}\$" -fuzztime="${fuzztime}" "${dir}" 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		set -e
		if [ "$rc" -eq 0 ]; then
			rm -f "$out"
			return 0
		fi
		if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$out" &&
			! grep -qE 'Failing input written|panic:' "$out"; then
			echo "fuzz: ${dir} ${name}: the Go 1.26 fuzztime deadline race (golang/go#75804), no failing input: running it again"
			rm -f "$out"
			continue
		fi
		rm -f "$out"
		return "$rc"
	done
}

echo "fuzz: ${#targets[@]} target(s), ${fuzztime} each"
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	echo "fuzz: ${dir} ${name}"
	fuzz_one "${dir}" "${name}"
done

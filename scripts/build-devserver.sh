#!/bin/sh
# Builds cmd/devserver into bin/devserver for `make dev`, saying what it
# does while it does it: the Go modules, then the compile with the number
# of packages built so far (go build -v names each package it compiles)
# out of those not yet in the build cache, and the time taken, every few
# seconds; a cold build compiles the AWS SDKs and takes minutes on a small
# machine, a warm one seconds.
set -eu
GO=${GO:-go}
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

echo "make dev: 1/3 Go modules (go mod download)"
"$GO" mod download

# The packages go build would compile: .Stale is go list's own answer
# (about half a second warm). It is an upper bound: a package stale only
# through a dependency is a cache hit again when that dependency's export
# data comes out unchanged, so the build may end before the count does.
# The openai provider is built in only when asked for (its SDK is half of
# a cold build): MODEL_PROVIDER=openai, or openai in TURN_PROVIDERS (a
# definitions file that names it).
tags=""
case " ${MODEL_PROVIDER:-} ${TURN_PROVIDERS:-} " in
*openai*) tags="-tags=provider.openai" ;;
esac

todo=$("$GO" list $tags -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' ./cmd/devserver 2>/dev/null | grep -c . || true)
echo "make dev: 2/3 compiling cmd/devserver into bin/devserver (the first build takes a few minutes, later ones seconds)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$GO" build $tags -v -o bin/devserver ./cmd/devserver 2>"$log" &
pid=$!
n=0
while kill -0 "$pid" 2>/dev/null; do
	sleep 1
	n=$((n + 1))
	if [ $((n % 5)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
		built=$(grep -c '^[a-z]' "$log" || true)
		echo "make dev: 2/3 still compiling: $built of at most ${todo:-?} packages to build, $(elapsed) s so far"
	fi
done
if ! wait "$pid"; then
	grep -v '^[a-z][^ ]*$' "$log" >&2 || true
	echo "make dev: the build failed" >&2
	exit 1
fi
echo "make dev: 3/3 starting the dev server (built in $(elapsed) s)"

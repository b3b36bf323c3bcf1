#!/bin/sh
# turnbench-against.sh BASE [ROUNDS] [SECTIONS]: runs turnbench's SECTIONS
# (default handler,capacity) at the commit BASE and at the working tree, in
# ROUNDS alternating rounds (default 2: base, this, base, this), so that a
# change's figures (requests, write units, time to first snapshot per turn)
# are compared with its baseline's in one run on one machine. Each round's
# table goes to $OUT (default a temporary directory) as base-N.md and
# this-N.md; the paths are printed at the end.
set -eu
base=${1:?usage: scripts/turnbench-against.sh BASE [ROUNDS] [SECTIONS]}
rounds=${2:-2}
sections=${3:-handler,capacity}
GO=${GO:-go}
root=$(git rev-parse --show-toplevel)
out=${OUT:-$(mktemp -d)}
wt=$(mktemp -d)/base
git -C "$root" worktree add --quiet --detach "$wt" "$base"
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
# The baseline runs against this checkout's node_modules (dynalite).
ln -s "$root/node_modules" "$wt/node_modules"
(cd "$wt" && $GO build -o "$out/turnbench-base" ./cmd/turnbench)
(cd "$root" && $GO build -o "$out/turnbench-this" ./cmd/turnbench)
i=1
while [ "$i" -le "$rounds" ]; do
	for which in base this; do
		dir=$root
		[ "$which" = base ] && dir=$wt
		echo "turnbench-against: round $i, $which ($sections)" >&2
		(cd "$dir" && "$out/turnbench-$which" -repo "$dir" -only "$sections" >"$out/$which-$i.md")
	done
	i=$((i + 1))
done
echo "turnbench-against: tables in $out (base-N.md: $(git -C "$root" rev-parse --short "$base"); this-N.md: the working tree)"

#!/bin/sh
# bench/build-before.sh REV: builds REV's release marquee once, in a checkout of its own under
# bench/cache/ (kept for the next run), and prints the binary's path. Used by `make bench BEFORE=REV`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rev=$(git -C "$here/.." rev-parse --short "$1")
tree="$here/cache/before-$rev"
if [ ! -d "$tree" ]; then
	git -C "$here/.." worktree add --detach "$tree" "$rev" >&2
fi
# Built as `make release` builds this tree (the Swift runtime linked in), so that the two differ in code only.
(cd "$tree" && swift build -c release --static-swift-stdlib --product marquee >&2)
echo "$(cd "$tree" && swift build -c release --show-bin-path)/marquee"

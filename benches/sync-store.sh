#!/usr/bin/env bash
# Push and pull of a store made by the store benchmark (cargo bench --bench store), beside
# git's own push and fetch of the same objects, with each command's memory.
#
#     bash benches/sync-store.sh [DIR]     (default: target/bench-store/realistic-n1000000)
#
# DIR holds the benchmark's `store` and the public keys it trusts (agent, harness, human).
# The store is copied first, so it is left as it was. Prints, for each command, its wall
# time, the most memory of its own (RssAnon, polled every half second) and the largest
# resident size /usr/bin/time saw (the command or one of its git processes, whose mapped
# packs count). Work files go to target/bench-sync-store/ and are removed at the end; the
# run needs about four times the store's size on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-target/bench-store/realistic-n1000000}
B=$(cd "$B" && pwd)
W=$PWD/target/bench-sync-store
rm -rf "$W" && mkdir -p "$W"
cargo build --release --quiet --bin elench
E=$PWD/target/release/elench
export NO_COLOR=1
unset ELENCH_STORE CI

run() { # run LABEL COMMAND…
  local label=$1 s e tp pid anon=0 a
  shift
  s=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$W/time.txt" "$@" >"$W/$label.out" 2>"$W/$label.err" &
  tp=$!
  sleep 0.2
  pid=$(pgrep -P "$tp" | head -1 || true)
  while kill -0 "$tp" 2>/dev/null; do
    a=$(awk '/RssAnon/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$a" ] && [ "$a" -gt "$anon" ]; then anon=$a; fi
    sleep 0.5
  done
  wait "$tp" || { cat "$W/$label.err" >&2; echo "failed: $*" >&2; exit 1; }
  e=$(date +%s%N)
  echo "| $label | $(((e - s) / 1000000)) | $((anon / 1024)) | $(($(cat "$W/time.txt") / 1024)) |"
}

echo "copying $B/store" >&2
cp -r "$B/store" "$W/a"
git init --quiet --bare "$W/remote.git"
"$E" --store "$W/a" remote add origin "$W/remote.git" >/dev/null
echo "| command | wall (ms) | own memory, most (MB) | largest resident (MB) |"
echo "|---|---|---|---|"
run "elench push" "$E" --store "$W/a" push
git init --quiet --bare "$W/git-remote.git"
run "git push of the same objects" git --git-dir="$W/a/git/sha1" push --quiet \
  "$W/git-remote.git" refs/elench/remotes/origin:refs/heads/main
rm -rf "$W/git-remote.git" "$W/a"
git init --quiet --bare "$W/git-dst.git"
run "git fetch of elench's remote" git --git-dir="$W/git-dst.git" fetch --quiet \
  "$W/remote.git" refs/elench/log:refs/heads/main
rm -rf "$W/git-dst.git"
"$E" --store "$W/b" init >/dev/null
for k in agent:bench harness:bench-harness human:bench-human; do
  role=${k%%:*}
  if [ -f "$B/$role.pub.pem" ]; then
    "$E" --store "$W/b" keys add --role "$role" --name "${k#*:}" "$B/$role.pub.pem" >/dev/null
  fi
done
"$E" --store "$W/b" remote add origin "$W/remote.git" >/dev/null
run "elench pull (a fresh store)" "$E" --store "$W/b" pull
rm -rf "$W"

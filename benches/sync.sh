#!/usr/bin/env bash
# Sync benchmark: elench push / pull / incremental sync of N envelopes through a bare git
# remote on disk, against plain `git push` / `git fetch` of a repository holding the same
# files (the same canonical envelope bytes at the same paths), run beside it.
#
#     bash benches/sync.sh [N] [EXTRA]        (defaults: 100000 and 100)
#
# Prints one table (milliseconds, and elench's time over git's). Work files go to
# target/bench-sync/ and are removed at the start of the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
EXTRA=${2:-100}
W=$PWD/target/bench-sync
rm -rf "$W" && mkdir -p "$W"

cargo build --release --quiet --bin elench --example make_sync_bench
E=$PWD/target/release/elench
export NO_COLOR=1
unset ELENCH_STORE CI

ms() { # ms COMMAND…: wall time in milliseconds, output discarded
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>"$W/last.err" || { cat "$W/last.err" >&2; echo "failed: $*" >&2; exit 1; }
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}

echo "generating $N + $EXTRA envelopes" >&2
target/release/examples/make_sync_bench "$W/in" "$N" "$EXTRA"

store() { # store NAME REMOTE: a store trusting the bench key, with origin = REMOTE
  "$E" --store "$W/$1" init >/dev/null
  "$E" --store "$W/$1" keys add --role agent --name bench "$W/in/agent.pub.pem" >/dev/null
  "$E" --store "$W/$1" remote add origin "$2" >/dev/null
}

# elench
git init --quiet --bare "$W/elench-remote.git"
store a "$W/elench-remote.git"
store b "$W/elench-remote.git"
echo "adding $N envelopes to store a" >&2
e_add=$(ms "$E" --store "$W/a" add "$W/in/base.intoto.jsonl")
e_push=$(ms "$E" --store "$W/a" push)
e_pull=$(ms "$E" --store "$W/b" pull)
"$E" --store "$W/a" add "$W/in/extra.intoto.jsonl" >/dev/null 2>&1
e_inc_push=$(ms "$E" --store "$W/a" sync)
e_inc_pull=$(ms "$E" --store "$W/b" sync)
e_noop=$(ms "$E" --store "$W/b" sync)
count=$("$E" --store "$W/b" status --all --limit 1 | sed -n 's/.*"as_of":\([0-9]*\).*/\1/p')

# plain git, the same files
git init --quiet --bare "$W/git-src.git"
git --git-dir="$W/git-src.git" fast-import --quiet <"$W/in/base.fi"
git init --quiet --bare "$W/git-remote.git"
git init --quiet --bare "$W/git-dst.git"
g_push=$(ms git --git-dir="$W/git-src.git" push --quiet "$W/git-remote.git" main)
g_pull=$(ms git --git-dir="$W/git-dst.git" fetch --quiet "$W/git-remote.git" main:main)
git --git-dir="$W/git-src.git" fast-import --quiet <"$W/in/extra.fi"
g_inc_push=$(ms git --git-dir="$W/git-src.git" push --quiet "$W/git-remote.git" main)
g_inc_pull=$(ms git --git-dir="$W/git-dst.git" fetch --quiet "$W/git-remote.git" main:main)
g_noop=$(ms git --git-dir="$W/git-dst.git" fetch --quiet "$W/git-remote.git" main:main)

same=$([ "$(git --git-dir="$W/elench-remote.git" rev-parse 'refs/elench/log^{tree}')" = \
         "$(git --git-dir="$W/git-remote.git" rev-parse 'main^{tree}')" ] && echo yes || echo NO)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) b = 1; printf "%.1fx", a / b }'; }
echo
echo "N=$N EXTRA=$EXTRA; store b holds $count envelopes; remote trees identical: $same"
echo
echo "| operation | elench (ms) | plain git (ms) | elench / git |"
echo "|---|---|---|---|"
echo "| push of $N envelopes to an empty bare remote | $e_push | $g_push | $(ratio "$e_push" "$g_push") |"
echo "| pull of them into an empty store / git fetch | $e_pull | $g_pull | $(ratio "$e_pull" "$g_pull") |"
echo "| (for reference: \`elench add\` of the same $N from a bundle, no git) | $e_add | | |"
echo "| sync pushing $EXTRA new envelopes / git push | $e_inc_push | $g_inc_push | $(ratio "$e_inc_push" "$g_inc_push") |"
echo "| sync pulling those $EXTRA / git fetch | $e_inc_pull | $g_inc_pull | $(ratio "$e_inc_pull" "$g_inc_pull") |"
echo "| sync with nothing new / git fetch | $e_noop | $g_noop | $(ratio "$e_noop" "$g_noop") |"

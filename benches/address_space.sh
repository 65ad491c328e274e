#!/usr/bin/env bash
# Every command under `ulimit -v 4194304` (4 GiB of address space) on a store of 100,000
# claims: the index's map is sized to its data, so no command needs more than it holds.
# Prints each command's exit code and peak resident memory; exits 1 if any command failed.
#
#     bash benches/address_space.sh [WORKDIR] [CLAIMS]     (defaults: a temporary folder, 100000)
set -uo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --example make_sync_bench && cargo build --release -q || exit 2
E="$PWD/target/release/elench"
D="${1:-$(mktemp -d)}"
N="${2:-100000}"
S="$D/store"
mkdir -p "$D"
[ -f "$D/base.intoto.jsonl" ] || target/release/examples/make_sync_bench "$D" "$N" 0 >/dev/null
rm -rf "$S" "$D/tree" "$D/remote.git"
mkdir -p "$D/tree" && echo 'fn main() {}' > "$D/tree/lib.rs"
failed=0
run() { # run LABEL ARGS...
  local label=$1; shift
  /usr/bin/time -o "$D/time.txt" -f "%M" bash -c 'ulimit -v 4194304; exec "$@"' _ "$E" --store "$S" "$@" \
    > "$D/out.json" 2> "$D/err.txt"
  local code=$?
  printf "%-26s exit %s  peak %6s KiB\n" "$label" "$code" "$(tail -1 "$D/time.txt")"
  [ "$code" -eq 0 ] || { failed=1; head -c 400 "$D/out.json"; echo; }
}
run init init
"$E" keys generate --role harness --name h --out "$D/h.pem" --pub-out "$D/h.pub" >/dev/null
run "keys add" keys add --role agent --name a "$D/agent.pub.pem"
run "keys add (harness)" keys add --role harness --name h "$D/h.pub"
run "add ($N claims)" add "$D/base.intoto.jsonl"
ID=$(head -1 "$D/base.intoto.jsonl" | "$E" verify - --trust "agent:a:$D/agent.pub.pem" --format json |
  sed 's/.*"id":"\(cl_[0-9a-f]*\)".*/\1/')
run "status ID" status "$ID"
run "status --all" status --all
run "status --all --limit 10000" status --all --limit 10000
run "show ID" show "$ID"
run "blast ID" blast "$ID"
run "log" log
run "keys list" keys list
run "checkpoint" checkpoint
run "export" export -o "$D/export.intoto.jsonl"
run "fsck" fsck
run "reindex" reindex
run "fsck --repair" fsck --repair
printf '[rules]\nmin_in_scope = 0\nstale = "ignore"\nmax_unevaluated = 1000000\n' > "$D/policy.toml"
run "gate" gate --policy "$D/policy.toml" --at "$D/tree"
run "status --all --at" status --all --at "$D/tree"
run "check --all" check --all --at "$D/tree" --key "$D/h.pem"
git init -q --bare "$D/remote.git"
run "remote add" remote add origin "$D/remote.git"
run "push" push
run "pull" pull
run "tree" tree "$D/tree"
exit $failed

#!/usr/bin/env bash
# Benchmark of `elench check` (release build), each figure beside the same work done without
# elench in the same run:
#   1. 1,000 grep/exists claims over a tree of 10,000 files, against grep -c / test -e;
#   2. per-claim cost of the sandbox for run("true"), against --no-sandbox and a bare sh -c true;
#   3. 1,000 run("true") claims on the 10,000-file tree, sandboxed against --no-sandbox;
#   4. N test(...) claims (N = 1, 10, 100) on a small crate (regex and serde_json, 100 tests)
#      with --runner cargo, against one `cargo test` of the same names on the host, each from
#      a cold build (check builds in its sandbox's fresh layer; the host in a fresh copy);
#   5. at scale: 10,000 grep/exists claims (the mix of part 1) over a tree of 100,000 files
#      (1,000 directories of 100), against grep -c / test -e, one process per claim.
# Part 2 also times the same number of bare `bwrap --ro-bind / / true`, the cheapest
# bubblewrap process, beside the sandboxed run("true") claims.
# Usage: bash benches/check/run.sh [WORKDIR]   (default: a fresh temporary directory)
#        PARTS="1" bash benches/check/run.sh ...   runs only the parts named (default: 1 2 3 4 5)
# Part 5 writes its tree (about 400 MB of inodes and 8 MB of text) and removes it at the end.
# Part 4 needs cargo and the crates regex and serde_json in the cargo cache (it runs offline).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q --bin elench --example make_check_bench
E="$PWD/target/release/elench"
SIGN="$PWD/target/release/examples/make_check_bench"
W="${1:-$(mktemp -d)}"
mkdir -p "$W"
cd "$W"
TIMEFORMAT=%R
PARTS="${PARTS:-1 2 3 4 5}"
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
secs() { { time "$@" >/dev/null 2>&1; } 2>&1; }

echo "== workdir $W"
if part 1 || part 3; then
# A tree of 10,000 files: 100 directories of 100 files of 20 lines, every 7th line a needle.
rm -rf tree && mkdir tree
for d in $(seq -w 0 99); do
  mkdir "tree/d$d"
  for f in $(seq -w 0 99); do
    awk -v d="$d" -v f="$f" 'BEGIN { for (i = 0; i < 20; i++) {
      if ((i + f) % 7 == 0) print "let x = needle_" d "(" i ");"; else print "line " i " of file " f; } }' \
      > "tree/d$d/f$f.rs"
  done
done
fi

store() { # a fresh store trusting an agent and a harness key
  rm -rf "$1" && "$E" --store "$1" init >/dev/null
  [ -f agent.pem ] || { "$E" keys generate --role agent --name a --out agent.pem --pub-out agent.pub >/dev/null
                        "$E" keys generate --role harness --name h --out harness.pem --pub-out harness.pub >/dev/null; }
  "$E" --store "$1" keys add --role agent --name a agent.pub >/dev/null
  "$E" --store "$1" keys add --role harness --name h harness.pub >/dev/null
}

claims() { # claims(TREE_DIR, SOURCES_FILE) -> bundle.intoto.jsonl of agent claims, one per
  # line of SOURCES_FILE, signed in one process (one `elench sign` each took minutes at 10,000)
  local tree; tree=$("$E" tree "$1" --format json | sed 's/.*"tree":"\([0-9a-f]*\)".*/\1/')
  "$SIGN" agent.pem "$tree" "$2" bundle.intoto.jsonl
}

if part 1; then
# 1,000 claims: 500 literal greps of one file, 250 regex greps of a 100-file directory,
# 250 exists. Each states the true count, so every claim comes out verified.
: > sources.txt; : > baseline.sh
for i in $(seq 0 499); do
  d=$(printf %02d $((i % 100))); f=$(printf %02d $((i * 7 % 100)))
  n=$(grep -c "needle_$d" "tree/d$d/f$f.rs")
  echo "grep(\"needle_$d\", \"d$d/f$f.rs\") == $n" >> sources.txt
  echo "grep -c needle_$d tree/d$d/f$f.rs" >> baseline.sh
done
for i in $(seq 0 249); do
  d=$(printf %02d $((i % 100)))
  n=$(cat tree/d$d/*.rs | grep -cE "needle_[0-9]+\(1[0-9]\)")
  echo "grep(/needle_[0-9]+\\(1[0-9]\\)/, \"d$d\") == $n" >> sources.txt
  echo "cat tree/d$d/*.rs | grep -cE 'needle_[0-9]+\(1[0-9]\)'" >> baseline.sh
done
for i in $(seq 0 249); do
  d=$(printf %02d $((i % 100))); f=$(printf %02d $((i * 3 % 100)))
  echo "exists(\"d$d/f$f.rs\")" >> sources.txt
  echo "test -e tree/d$d/f$f.rs" >> baseline.sh
done
store s1
claims tree sources.txt
"$E" --store s1 add bundle.intoto.jsonl >/dev/null 2>&1
IDS=$("$E" --store s1 log --limit 1000 --format json | grep -o 'cl_[0-9a-f]\{64\}' | sort -u)

t_first=$(secs "$E" --store s1 check --all --at tree --key harness.pem)
verified=$("$E" --store s1 status --all --limit 1000 --format json | grep -o '"status":"verified"' | wc -l)
# Again by id: every claim is evaluated, none changes status, nothing is recorded.
# shellcheck disable=SC2086
t_eval=$(secs "$E" --store s1 check --at tree --key harness.pem $IDS)
t_base=$(secs bash baseline.sh)
t_base_one=$(secs bash -c "cd tree && grep -rc needle_ . >/dev/null")
fi

if part 2; then

# run("true"): 50 claims on a one-file tree, sandboxed and not; and a bare sh -c true.
rm -rf small && mkdir small && echo hi > small/a.txt
for i in $(seq 50); do echo "run(\"true\").exit == 0 && $i > 0"; done > runs.txt
store s2; claims small runs.txt; "$E" --store s2 add bundle.intoto.jsonl >/dev/null 2>&1
store s3; "$E" --store s3 add bundle.intoto.jsonl >/dev/null 2>&1
t_box=$(secs "$E" --store s2 check --all --at small --key harness.pem)
t_nobox=$(secs "$E" --store s3 check --all --at small --key harness.pem --no-sandbox)
t_sh=$(secs bash -c 'for i in $(seq 50); do sh -c true; done')
# The cheapest bubblewrap process: the whole system read-only, no namespace but the mount one
# (as root; otherwise bubblewrap adds a user namespace).
t_bwrap=$(secs bash -c 'for i in $(seq 50); do bwrap --ro-bind / / true; done')
# bubblewrap as the sandbox calls it (its namespaces and mounts, and as root the drop to an
# unprivileged uid with setpriv) running sh -c true, without elench: what is left of the
# sandboxed claim's cost beyond this is elench's own (its overlay, the wait, the record).
mkdir -p bw/tmp bw/tree bw/out
BW=(--unshare-ipc --unshare-pid --unshare-net --unshare-uts --unshare-cgroup-try --die-with-parent
    --new-session --ro-bind /usr /usr --ro-bind /etc /etc)
for d in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$d" ]; then BW+=(--symlink "$(readlink "$d")" "$d"); elif [ -d "$d" ]; then BW+=(--ro-bind "$d" "$d"); fi
done
BW+=(--proc /proc --dev /dev --bind "$PWD/bw/tmp" /tmp --bind "$PWD/bw/tree" /tree
     --bind "$PWD/bw/out" /elench-out --chdir /tree --clearenv --setenv PATH /usr/bin:/bin --)
if [ "$(id -u)" = 0 ]; then
  BW+=(/usr/bin/setpriv --reuid=3000000001 --regid=3000000001 --clear-groups --no-new-privs --)
else
  BW=(--unshare-user "${BW[@]}")
fi
t_bwfull=$(secs bash -c 'for i in $(seq 50); do bwrap "$@" sh -c true; done' bw "${BW[@]}")
fi
if part 3; then
# The tree is copied once per check (per --jobs slot), and each process writes in a layer of
# its own: 1,000 run("true") claims on the 10,000-file tree, sandboxed and not.
for i in $(seq 1000); do echo "run(\"true\").exit == 0 && $i > 0"; done > runs1000.txt
store s4; claims tree runs1000.txt; "$E" --store s4 add bundle.intoto.jsonl >/dev/null 2>&1
store s5; "$E" --store s5 add bundle.intoto.jsonl >/dev/null 2>&1
t_bigbox=$(secs "$E" --store s4 check --all --at tree --key harness.pem)
t_bignobox=$(secs "$E" --store s5 check --all --at tree --key harness.pem --no-sandbox)
t_cp=$(secs bash -c 'cp -a tree copy && rm -rf copy')
fi

if part 5; then
# At scale: a tree of 100,000 files (1,000 directories of 100 files of 20 lines, every 7th line
# a needle), written by one awk process; 10,000 claims of part 1's mix (5,000 literal greps of
# one file, 2,500 regex greps of a 100-file directory, 2,500 exists), each stating the true
# count, which awk knows from how it wrote the files, so all come out verified.
rm -rf tree100k && mkdir tree100k
mkdir $(seq -f 'tree100k/d%03g' 0 999)
awk 'BEGIN { for (d = 0; d < 1000; d++) for (f = 0; f < 100; f++) {
  p = sprintf("tree100k/d%03d/f%02d.rs", d, f); dd = sprintf("%03d", d)
  for (i = 0; i < 20; i++) {
    if ((i + f) % 7 == 0) print "let x = needle_" dd "(" i ");" > p; else print "line " i " of file " f > p }
  close(p) } }'
awk 'function hits(f, from, to,   i, n) { n = 0; for (i = from; i < to; i++) if ((i + f) % 7 == 0) n++; return n }
BEGIN {
  q = "\047"; dirhits = 0; for (f = 0; f < 100; f++) dirhits += hits(f, 10, 20)
  for (i = 0; i < 5000; i++) { d = sprintf("%03d", i % 1000); f = i * 7 % 100
    printf "grep(\"needle_%s\", \"d%s/f%02d.rs\") == %d\n", d, d, f, hits(f, 0, 20) > "sources100k.txt"
    printf "grep -c needle_%s tree100k/d%s/f%02d.rs\n", d, d, f > "baseline100k.sh" }
  for (i = 0; i < 2500; i++) { d = sprintf("%03d", i % 1000)
    printf "grep(/needle_[0-9]+\\(1[0-9]\\)/, \"d%s\") == %d\n", d, dirhits > "sources100k.txt"
    printf "cat tree100k/d%s/*.rs | grep -cE %sneedle_[0-9]+\\(1[0-9]\\)%s\n", d, q, q > "baseline100k.sh" }
  for (i = 0; i < 2500; i++) { d = sprintf("%03d", i % 1000); f = i * 3 % 100
    printf "exists(\"d%s/f%02d.rs\")\n", d, f > "sources100k.txt"
    printf "test -e tree100k/d%s/f%02d.rs\n", d, f > "baseline100k.sh" } }'
t_tree100k=$(secs "$E" tree tree100k)
store s6
claims tree100k sources100k.txt
"$E" --store s6 add bundle.intoto.jsonl >/dev/null 2>&1
BIG_IDS=$("$E" --store s6 log --limit 10000 --format json | grep -o 'cl_[0-9a-f]\{64\}' | sort -u)
t_big_first=$(secs "$E" --store s6 check --all --at tree100k --key harness.pem)
big_verified=$(ELENCH_MAX_OUTPUT_BYTES=0 "$E" --store s6 status --all --limit 10000 --format json | grep -o '"status":"verified"' | wc -l)
t_big_base=$(secs bash baseline100k.sh)
# Again by id: every claim is evaluated, none changes status, nothing is recorded.
# shellcheck disable=SC2086
t_big_again=$(secs "$E" --store s6 check --at tree100k --key harness.pem $BIG_IDS)
t_big_base2=$(secs bash baseline100k.sh)
t_big_sha=$(secs bash -c 'cd tree100k && find . -type f -print0 | xargs -0 sha256sum >/dev/null')
rm -rf tree100k s6
fi

if part 4; then
# A small crate: 100 tests using regex and serde_json (a realistic build: most of the time
# of one run is building, once).
rm -rf crate && mkdir -p crate/src
printf '[package]\nname = "benchcrate"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nregex = "1"\nserde_json = "1"\n\n[workspace]\n' > crate/Cargo.toml
{
  echo 'pub fn words(s: &str) -> usize { regex::Regex::new(r"\w+").unwrap().find_iter(s).count() }'
  echo 'pub fn field(s: &str, k: &str) -> Option<i64> { serde_json::from_str::<serde_json::Value>(s).ok()?[k].as_i64() }'
  echo '#[cfg(test)]'
  echo 'mod tests {'
  for i in $(seq -w 0 99); do
    echo "    #[test] fn t$i() { assert_eq!(super::words(\"a b $i\"), 3); assert_eq!(super::field(r#\"{\"k\": $((10#$i))}\"#, \"k\"), Some($((10#$i)))); }"
  done
  echo '}'
} > crate/src/lib.rs
(cd crate && cargo generate-lockfile --offline -q)
EXPOSE=()
for d in "${CARGO_HOME:-$HOME/.cargo}" "${RUSTUP_HOME:-$HOME/.rustup}"; do
  [ -d "$d" ] && EXPOSE+=(--expose "$d")
done
declare -A t_check t_host verified_n
for n in 1 10 100; do
  seq -w 0 99 | head -n "$n" | sed 's/^/tests::t/' > "names$n.txt"
  sed 's/.*/test("&").passed/' "names$n.txt" > "tests$n.txt"
  store "st$n"; claims crate "tests$n.txt"; "$E" --store "st$n" add bundle.intoto.jsonl >/dev/null 2>&1
  t_check[$n]=$(secs "$E" --store "st$n" check --all --at crate --key harness.pem \
    --runner cargo "${EXPOSE[@]}")
  verified_n[$n]=$("$E" --store "st$n" status --all --limit 1000 --format json | grep -o '"status":"verified"' | wc -l)
  rm -rf host && cp -r crate host
  mapfile -t names < "names$n.txt"
  t_host[$n]=$(cd host && secs cargo test --offline --no-fail-fast -- --exact "${names[@]}")
  rm -rf host
done
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
ms() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.2f ms", 1000 * a / n }'; }
echo
echo "| work | elench | without elench | ratio |"
echo "|---|---|---|---|"
if part 1; then
echo "| 1,000 grep/exists claims, evaluated and 1,000 verifications signed and appended ($verified verified) | ${t_first} s | ${t_base} s (grep -c / test -e, one process each) | $(ratio "$t_first" "$t_base") |"
echo "| the same 1,000 claims evaluated again by id (all unchanged, nothing appended) | ${t_eval} s | ${t_base} s | $(ratio "$t_eval" "$t_base") |"
echo "| one grep -rc over the whole tree (for scale) | | ${t_base_one} s | |"
fi
if part 2; then
echo "| 50 run(\"true\") claims in the sandbox | ${t_box} s ($(ms "$t_box" 50) each) | ${t_sh} s for 50 bare sh -c true ($(ms "$t_sh" 50) each) | $(ratio "$t_box" "$t_sh") |"
echo "| 50 bare bwrap --ro-bind / / true | | ${t_bwrap} s ($(ms "$t_bwrap" 50) each) | sandboxed run(\"true\") costs $(awk -v a="$t_box" -v b="$t_bwrap" 'BEGIN { printf "%.2f ms", 1000 * (a - b) / 50 }') more per claim |"
echo "| 50 bwrap as the sandbox calls it (namespaces, mounts, setpriv as root), running sh -c true | | ${t_bwfull} s ($(ms "$t_bwfull" 50) each) | elench's own share $(awk -v a="$t_box" -v b="$t_bwfull" 'BEGIN { printf "%.2f ms", 1000 * (a - b) / 50 }') per claim |"
echo "| the same 50 with --no-sandbox | ${t_nobox} s ($(ms "$t_nobox" 50) each) | | sandbox overhead $(awk -v a="$t_box" -v b="$t_nobox" 'BEGIN { printf "%.2f ms", 1000 * (a - b) / 50 }') per claim |"
fi
if part 3; then
echo "| 1,000 run(\"true\") claims on the 10,000-file tree in the sandbox | ${t_bigbox} s ($(ms "$t_bigbox" 1000) each) | ${t_bignobox} s with --no-sandbox ($(ms "$t_bignobox" 1000) each) | $(ratio "$t_bigbox" "$t_bignobox") |"
echo "| one cp -a + rm -rf of the 10,000-file tree (for scale: what each claim once paid) | | ${t_cp} s | |"
fi
if part 5; then
echo "| 10,000 grep/exists claims on the 100,000-file tree, evaluated and 10,000 verifications signed and appended ($big_verified verified) | ${t_big_first} s | ${t_big_base} s (grep -c / test -e, one process each) | $(ratio "$t_big_first" "$t_big_base") |"
echo "| the same 10,000 claims evaluated again by id (all unchanged, nothing appended) | ${t_big_again} s | ${t_big_base2} s (the baseline again) | $(ratio "$t_big_again" "$t_big_base2") |"
echo "| elench tree of the 100,000-file tree (its OID; part of every check) | ${t_tree100k} s | ${t_big_sha} s (sha256sum of every file, for scale) | |"
fi
if part 4; then
for n in 1 10 100; do
  echo "| $n test(...) claims, --runner cargo, cold build (${verified_n[$n]} verified) | ${t_check[$n]} s | ${t_host[$n]} s (cargo test of the same $n names, cold build) | $(ratio "${t_check[$n]}" "${t_host[$n]}") |"
done
fi

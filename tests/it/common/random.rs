//! Seeded randomness (no extra crates) and random claim graphs, for the property, load and
//! durability tests.

use super::claims::{dangling_id, refs, ClaimBuilder};
use super::envelopes::{record, Signed};
use super::keys::Keys;

/// A small seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi` (hi exclusive, hi > lo).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// `n` valid envelopes in creation order: assertions with premises among earlier claims (and
/// now and then one the store never sees), interleaved with records on earlier claims.
pub fn graph(keys: &Keys, n: usize, seed: u64, tag: &str) -> Vec<Signed> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Signed> = Vec::with_capacity(n);
    for i in 0..n {
        let earlier = |rng: &mut Rng, out: &Vec<Signed>| out[rng.below(out.len())].id.clone();
        let s = if i < 3 || rng.chance(75) {
            let mut deps = Vec::new();
            if !out.is_empty() {
                for _ in 0..rng.below(3) {
                    deps.push(earlier(&mut rng, &out));
                }
            }
            if rng.chance(5) {
                deps.push(dangling_id(i as u64));
            }
            deps.sort();
            deps.dedup();
            ClaimBuilder::assertion(&format!("{tag} assertion {i}"))
                .depends_on(&refs(&deps))
                .sign(keys)
        } else {
            let t = earlier(&mut rng, &out);
            let kind = match rng.below(4) {
                0 => "verification",
                1 => "falsification",
                2 => "supersession",
                _ => "residue-acceptance",
            };
            let deps = if rng.chance(30) {
                vec![earlier(&mut rng, &out)]
            } else {
                Vec::new()
            };
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            record(keys, kind, &format!("{tag} record {i}"), &[&t], &deps)
        };
        out.push(s);
    }
    out
}

/// The kind of a random record in the property tests, weighted as they were written:
/// falsifications most, then verifications, supersessions and acceptances.
pub fn record_kind() -> impl proptest::strategy::Strategy<Value = elench::claim::Kind> {
    use elench::claim::Kind;
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(Kind::Verification),
        4 => Just(Kind::Falsification),
        2 => Just(Kind::Supersession),
        2 => Just(Kind::ResidueAcceptance),
    ]
}

/// The ids `indices` pick from `from`, sorted, each once.
pub fn pick(indices: &[proptest::sample::Index], from: &[Signed]) -> Vec<String> {
    let mut out: Vec<String> = indices
        .iter()
        .map(|i| from[i.index(from.len())].id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

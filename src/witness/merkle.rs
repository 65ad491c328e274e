//! RFC 6962 Merkle trees: leaf and node hashes, the root of any prefix, and consistency
//! proofs written and checked as RFC 9162 (section 2.1.4) gives them.
//!
//! [`Tree`] keeps every complete subtree's hash, level by level, so appending a leaf costs
//! one leaf hash plus, on average, one node hash (at most one per level), and the root of any
//! prefix or a proof between two prefixes costs O(log n) hashes.

use sha2::{Digest, Sha256};

/// A SHA-256 hash: a leaf, a node or a root.
pub type Hash = [u8; 32];

/// The most hashes a consistency proof between two trees of at most 2^64 leaves can hold
/// (tlog-witness refuses more than 63 lines).
pub const MAX_PROOF_HASHES: usize = 63;

/// The root of the empty tree: SHA-256 of the empty string.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// A leaf's hash: SHA-256(0x00 || entry).
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(entry);
    h.finalize().into()
}

/// An interior node's hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two strictly below `n` (n >= 2).
fn split(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1u64 << (63 - (n - 1).leading_zeros())
}

/// An append-only Merkle tree over leaf hashes. `levels[0]` holds the leaf hashes,
/// `levels[h][i]` the hash of the complete subtree over leaves `i·2^h .. (i+1)·2^h`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    levels: Vec<Vec<Hash>>,
}

/// Why a proof or a root cannot be given for the sizes asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("tree size {asked} is beyond the {held} leaves held")]
    Beyond { asked: u64, held: u64 },
    #[error("old size {old} is larger than new size {new}")]
    OldAfterNew { old: u64, new: u64 },
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// A tree over these leaf hashes, in order.
    pub fn from_leaf_hashes(leaves: impl IntoIterator<Item = Hash>) -> Tree {
        let mut t = Tree::new();
        for l in leaves {
            t.push_leaf_hash(l);
        }
        t
    }

    /// Every level: the leaf hashes, then the hashes of the complete subtrees of 2, 4, …
    /// leaves, in order (what [`Tree::from_levels`] takes back).
    pub fn levels(&self) -> &[Vec<Hash>] {
        &self.levels
    }

    /// A tree from its levels as [`Tree::levels`] gave them, without hashing: None when
    /// their lengths are not those of one tree (level h of a tree of n leaves holds n >> h
    /// hashes, and the top level fewer than two). The hashes themselves are taken as given:
    /// for a cache of one's own, not for input from others.
    pub fn from_levels(levels: Vec<Vec<Hash>>) -> Option<Tree> {
        let n = levels.first().map_or(0, Vec::len);
        if n == 0 {
            return levels.iter().all(Vec::is_empty).then(Tree::new);
        }
        let ok = levels.iter().enumerate().all(|(h, l)| l.len() == n >> h)
            && levels.last().is_some_and(|l| l.len() < 2);
        ok.then_some(Tree { levels })
    }

    /// How many leaves the tree holds.
    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// The leaf hashes, in order.
    pub fn leaf_hashes(&self) -> &[Hash] {
        self.levels.first().map_or(&[], |l| l.as_slice())
    }

    /// Appends an entry (hashed as a leaf).
    pub fn push(&mut self, entry: &[u8]) {
        self.push_leaf_hash(leaf_hash(entry));
    }

    /// Appends a leaf already hashed: completes every subtree this leaf closes.
    pub fn push_leaf_hash(&mut self, leaf: Hash) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        self.levels[0].push(leaf);
        let mut h = 0;
        while self.levels[h].len().is_multiple_of(2) {
            let n = self.levels[h].len();
            let parent = node_hash(&self.levels[h][n - 2], &self.levels[h][n - 1]);
            if self.levels.len() == h + 1 {
                self.levels.push(Vec::new());
            }
            self.levels[h + 1].push(parent);
            h += 1;
        }
    }

    /// The hash of leaves `lo..hi` (`lo < hi <= size`), where `lo` is a multiple of every
    /// power of two below `hi - lo`, as in every subtree the tree's definition splits into.
    fn range(&self, lo: u64, hi: u64) -> Hash {
        let width = hi - lo;
        if width.is_power_of_two() && lo.is_multiple_of(width) {
            let h = width.trailing_zeros() as usize;
            return self.levels[h][(lo >> h) as usize];
        }
        let k = split(width);
        node_hash(&self.range(lo, lo + k), &self.range(lo + k, hi))
    }

    /// The root of the tree's first `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<Hash, TreeError> {
        if size > self.size() {
            return Err(TreeError::Beyond {
                asked: size,
                held: self.size(),
            });
        }
        Ok(if size == 0 {
            empty_root()
        } else {
            self.range(0, size)
        })
    }

    /// The root of the whole tree.
    pub fn root(&self) -> Hash {
        self.root_at(self.size()).unwrap_or_else(|_| empty_root())
    }

    /// The consistency proof from the tree's first `old` leaves to its first `new`
    /// (RFC 9162 section 2.1.4.1); empty when `old` is 0 or equals `new`.
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, TreeError> {
        if new > self.size() {
            return Err(TreeError::Beyond {
                asked: new,
                held: self.size(),
            });
        }
        if old > new {
            return Err(TreeError::OldAfterNew { old, new });
        }
        let mut proof = Vec::new();
        if old > 0 && old < new {
            self.subproof(old, 0, new, true, &mut proof);
        }
        Ok(proof)
    }

    /// SUBPROOF(m, D[lo:hi], b), appended to `out`.
    fn subproof(&self, m: u64, lo: u64, hi: u64, whole: bool, out: &mut Vec<Hash>) {
        let n = hi - lo;
        if m == n {
            if !whole {
                out.push(self.range(lo, hi));
            }
            return;
        }
        let k = split(n);
        if m <= k {
            self.subproof(m, lo, lo + k, whole, out);
            out.push(self.range(lo + k, hi));
        } else {
            self.subproof(m - k, lo + k, hi, false, out);
            out.push(self.range(lo, lo + k));
        }
    }
}

/// The root of a sequence read once, front to back, without keeping it: only the hashes of
/// the complete subtrees the leaves so far split into (at most one per power of two), so a
/// log of any length costs O(log n) memory. Gives the same root as [`Tree`].
#[derive(Debug, Clone, Default)]
pub struct Frontier {
    /// (hash, height) of each complete subtree, leftmost (tallest) first.
    stack: Vec<(Hash, u32)>,
    size: u64,
}

impl Frontier {
    pub fn new() -> Frontier {
        Frontier::default()
    }

    /// How many leaves were pushed.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends an entry (hashed as a leaf).
    pub fn push(&mut self, entry: &[u8]) {
        self.push_leaf_hash(leaf_hash(entry));
    }

    /// Appends a leaf already hashed, merging every pair of equal subtrees it completes.
    pub fn push_leaf_hash(&mut self, leaf: Hash) {
        let mut cur = (leaf, 0u32);
        while let Some(&(left, h)) = self.stack.last() {
            if h != cur.1 {
                break;
            }
            self.stack.pop();
            cur = (node_hash(&left, &cur.0), h + 1);
        }
        self.stack.push(cur);
        self.size += 1;
    }

    /// The root over the leaves pushed so far: the complete subtrees joined from the right,
    /// as the tree's definition splits off the largest power of two on the left.
    pub fn root(&self) -> Hash {
        let mut it = self.stack.iter().rev();
        let Some(&(mut acc, _)) = it.next() else {
            return empty_root();
        };
        for (left, _) in it {
            acc = node_hash(left, &acc);
        }
        acc
    }
}

/// Why a consistency proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("old size {old} is larger than new size {new}")]
    OldAfterNew { old: u64, new: u64 },
    #[error("a proof from size {old} to size {new} must be empty, and this one has {len} hashes")]
    NotEmpty { old: u64, new: u64, len: usize },
    #[error("the two roots of size {size} differ")]
    SameSizeOtherRoot { size: u64 },
    #[error("the proof has {len} hashes, more than {MAX_PROOF_HASHES}")]
    TooLong { len: usize },
    #[error("the proof from size {old} to size {new} does not verify")]
    Mismatch { old: u64, new: u64 },
}

/// Checks that the tree of `new` leaves with root `new_root` extends the tree of `old`
/// leaves with root `old_root` (RFC 9162 section 2.1.4.2). The empty tree is consistent
/// with every tree (its root must be the empty root, and the proof empty).
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old > new {
        return Err(ProofError::OldAfterNew { old, new });
    }
    if proof.len() > MAX_PROOF_HASHES {
        return Err(ProofError::TooLong { len: proof.len() });
    }
    if old == 0 || old == new {
        if !proof.is_empty() {
            return Err(ProofError::NotEmpty {
                old,
                new,
                len: proof.len(),
            });
        }
        if old == 0 && *old_root != empty_root() {
            return Err(ProofError::Mismatch { old, new });
        }
        if old == new && old_root != new_root {
            return Err(ProofError::SameSizeOtherRoot { size: new });
        }
        return Ok(());
    }
    let mismatch = ProofError::Mismatch { old, new };
    // 1. An empty proof cannot take one tree to a larger one.
    if proof.is_empty() {
        return Err(mismatch);
    }
    // 2. When the old tree is a complete subtree, its root is the proof's first node.
    let with_old;
    let path: &[Hash] = if old.is_power_of_two() {
        with_old = std::iter::once(*old_root)
            .chain(proof.iter().copied())
            .collect::<Vec<_>>();
        &with_old
    } else {
        proof
    };
    // 3-4. The last indexes of the two trees, moved up past the levels where the old
    // tree's last node is a right child.
    let mut fn_ = old - 1;
    let mut sn = new - 1;
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    // 5.
    let mut fr = path[0];
    let mut sr = path[0];
    // 6.
    for c in &path[1..] {
        if sn == 0 {
            return Err(mismatch);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // 7.
    if fr == *old_root && sr == *new_root && sn == 0 {
        Ok(())
    } else {
        Err(mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hx(s: &str) -> Hash {
        let mut h = [0u8; 32];
        hex::decode_to_slice(s, &mut h).unwrap();
        h
    }

    /// The leaves of the test vectors of RFC 6962's reference implementation
    /// (google/certificate-transparency, `merkle_tree_test.cc`; the same vectors are in
    /// transparency-dev/merkle's `testonly/constants.go`).
    fn ct_leaves() -> Vec<Vec<u8>> {
        [
            "",
            "00",
            "10",
            "2021",
            "3031",
            "40414243",
            "5051525354555657",
            "606162636465666768696a6b6c6d6e6f",
        ]
        .iter()
        .map(|s| hex::decode(s).unwrap())
        .collect()
    }

    /// The roots of those leaves' first 1..=8 entries (same source).
    const CT_ROOTS: [&str; 8] = [
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    ];

    fn ct_tree() -> Tree {
        let mut t = Tree::new();
        for l in ct_leaves() {
            t.push(&l);
        }
        t
    }

    #[test]
    fn the_empty_tree_root_is_the_hash_of_the_empty_string() {
        // RFC 6962 section 2.1 (and RFC 9162 2.1.1): MTH({}) = SHA-256().
        assert_eq!(
            empty_root(),
            hx("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        assert_eq!(Tree::new().root(), empty_root());
        assert_eq!(Tree::new().root_at(0).unwrap(), empty_root());
    }

    #[test]
    fn roots_match_the_reference_vectors_at_every_size() {
        let t = ct_tree();
        for (i, want) in CT_ROOTS.iter().enumerate() {
            assert_eq!(t.root_at(i as u64 + 1).unwrap(), hx(want), "size {}", i + 1);
            let prefix = Tree::from_leaf_hashes(t.leaf_hashes()[..=i].iter().copied());
            assert_eq!(prefix.root(), hx(want), "grown to size {}", i + 1);
        }
        assert_eq!(t.root_at(9), Err(TreeError::Beyond { asked: 9, held: 8 }));
    }

    #[test]
    fn proofs_match_the_reference_vectors() {
        // The consistency proofs of the same reference test (sizes 1→1, 1→8, 6→8, 2→5).
        let t = ct_tree();
        let cases: [(u64, u64, &[&str]); 4] = [
            (1, 1, &[]),
            (
                1,
                8,
                &[
                    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
                ],
            ),
            (
                6,
                8,
                &[
                    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
                ],
            ),
            (
                2,
                5,
                &[
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                ],
            ),
        ];
        for (m, n, want) in cases {
            let proof = t.consistency_proof(m, n).unwrap();
            let want: Vec<Hash> = want.iter().map(|s| hx(s)).collect();
            assert_eq!(proof, want, "proof {m} -> {n}");
            verify_consistency(m, n, &t.root_at(m).unwrap(), &t.root_at(n).unwrap(), &proof)
                .unwrap();
        }
    }

    #[test]
    fn the_rfc_9162_example_tree_gives_the_proofs_it_names() {
        // RFC 9162 section 2.1.5: the tree of seven leaves d0..d6, with nodes
        //   a..f the leaves d0..d5, g = H(a,b), h = H(c,d), i = H(e,f), j = the leaf d6,
        //   k = H(g,h), l = H(i,j).
        // The consistency proof between hash0 (3 leaves) and hash2 (7) is [c, d, g, l];
        // between hash1 (4) and hash2, [l]; between hash3 (6) and hash2, [i, j, k].
        let leaves = ct_leaves();
        let t = Tree::from_leaf_hashes(leaves[..7].iter().map(|l| leaf_hash(l)));
        let lf = |i: usize| leaf_hash(&leaves[i]);
        let (a, b, c, d, e, f) = (lf(0), lf(1), lf(2), lf(3), lf(4), lf(5));
        let j = lf(6);
        let g = node_hash(&a, &b);
        let h = node_hash(&c, &d);
        let i = node_hash(&e, &f);
        let k = node_hash(&g, &h);
        let l = node_hash(&i, &j);
        assert_eq!(t.root(), node_hash(&k, &l));
        assert_eq!(t.consistency_proof(3, 7).unwrap(), vec![c, d, g, l]);
        assert_eq!(t.consistency_proof(4, 7).unwrap(), vec![l]);
        assert_eq!(t.consistency_proof(6, 7).unwrap(), vec![i, j, k]);
    }

    #[test]
    fn every_small_proof_verifies_and_fails_for_other_sizes_or_roots() {
        let mut t = Tree::new();
        for i in 0u32..70 {
            t.push(&i.to_be_bytes());
        }
        for n in 0..=70u64 {
            for m in 0..=n {
                let p = t.consistency_proof(m, n).unwrap();
                let (r1, r2) = (t.root_at(m).unwrap(), t.root_at(n).unwrap());
                verify_consistency(m, n, &r1, &r2, &p).unwrap();
                if m > 0 && m < n {
                    assert!(verify_consistency(m, n, &r2, &r2, &p).is_err());
                    assert!(verify_consistency(m, n, &r1, &r1, &p).is_err());
                }
            }
        }
    }

    #[test]
    fn the_frontier_gives_the_tree_s_root_at_every_size() {
        let mut f = Frontier::new();
        let mut t = Tree::new();
        assert_eq!(f.root(), empty_root());
        for (i, leaf) in ct_leaves().iter().enumerate() {
            f.push(leaf);
            assert_eq!(hex::encode(f.root()), CT_ROOTS[i], "size {}", i + 1);
        }
        let mut f = Frontier::new();
        for i in 0..300u32 {
            assert_eq!(f.root(), t.root(), "size {i}");
            assert_eq!(f.size(), t.size());
            t.push(&i.to_be_bytes());
            f.push(&i.to_be_bytes());
        }
    }

    #[test]
    fn a_tree_comes_back_from_its_levels_and_not_from_levels_of_no_tree() {
        for n in [0u32, 1, 2, 3, 7, 8, 9, 100] {
            let mut t = Tree::new();
            for i in 0..n {
                t.push(&i.to_be_bytes());
            }
            let back = Tree::from_levels(t.levels().to_vec()).unwrap();
            assert_eq!(back, t);
            let mut grown = back.clone();
            grown.push(b"more");
            let mut direct = t.clone();
            direct.push(b"more");
            assert_eq!(grown.root(), direct.root());
            if n > 1 {
                let mut short = t.levels().to_vec();
                short.pop();
                assert!(Tree::from_levels(short).is_none(), "{n}");
                let mut cut = t.levels().to_vec();
                cut[1].pop();
                assert!(Tree::from_levels(cut).is_none(), "{n}");
            }
        }
    }

    #[test]
    fn sizes_out_of_order_and_stray_proofs_are_refused() {
        let t = ct_tree();
        let r = t.root();
        assert_eq!(
            verify_consistency(5, 4, &r, &r, &[]),
            Err(ProofError::OldAfterNew { old: 5, new: 4 })
        );
        assert_eq!(
            verify_consistency(0, 8, &empty_root(), &r, &[r]),
            Err(ProofError::NotEmpty {
                old: 0,
                new: 8,
                len: 1
            })
        );
        assert!(verify_consistency(0, 8, &r, &r, &[]).is_err());
        assert_eq!(
            verify_consistency(8, 8, &r, &empty_root(), &[]),
            Err(ProofError::SameSizeOtherRoot { size: 8 })
        );
        assert!(verify_consistency(3, 8, &t.root_at(3).unwrap(), &r, &[]).is_err());
        assert_eq!(
            verify_consistency(3, 8, &r, &r, &[r; 64]),
            Err(ProofError::TooLong { len: 64 })
        );
        assert_eq!(
            t.consistency_proof(4, 3),
            Err(TreeError::OldAfterNew { old: 4, new: 3 })
        );
        assert!(t.consistency_proof(1, 9).is_err());
    }

    /// The shape of the proof from `m` to `n`, read off the generator's recursion (not the
    /// verifier's): whether it starts from the old root itself or from its first hash, then
    /// for each further hash whether it joins as a right sibling of the new tree only (`r`)
    /// or as a left sibling of both trees (`l`). Two pairs of sizes with one shape combine
    /// the same hashes the same way, so no verifier can tell them apart from the hashes: a
    /// proof from 1 to 2049 is also, hash for hash, a proof from 1 to 3160 of a tree whose
    /// last 1112 leaves hash to what leaf 2048 hashes to (which takes a SHA-256 collision to
    /// build). The property below holds the verifier to refusing every other shape.
    fn shape(m: u64, n: u64) -> String {
        fn sub(m: u64, n: u64, whole: bool, out: &mut String) {
            if m == n {
                out.push(if whole { 'R' } else { 'S' });
                return;
            }
            let k = split(n);
            if m <= k {
                sub(m, k, whole, out);
                out.push('r');
            } else {
                sub(m - k, n - k, false, out);
                out.push('l');
            }
        }
        let mut s = String::new();
        if m == 0 || m >= n {
            s.push_str(&format!("trivial {m} {n}"));
        } else {
            sub(m, n, true, &mut s);
        }
        s
    }

    #[test]
    fn a_proof_verifies_for_other_sizes_only_where_their_proofs_share_its_shape() {
        let mut t = Tree::new();
        for i in 0u32..130 {
            t.push(&i.to_be_bytes());
        }
        for n in 1..=64u64 {
            for m in 1..n {
                let p = t.consistency_proof(m, n).unwrap();
                let (r1, r2) = (t.root_at(m).unwrap(), t.root_at(n).unwrap());
                for other in 0..=130u64 {
                    let same = shape(m, other) == shape(m, n);
                    let ok = verify_consistency(m, other, &r1, &r2, &p).is_ok();
                    assert_eq!(ok, same, "proof {m} -> {n} checked as {m} -> {other}");
                    let same = shape(other, n) == shape(m, n);
                    let ok = verify_consistency(other, n, &r1, &r2, &p).is_ok();
                    assert_eq!(ok, same, "proof {m} -> {n} checked as {other} -> {n}");
                }
            }
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A tree of 5,000 leaves (its prefixes give every smaller tree).
        fn big() -> Tree {
            let mut t = Tree::new();
            for i in 0u32..5000 {
                t.push(&i.to_le_bytes());
            }
            t
        }

        fn sizes() -> impl Strategy<Value = (u64, u64)> {
            (0u64..=5000).prop_flat_map(|n| (0..=n, Just(n)))
        }

        /// The proof elench writes verifies under its verifier, and fails for any changed
        /// byte, any other old or new size, and any other root. (A runner of its own, so the
        /// one tree is built once for every case.)
        #[test]
        fn proofs_verify_and_nothing_else_does() {
            let t = &big();
            let strategy = (
                sizes(),
                any::<prop::sample::Index>(),
                0u8..8,
                0u64..=5000,
                0u64..=5000,
                0u64..=5000,
            );
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                cases: 256,
                failure_persistence: None,
                ..ProptestConfig::default()
            });
            let result = runner.run(
                &strategy,
                |((m, n), byte, bit, other_m, other_n, other_size)| {
                    let p = t.consistency_proof(m, n).unwrap();
                    let (r1, r2) = (t.root_at(m).unwrap(), t.root_at(n).unwrap());
                    prop_assert_eq!(verify_consistency(m, n, &r1, &r2, &p), Ok(()));

                    // Any byte changed: in the proof, or in either root. The empty tree is
                    // consistent with every tree, so from size 0 only the old root matters.
                    let total = if m == 0 { 32 } else { p.len() * 32 + 64 };
                    let at = byte.index(total);
                    let (mut q, mut a, mut b) = (p.clone(), r1, r2);
                    if m == 0 {
                        a[at] ^= 1 << bit;
                    } else if at < p.len() * 32 {
                        q[at / 32][at % 32] ^= 1 << bit;
                    } else if at < p.len() * 32 + 32 {
                        a[at % 32] ^= 1 << bit;
                    } else {
                        b[at % 32] ^= 1 << bit;
                    }
                    prop_assert!(
                        verify_consistency(m, n, &a, &b, &q).is_err(),
                        "changed byte {} verified ({} -> {})",
                        at,
                        m,
                        n
                    );

                    // Another old or new size (same roots and proof): refused, save where the
                    // other sizes' proofs have the very same shape (see `shape`).
                    if other_m != m && shape(other_m, n) != shape(m, n) {
                        prop_assert!(
                            verify_consistency(other_m, n, &r1, &r2, &p).is_err(),
                            "old size {} verified for a proof {} -> {}",
                            other_m,
                            m,
                            n
                        );
                    }
                    if other_n != n && m > 0 && shape(m, other_n) != shape(m, n) {
                        prop_assert!(
                            verify_consistency(m, other_n, &r1, &r2, &p).is_err(),
                            "new size {} verified for a proof {} -> {}",
                            other_n,
                            m,
                            n
                        );
                    }
                    // Another root: the root of another size in place of either.
                    if other_size != m {
                        let other = t.root_at(other_size).unwrap();
                        prop_assert!(verify_consistency(m, n, &other, &r2, &p).is_err());
                    }
                    if other_size != n && m > 0 {
                        let other = t.root_at(other_size).unwrap();
                        prop_assert!(verify_consistency(m, n, &r1, &other, &p).is_err());
                    }
                    Ok(())
                },
            );
            if let Err(e) = result {
                panic!("{e}");
            }
        }
    }
}

//! Blast radius at scale, through the real binary: a seeded random 5-layer graph of 1,000
//! claims (layer sizes 1, 9, 90, 300, 600; each claim depends on 1–3 claims of the layer
//! above and sometimes on one two layers up), plus an unrelated chain, signed with the
//! library into one bundle and added with one `elench add`.
//!
//! The expected answer is computed here, independently, with a breadth-first search over
//! the generated edges: every dependent exactly once, at its shortest depth, reached through
//! a real premise one layer up, layers sorted by id, `count` = members − 1, `--depth` cuts.

use crate::common;

use common::{claim_id, envelope_text, ClaimBuilder, KeyedStore};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

const LAYER_SIZES: [usize; 5] = [1, 9, 90, 300, 600];
const NOISE: usize = 10;

/// SplitMix64: a small seeded generator, so the graph is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The generated graph: claims by index, with their ids and premises (as indexes).
struct Graph {
    ids: Vec<String>,
    index: HashMap<String, usize>,
    layer: Vec<Option<usize>>,
    premises: Vec<Vec<usize>>,
    dependents: Vec<Vec<usize>>,
    layers: Vec<Vec<usize>>,
    /// The envelopes, one a line, in creation order (premises before dependents).
    bundle: String,
}

impl Graph {
    fn generate(seed: u64, s: &KeyedStore) -> Graph {
        let mut rng = Rng(seed);
        let mut g = Graph {
            ids: Vec::new(),
            index: HashMap::new(),
            layer: Vec::new(),
            premises: Vec::new(),
            dependents: Vec::new(),
            layers: Vec::new(),
            bundle: String::new(),
        };
        for (l, &size) in LAYER_SIZES.iter().enumerate() {
            let mut this_layer = Vec::with_capacity(size);
            for i in 0..size {
                let mut premises: Vec<usize> = Vec::new();
                if l >= 1 {
                    let above = &g.layers[l - 1];
                    let want = (1 + rng.below(3)).min(above.len());
                    while premises.len() < want {
                        let p = above[rng.below(above.len())];
                        if !premises.contains(&p) {
                            premises.push(p);
                        }
                    }
                }
                if l >= 2 && rng.below(4) == 0 {
                    let two_up = &g.layers[l - 2];
                    premises.push(two_up[rng.below(two_up.len())]);
                }
                let n = g.push(&format!("layer {l} claim {i}"), &premises, Some(l), s);
                this_layer.push(n);
            }
            g.layers.push(this_layer);
        }
        // An unrelated chain: never in the blast radius of the graph's claims.
        let mut prev: Vec<usize> = Vec::new();
        for i in 0..NOISE {
            let n = g.push(&format!("unrelated {i}"), &prev, None, s);
            prev = vec![n];
        }
        g
    }

    fn push(
        &mut self,
        text: &str,
        premises: &[usize],
        layer: Option<usize>,
        s: &KeyedStore,
    ) -> usize {
        let premise_ids: Vec<&str> = premises.iter().map(|&p| self.ids[p].as_str()).collect();
        let mut b = ClaimBuilder::assertion(text);
        if !premise_ids.is_empty() {
            b = b.depends_on(&premise_ids);
        }
        let claim = b.build_with_id();
        let id = claim_id(&claim);
        self.bundle.push_str(&envelope_text(&claim, &s.keys.agent));
        self.bundle.push('\n');
        let n = self.ids.len();
        self.index.insert(id.clone(), n);
        self.ids.push(id);
        self.layer.push(layer);
        self.premises.push(premises.to_vec());
        self.dependents.push(Vec::new());
        for &p in premises {
            self.dependents[p].push(n);
        }
        n
    }

    /// Shortest depth of every claim reachable from `root` along premise → dependent edges.
    fn bfs(&self, root: usize) -> HashMap<usize, usize> {
        let mut dist = HashMap::from([(root, 0)]);
        let mut queue = VecDeque::from([root]);
        while let Some(x) = queue.pop_front() {
            let d = dist[&x];
            for &y in &self.dependents[x] {
                if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(y) {
                    e.insert(d + 1);
                    queue.push_back(y);
                }
            }
        }
        dist
    }
}

/// `blast ID [--depth N]`: asserts exit 0 and returns `data`.
fn blast(s: &KeyedStore, id: &str, depth: Option<usize>) -> Value {
    let depth_text = depth.map(|d| d.to_string());
    let mut args = vec!["blast", id];
    if let Some(d) = &depth_text {
        args.extend(["--depth", d.as_str()]);
    }
    let (code, json) = s.run(&args);
    assert_eq!(code, 0, "blast {id} failed: {json}");
    json["data"].clone()
}

/// Checks a blast report of `root` against the breadth-first search over the generated
/// edges, with `status_of` giving the status each member must have. Returns the number of
/// members (root included).
fn check_blast(
    g: &Graph,
    data: &Value,
    root: usize,
    max_depth: Option<usize>,
    status_of: &dyn Fn(usize) -> &'static str,
) -> usize {
    let dist = g.bfs(root);
    let expected: HashSet<usize> = dist
        .iter()
        .filter(|(_, &d)| max_depth.is_none_or(|m| d <= m))
        .map(|(&n, _)| n)
        .collect();
    let deepest = expected.iter().map(|n| dist[n]).max().unwrap();
    let beyond = dist.values().any(|&d| max_depth.is_some_and(|m| d > m));

    assert_eq!(data["root"], json!(g.ids[root]));
    assert_eq!(
        data["count"],
        json!(expected.len() - 1),
        "count = members − 1"
    );
    assert_eq!(data["truncated"], json!(beyond), "truncated");
    assert_eq!(data["affected"], json!([]), "no record is in the closure");
    let layers = data["layers"].as_array().expect("layers");
    assert_eq!(
        layers.len(),
        deepest + 1,
        "one layer per depth 0..={deepest}"
    );

    let mut seen: HashSet<usize> = HashSet::new();
    for (depth, layer) in layers.iter().enumerate() {
        assert_eq!(layer["depth"], json!(depth));
        let members = layer["claims"].as_array().expect("claims");
        assert!(!members.is_empty(), "layer {depth} is empty");
        let ids: Vec<&str> = members.iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "layer {depth} is sorted by id, without repeats"
        );
        for m in members {
            let id = m["id"].as_str().unwrap();
            let n = *g
                .index
                .get(id)
                .unwrap_or_else(|| panic!("{id} is not a generated claim"));
            assert!(seen.insert(n), "{id} listed twice");
            assert!(expected.contains(&n), "{id} is not in the closure");
            assert_eq!(
                dist[&n], depth,
                "{id} is listed at depth {depth}, not its shortest"
            );
            assert_eq!(m["kind"], json!("assertion"), "{m}");
            assert_eq!(m["status"], json!(status_of(n)), "{m}");
            if depth == 0 {
                assert_eq!(n, root);
                assert_eq!(m["via"], Value::Null, "{m}");
            } else {
                let via = m["via"].as_str().unwrap_or_else(|| panic!("no via: {m}"));
                let v = g.index[via];
                assert!(
                    g.premises[n].contains(&v),
                    "via {via} is not a premise of {id}"
                );
                assert_eq!(dist[&v], depth - 1, "via {via} is not one layer up");
            }
        }
    }
    assert_eq!(seen, expected, "every member of the closure is listed");
    expected.len()
}

#[test]
fn blast_radius_of_a_thousand_claim_graph() {
    let s = KeyedStore::new();
    let t = Instant::now();
    let g = Graph::generate(0x5eed_e1e0c4, &s);
    let generated = t.elapsed();
    let total: usize = LAYER_SIZES.iter().sum();
    assert_eq!(g.ids.len(), total + NOISE);
    assert!(total >= 1000);

    let bundle = s.dir().join("graph.intoto.jsonl");
    std::fs::write(&bundle, &g.bundle).unwrap();
    let t = Instant::now();
    let (code, json) = s.run(&["add", bundle.to_str().unwrap()]);
    let added = t.elapsed();
    assert_eq!(code, 0, "add failed: {}", json["error"]);
    assert_eq!(json["data"]["created"], json!(total + NOISE));
    assert_eq!(json["data"]["rejected"], json!(0));

    let root = g.layers[0][0];
    let dist = g.bfs(root);
    assert_eq!(dist.len(), total, "every layered claim depends on the root");
    // The skip edges make some claims nearer than their layer: the shortest depth matters.
    let nearer = (0..total)
        .filter(|n| dist[n] < g.layer[*n].unwrap())
        .count();
    assert!(nearer > 0, "the graph has claims nearer than their layer");
    for n in total..total + NOISE {
        assert!(!dist.contains_key(&n));
    }

    // The whole radius, all unevaluated.
    let t = Instant::now();
    let data = blast(&s, &g.ids[root], None);
    let blasted = t.elapsed();
    let members = check_blast(&g, &data, root, None, &|_| "unevaluated");
    assert_eq!(members, total);

    // --depth cuts it to layers 0..=N with exactly the members that near.
    for depth in [0, 1, 2] {
        let data = blast(&s, &g.ids[root], Some(depth));
        check_blast(&g, &data, root, Some(depth), &|_| "unevaluated");
    }
    // A depth beyond the deepest layer cuts nothing.
    let data = blast(&s, &g.ids[root], Some(10));
    assert_eq!(data["truncated"], json!(false));
    check_blast(&g, &data, root, Some(10), &|_| "unevaluated");

    // Mid-layer claims: the one with the largest radius in layers 1, 2 and 3, and a leaf.
    let widest = |l: usize| {
        *g.layers[l]
            .iter()
            .max_by_key(|&&n| (g.bfs(n).len(), std::cmp::Reverse(n)))
            .unwrap()
    };
    for n in [widest(1), widest(2), widest(3)] {
        let data = blast(&s, &g.ids[n], None);
        let members = check_blast(&g, &data, n, None, &|_| "unevaluated");
        assert!(members > 1, "{} has dependents", g.ids[n]);
        let data = blast(&s, &g.ids[n], Some(1));
        check_blast(&g, &data, n, Some(1), &|_| "unevaluated");
    }
    let leaf = g.layers[4][0];
    let data = blast(&s, &g.ids[leaf], None);
    assert_eq!(check_blast(&g, &data, leaf, None, &|_| "unevaluated"), 1);
    let noise = total;
    let data = blast(&s, &g.ids[noise], None);
    assert_eq!(
        check_blast(&g, &data, noise, None, &|_| "unevaluated"),
        NOISE
    );

    // Falsify the root: the same radius, the root falsified, everything else revoked.
    let f = ClaimBuilder::record("falsification", &[&g.ids[root]]).build_with_id();
    let f_path = s.dir().join("f.dsse");
    std::fs::write(&f_path, envelope_text(&f, &s.keys.agent)).unwrap();
    let (code, json) = s.run(&["add", f_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{json}");
    let t = Instant::now();
    let data = blast(&s, &g.ids[root], None);
    let blasted_after = t.elapsed();
    let status = |n: usize| if n == root { "falsified" } else { "revoked" };
    check_blast(&g, &data, root, None, &status);
    let mid = widest(2);
    let data = blast(&s, &g.ids[mid], None);
    check_blast(&g, &data, mid, None, &|_| "revoked");

    // status agrees, with a real premise path from the root, for a sample of claims.
    let sample: Vec<usize> = (0..total).step_by(37).collect();
    let mut args = vec!["status".to_owned()];
    args.extend(sample.iter().map(|&n| g.ids[n].clone()));
    let (code, json) = s.run(&args);
    assert_eq!(code, 0, "{}", json["error"]);
    for (c, &n) in json["data"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&sample)
    {
        assert_eq!(c["id"], json!(g.ids[n]));
        assert_eq!(c["status"], json!(status(n)), "{c}");
        if n == root {
            continue;
        }
        let causes = c["revoked_by"].as_array().unwrap();
        assert_eq!(causes.len(), 1, "{c}");
        assert_eq!(causes[0]["root"], json!(g.ids[root]));
        let path: Vec<usize> = causes[0]["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| g.index[x.as_str().unwrap()])
            .collect();
        assert_eq!(path.first(), Some(&root), "{c}");
        assert_eq!(path.last(), Some(&n), "{c}");
        assert!(
            path.windows(2).all(|w| g.premises[w[1]].contains(&w[0])),
            "the path follows premises: {c}"
        );
    }
    let data = blast(&s, &g.ids[noise], None);
    assert_eq!(
        check_blast(&g, &data, noise, None, &|_| "unevaluated"),
        NOISE
    );

    eprintln!(
        "{} claims: generated and signed in {generated:?}, added in {added:?}, \
         blast of the root in {blasted:?} (unevaluated) / {blasted_after:?} (after falsification); \
         {nearer} claims nearer than their layer",
        total + NOISE
    );
}

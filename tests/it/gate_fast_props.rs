//! `elench gate` decides by a quicker road than the reference (`gate::evaluate`, through the
//! fold over the log as it speaks of the tree): it reads every claim of the store at once,
//! reads each summary's anchor and form without building a JSON value, folds statuses
//! over slots (`fold::dense`), and resolves anchors from the files its tree hashing read.
//! Held here to the reference:
//!
//! - on random stores (assertions anchored at the tree, carried from another tree, stale,
//!   unanchored; records of every kind at either tree, records of records, premises, some
//!   never added) and random policies (every status forbidden, so every claim in scope shows
//!   its status; harness keys asked for; paths, origins and forms filtered; stale ignored),
//!   both give the same outcome, byte for byte, and every claim (records too) has the same
//!   own status, acceptance and effective status by slot as through the fold;
//! - on random anchor JSON (members of every type, escapes, repeats), the anchor read without
//!   a value is the reference's whenever it is read at all.

use crate::common;

use common::{dangling_id, lib_store, pick, record_kind, refs, ClaimBuilder, Keys, Rng, Signed};
use elench::anchor::files::TreeFiles;
use elench::anchor::{content_digest, Anchor, AtTree, Resolver};
use elench::claim::{Claim, Gist, Kind, OriginKind, Summary, SummaryParts};
use elench::fold::Fold;
use elench::gate::{evaluate, evaluate_all, Policy};
use elench::tree::{self, Selection};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use std::sync::Arc;

const OTHER_TREE: &str = "9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a9a";
const FILES: [&str; 3] = ["src/a.rs", "src/b.rs", "docs/c.md"];

/// A file's lines at the tree (`new`) or at the other tree: the other tree had one more
/// line at the top of `src/a.rs`, and a different third line in `src/b.rs`.
fn lines(file: usize, new: bool) -> Vec<String> {
    let mut out: Vec<String> = (0..8).map(|j| format!("line {j} of {file}")).collect();
    if !new && file == 0 {
        out.insert(0, "a line the tree dropped".into());
    }
    if !new && file == 1 {
        out[2] = "an edited line".into();
    }
    out
}

fn text(file: usize, new: bool) -> String {
    let mut t = lines(file, new).join("\n");
    t.push('\n');
    t
}

#[derive(Debug, Clone)]
struct Step {
    record: Option<Kind>,
    targets: Vec<Index>,
    premises: Vec<Index>,
    dangling: bool,
    /// Made at the tree (else at the other tree).
    here: bool,
    /// The file its span is in (None: about the whole tree), its first line, its length.
    file: Option<usize>,
    start: usize,
    len: usize,
    /// Carries a content digest (of the span at the tree it was made at).
    digest: bool,
    content_strategy: bool,
    harness: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop::option::weighted(0.4, record_kind()),
        prop::collection::vec(any::<Index>(), 1..3),
        prop::collection::vec(any::<Index>(), 0..3),
        prop::bool::weighted(0.1),
        any::<bool>(),
        prop::option::weighted(0.85, 0..FILES.len()),
        (1usize..8, 1usize..3),
        prop::bool::weighted(0.85),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(
                record,
                targets,
                premises,
                dangling,
                here,
                file,
                (start, len),
                digest,
                content_strategy,
                harness,
            )| Step {
                record,
                targets,
                premises,
                dangling,
                here,
                file,
                start,
                len,
                digest,
                content_strategy,
                harness,
            },
        )
}

fn build(steps: &[Step], keys: &Keys, here: &str) -> Vec<Signed> {
    let mut made: Vec<Signed> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let mut premises = if made.is_empty() {
            Vec::new()
        } else {
            pick(&s.premises, &made)
        };
        if s.dangling {
            premises.push(dangling_id(i as u64));
        }
        let tree = if s.here { here } else { OTHER_TREE };
        let spec = match s.record {
            Some(kind) if !made.is_empty() => {
                ClaimBuilder::record(kind.as_str(), &refs(&pick(&s.targets, &made)))
                    .text(&format!("record {i}"))
                    .tree(tree)
            }
            _ => {
                let mut b = ClaimBuilder::assertion(&format!("assertion \"{i}\"")).tree(tree);
                if s.harness {
                    b = b.origin("harness-observed").producer("ci/bot");
                }
                if let Some(f) = s.file {
                    let body = text(f, s.here);
                    let end = (s.start + s.len - 1).min(8);
                    let mut anchor = json!({"tree": tree, "path": FILES[f],
                        "strategy": if s.content_strategy { "content-digest" } else { "multi" }});
                    if f != 2 {
                        anchor["range"] = json!([s.start, end]);
                    }
                    if s.digest {
                        let range = (f != 2).then_some((s.start as u64, end as u64));
                        anchor["contentDigest"] =
                            json!(content_digest(body.as_bytes(), range).unwrap());
                    }
                    b = b.set("anchor", anchor);
                }
                b
            }
        };
        made.push(spec.depends_on(&refs(&premises)).sign(keys));
    }
    made
}

const POLICIES: [&str; 7] = [
    "",
    "[rules]\nforbid = [\"unevaluated\", \"verified\", \"falsified\", \"superseded\", \"revoked\"]\n",
    "[rules]\nmax_unevaluated = 1000\nmin_harness_keys = 1\n",
    "[rules]\nmax_unevaluated = 1000\nmin_harness_keys = 2\nstale = \"ignore\"\nforbid = [\"revoked\"]\n",
    "[scope]\npaths = [\"src/**\"]\n[rules]\nforbid = [\"verified\", \"unevaluated\"]\n",
    "[scope]\norigins = [\"harness-observed\"]\nforms = [\"annotation\"]\n",
    "[scope]\nforms = [\"predicate\"]\n[rules]\nmin_in_scope = 0\n",
];

fn case(steps: &[Step], seed: u64) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tree");
    for (f, name) in FILES.iter().enumerate() {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text(f, true)).unwrap();
    }
    let selection = Selection::from_no_ignore(true);
    let listing = tree::list(&dir, selection).unwrap();
    let ids = listing.ids().unwrap();
    let here = ids.oid().to_owned();

    let keys = Keys::new();
    let mut claims = build(steps, &keys, &here);
    let mut rng = Rng::new(seed);
    rng.shuffle(&mut claims);
    let store = lib_store(&tmp.path().join("store"), &keys);
    common::lib_add_all(&store, &claims);
    let all_ids = store.claim_ids().unwrap();

    // Every claim's statuses by slot (records too) are the fold's at the tree.
    {
        let at = AtTree::new(&store, ids.clone(), &dir, selection);
        let mut fold = Fold::new(&at);
        let snapshot = store.snapshot().unwrap();
        let all = snapshot.all_claims().unwrap();
        let view = AtTree::new(&all, ids.clone(), &dir, selection);
        let quick = elench::gate::evaluate::statuses_by_slot(&all, &view, &all_ids).unwrap();
        for (id, got) in all_ids.iter().zip(quick) {
            let own = fold.own(id).unwrap();
            let want = (
                own.status,
                !own.accepted_by.is_empty(),
                fold.effective(id).unwrap().status,
            );
            prop_assert_eq!(got, want, "claim {}", id);
        }
    }
    for text in POLICIES {
        let policy = Policy::parse(text).unwrap();
        let at = AtTree::new(&store, ids.clone(), &dir, selection);
        let mut fold = Fold::new(&at);
        let mut resolver = Resolver::new(&dir, &here).with_selection(selection);
        let reference =
            evaluate(&policy, &all_ids, &mut fold, &mut resolver).map_err(|e| e.to_string());

        // As the gate reads: the files its tree hashing kept, shared by both resolvers.
        let (_, kept) = listing.ids_keeping().unwrap();
        let files = Arc::new(TreeFiles::from_listing(&dir, &listing, kept));
        let snapshot = store.snapshot().unwrap();
        let all = snapshot.all_claims().unwrap();
        let at = AtTree::new(&all, ids.clone(), &dir, selection).with_files(files.clone());
        let mut resolver = Resolver::new(&dir, &here)
            .with_selection(selection)
            .with_files(files);
        let quick = evaluate_all(&policy, &all, &at, &mut resolver).map_err(|e| e.to_string());
        prop_assert_eq!(&quick, &reference, "policy {:?}", text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        max_shrink_iters: 128,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_gates_quick_road_is_the_reference(
        steps in prop::collection::vec(step(), 1..24),
        seed in any::<u64>(),
    ) {
        case(&steps, seed)?;
    }

    #[test]
    fn an_anchor_read_without_a_value_is_the_references(
        members in prop::collection::vec((member_name(), member_value()), 0..6),
        form in prop::option::of(member_value()),
        text in prop_oneof![member_value(), Just("\"say \\\"hi\\\"\\n\"".to_owned())],
        wrapped in any::<bool>(),
    ) {
        let mut anchor = String::from("{");
        for (i, (name, value)) in members.iter().enumerate() {
            if i > 0 {
                anchor.push(',');
            }
            anchor.push_str(&format!("{}:{value}", Value::from(name.as_str())));
        }
        anchor.push('}');
        let assertion = match &form {
            Some(f) => format!("{{\"form\":{f},\"text\":{text}}}"),
            None => format!("{{\"text\":{text}}}"),
        };
        let json_text = if wrapped {
            format!("{{\"anchor\":{anchor},\"assertion\":{assertion}}}")
        } else {
            format!("{{\"assertion\":{assertion}}}")
        };
        let Ok(value) = serde_json::from_str::<Value>(&json_text) else {
            return Ok(());
        };
        let summary = Summary::new(value);
        let claim = Claim {
            id: "cl_x".into(),
            kind: Kind::Assertion,
            target: vec![],
            depends_on: vec![],
            origin: OriginKind::AgentAsserted,
            producer: "p".into(),
            anchor_tree: OTHER_TREE.into(),
            timestamp: 0,
        };
        if let Some(text) = SummaryParts::text(&json_text) {
            prop_assert_eq!(text, summary.text().map(str::to_owned), "{}", json_text);
        }
        let reference = Anchor::of(&claim, &summary);
        if let Some(parts) = SummaryParts::parse(&json_text) {
            prop_assert_eq!(parts.form(), summary.form(), "{}", json_text);

            if let Some(quick) = Anchor::from_parts(OTHER_TREE, &parts) {
                prop_assert_eq!(Some(quick), reference.ok(), "{}", json_text);
            }
        }
    }
}

fn member_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("path".to_owned()),
        Just("range".to_owned()),
        Just("strategy".to_owned()),
        Just("contentDigest".to_owned()),
        Just("tree".to_owned()),
        Just("other".to_owned()),
    ]
}

/// A JSON value's text, of the types anchors have and those they must not.
fn member_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        Just("\"multi\"".to_owned()),
        Just("\"content-digest\"".to_owned()),
        Just("\"bogus\"".to_owned()),
        Just("\"src/a.rs\"".to_owned()),
        Just("\"src\\/a.rs\"".to_owned()),
        Just("\"annotation\"".to_owned()),
        Just("\"predicate\"".to_owned()),
        Just("7".to_owned()),
        Just("1.5".to_owned()),
        Just("-3".to_owned()),
        Just("true".to_owned()),
        Just("{}".to_owned()),
        (0u64..6, 0u64..6).prop_map(|(a, b)| format!("[{a},{b}]")),
        (0u64..6).prop_map(|a| format!("[{a}]")),
        Just("[1,2,3]".to_owned()),
        Just("[1.0,2]".to_owned()),
        Just("[\"1\",2]".to_owned()),
    ]
}

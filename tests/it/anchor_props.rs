//! Laws of carry-over, under random edits inside and outside anchored spans:
//!
//! - sound: a claim reported `carried` points at lines whose normalised bytes are exactly
//!   those of the span it was made about (so it is never carried when any byte differs);
//! - complete: when those bytes are still in its file (or, for strategy `content-digest`, in
//!   another file), it is carried, not stale.
//!
//! Normalisation is recomputed here independently of elench's code.

use elench::anchor::{content_digest, Applies, Resolver};
use elench::claim::{Body, Claim, Kind, OriginKind};
use proptest::prelude::*;
use serde_json::json;
use std::fs;

pub(crate) const OLD: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub(crate) const NEW: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// Lines of `text` after normalisation, each without its LF.
fn norm_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n')
        .map(|l| l.trim_end_matches([' ', '\t', '\r']).to_owned())
        .collect()
}

/// 0-based starts of every occurrence of `span` in `lines`.
fn occurrences(lines: &[String], span: &[String]) -> Vec<usize> {
    if span.len() > lines.len() {
        return Vec::new();
    }
    (0..=lines.len() - span.len())
        .filter(|&i| lines[i..i + span.len()] == *span)
        .collect()
}

fn join(lines: &[String], final_lf: bool) -> String {
    let mut t = lines.join("\n");
    if final_lf && !lines.is_empty() {
        t.push('\n');
    }
    t
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize),
    Replace(usize, String),
    /// Trailing whitespace only: invisible after normalisation.
    Pad(usize, String),
    /// One byte appended inside a line: visible.
    Touch(usize),
}

fn line() -> impl Strategy<Value = String> {
    // A small alphabet makes repeated lines (and so several candidate spans) common.
    "[ab \t\r]{0,5}"
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), line()).prop_map(|(i, l)| Edit::Insert(i, l)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), line()).prop_map(|(i, l)| Edit::Replace(i, l)),
        (any::<usize>(), "[ \t\r]{1,3}").prop_map(|(i, p)| Edit::Pad(i, p)),
        any::<usize>().prop_map(Edit::Touch),
    ]
}

fn apply(lines: &mut Vec<String>, e: &Edit) {
    let n = lines.len();
    match e {
        Edit::Insert(i, l) => lines.insert(i % (n + 1), l.clone()),
        Edit::Delete(i) if n > 0 => {
            lines.remove(i % n);
        }
        Edit::Replace(i, l) if n > 0 => lines[i % n] = l.clone(),
        Edit::Pad(i, p) if n > 0 => lines[i % n].push_str(p),
        Edit::Touch(i) if n > 0 => {
            let l = &mut lines[i % n];
            // Before any trailing whitespace, so normalisation cannot remove it.
            let keep = l.trim_end_matches([' ', '\t', '\r']).len();
            l.insert(keep, 'z');
        }
        _ => {}
    }
}

/// An assertion made at [`OLD`] with `anchor`.
pub(crate) fn claim(anchor: serde_json::Value) -> (Claim, Body) {
    let header = Claim {
        id: "cl_prop".into(),
        kind: Kind::Assertion,
        target: vec![],
        depends_on: vec![],
        origin: OriginKind::AgentAsserted,
        producer: "prop".into(),
        anchor_tree: OLD.into(),
        timestamp: 0,
    };
    (header, Body::new(json!({ "anchor": anchor })))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn carry_over_is_sound_and_complete(
        original in prop::collection::vec(line(), 1..16),
        start_seed in any::<usize>(),
        len_seed in any::<usize>(),
        edits in prop::collection::vec(edit(), 0..6),
        other in prop::collection::vec(line(), 0..8),
        copy_into_other in any::<bool>(),
        content_digest_strategy in any::<bool>(),
        whole_file in any::<bool>(),
        renamed in any::<bool>(),
        final_lf in any::<bool>(),
    ) {
        let old_text = join(&original, final_lf);
        let old_norm = norm_lines(&old_text);
        // Without a final LF, a last empty line is no line at all.
        prop_assume!(!old_norm.is_empty());
        let n = old_norm.len();
        let start = start_seed % n;
        let len = 1 + len_seed % (n - start);
        let range = (!whole_file).then_some((start as u64 + 1, (start + len) as u64));
        let digest = content_digest(old_text.as_bytes(), range).unwrap();
        let span: Vec<String> = match range {
            Some(_) => old_norm[start..start + len].to_vec(),
            None => old_norm.clone(),
        };

        let mut new_lines = original.clone();
        for e in &edits {
            apply(&mut new_lines, e);
        }
        let mut other_lines = other.clone();
        if copy_into_other {
            // The span's raw lines, with other trailing whitespace: the same after
            // normalisation.
            let at = other_lines.len() / 2;
            let copy: Vec<String> = span.iter().map(|l| format!("{l} \t")).collect();
            if whole_file {
                other_lines = copy;
            } else {
                other_lines.splice(at..at, copy);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let own_text = join(&new_lines, final_lf);
        if !renamed {
            fs::write(tmp.path().join("own.txt"), &own_text).unwrap();
        }
        let other_text = join(&other_lines, false);
        fs::write(tmp.path().join("other.txt"), &other_text).unwrap();

        let strategy = if content_digest_strategy { "content-digest" } else { "multi" };
        let mut anchor = json!({"tree": OLD, "strategy": strategy, "path": "own.txt",
                                "contentDigest": digest});
        if let Some((s, e)) = range {
            anchor["range"] = json!([s, e]);
        }
        let c = claim(anchor);
        let r = Resolver::new(tmp.path(), NEW).resolve(&c.0, &c.1).unwrap();

        let found = |text: &str| -> bool {
            let lines = norm_lines(text);
            if whole_file { lines == span } else { !occurrences(&lines, &span).is_empty() }
        };
        let in_own = !renamed && found(&own_text);
        let in_other = found(&other_text);

        // Sound: carried only onto exactly the same normalised lines.
        if r.applies == Applies::Carried {
            let path = r.path.clone().unwrap();
            let text = fs::read_to_string(tmp.path().join(&path)).unwrap();
            let lines = norm_lines(&text);
            match r.range {
                Some([s, e]) => {
                    prop_assert!(!whole_file);
                    prop_assert_eq!(&lines[s as usize - 1..e as usize], &span[..]);
                }
                None => {
                    prop_assert!(whole_file);
                    prop_assert_eq!(&lines, &span);
                }
            }
        }
        // Complete: where the lines still are, the claim carries, its own file first.
        let expect = if in_own {
            Some("own.txt")
        } else if content_digest_strategy && in_other {
            Some("other.txt")
        } else {
            None
        };
        match expect {
            Some(p) => {
                prop_assert_eq!(r.applies, Applies::Carried);
                prop_assert_eq!(r.path.as_deref(), Some(p));
            }
            None => prop_assert_eq!(r.applies, Applies::Stale),
        }
        // Nothing edited the span: it carries at its own range.
        if !renamed && edits.is_empty() {
            prop_assert_eq!(r.applies, Applies::Carried);
            if let Some((s, e)) = range {
                prop_assert_eq!(r.range, Some([s, e]));
            }
        }
    }
}

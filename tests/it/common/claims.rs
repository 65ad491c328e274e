//! Claim JSON: [`ClaimBuilder`] and ids.

use serde_json::{json, Map, Value};

/// `anchor.tree` of every claim made here unless a test sets another (64 lowercase hex).
pub const TREE: &str = "4f2d6c1a9b3e5d7f0a8c6e4b2d0f9e7c5a3b1d8f6e4c2a0b9d7f5e3c1a2b4d6e";

/// A well-formed claim id, for `target` / `dependsOn` members.
pub fn some_id(n: u8) -> String {
    format!("cl_{}", hex::encode([n; 32]))
}

/// A well-formed claim id that no claim made here has: a premise the store never sees.
pub fn dangling_id(n: u64) -> String {
    format!("cl_{:064x}", 0xdead_0000_0000u64 + n)
}

/// `ids` as `&str`s, for [`ClaimBuilder::record`] and [`ClaimBuilder::depends_on`].
pub fn refs(ids: &[String]) -> Vec<&str> {
    ids.iter().map(String::as_str).collect()
}

/// Builds claim JSON. Defaults make a valid claim: anchor [`TREE`] with strategy `multi`,
/// timestamp 1700000000, producer `model-x`, an annotation assertion. Sign it in memory with
/// [`ClaimBuilder::sign`] (or `Keys::sign`), or take its JSON with [`ClaimBuilder::build`].
#[derive(Debug, Clone)]
pub struct ClaimBuilder {
    value: Value,
}

impl ClaimBuilder {
    /// An `assertion` claim, agent-asserted, whose assertion is an annotation with `text`.
    pub fn assertion(text: &str) -> ClaimBuilder {
        ClaimBuilder {
            value: json!({
                "kind": "assertion",
                "assertion": {"form": "annotation", "text": text},
                "origin": {"kind": "agent-asserted", "producer": {"id": "model-x"}},
                "anchor": {"tree": TREE, "strategy": "multi"},
                "timestamp": 1_700_000_000,
            }),
        }
    }

    /// A record (`falsification`, `verification`, `supersession`, `residue-acceptance`)
    /// acting on `targets`, with the text `KIND record`. Its origin is the one the authority
    /// table asks of that kind: harness-observed for a verification, human-asserted for a
    /// residue-acceptance, agent-asserted otherwise (change it with [`ClaimBuilder::origin`]).
    pub fn record(kind: &str, targets: &[&str]) -> ClaimBuilder {
        let origin = match kind {
            "verification" => "harness-observed",
            "residue-acceptance" => "human-asserted",
            _ => "agent-asserted",
        };
        let mut b = ClaimBuilder::assertion(&format!("{kind} record"));
        b.value["kind"] = json!(kind);
        b.value["target"] = json!(targets);
        b.value["origin"]["kind"] = json!(origin);
        b
    }

    pub fn origin(mut self, kind: &str) -> Self {
        self.value["origin"]["kind"] = json!(kind);
        self
    }

    pub fn producer(mut self, id: &str) -> Self {
        self.value["origin"]["producer"]["id"] = json!(id);
        self
    }

    pub fn text(mut self, text: &str) -> Self {
        self.value["assertion"]["text"] = json!(text);
        self
    }

    pub fn tree(mut self, tree: &str) -> Self {
        self.value["anchor"]["tree"] = json!(tree);
        self
    }

    pub fn timestamp(mut self, t: i64) -> Self {
        self.value["timestamp"] = json!(t);
        self
    }

    /// Makes the assertion a predicate with an expression in `language`.
    pub fn predicate(mut self, language: &str, source: &str) -> Self {
        self.value["assertion"]["form"] = json!("predicate");
        self.value["assertion"]["expression"] = json!({"language": language, "source": source});
        self
    }

    /// Sets `dependsOn` to `ids`; an empty list leaves the member out (a claim with no
    /// premises). A test that wants `"dependsOn": []` says so with [`ClaimBuilder::set`].
    pub fn depends_on(mut self, ids: &[&str]) -> Self {
        if ids.is_empty() {
            self.object().remove("dependsOn");
        } else {
            self.value["dependsOn"] = json!(ids);
        }
        self
    }

    /// Sets a top-level member (any name, any value, valid or not).
    pub fn set(mut self, name: &str, value: Value) -> Self {
        self.object().insert(name.to_owned(), value);
        self
    }

    /// Removes a top-level member.
    pub fn remove(mut self, name: &str) -> Self {
        self.object().remove(name);
        self
    }

    /// The origin kind the claim has now.
    pub fn origin_kind(&self) -> &str {
        self.value["origin"]["kind"].as_str().unwrap_or_default()
    }

    /// The claim, without an `id`.
    pub fn build(self) -> Value {
        self.value
    }

    /// The claim, without an `id`, by reference.
    pub fn json(&self) -> &Value {
        &self.value
    }

    /// The claim with its correct `id` (computed, not validated: the claim may still be
    /// invalid in other ways).
    pub fn build_with_id(self) -> Value {
        with_computed_id(&self.value)
    }

    fn object(&mut self) -> &mut Map<String, Value> {
        self.value.as_object_mut().expect("a claim is an object")
    }
}

/// `claim` with its `id` member set to the id its content gives.
pub fn with_computed_id(claim: &Value) -> Value {
    let mut obj = claim.as_object().expect("a claim is an object").clone();
    let id = elench::claim::compute_id(&obj).expect("the claim canonicalizes");
    obj.insert("id".into(), json!(id));
    Value::Object(obj)
}

/// The `id` member of a claim built with [`ClaimBuilder::build_with_id`].
pub fn claim_id(claim: &Value) -> String {
    claim["id"]
        .as_str()
        .expect("the claim has an id")
        .to_owned()
}

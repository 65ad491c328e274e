//! The index: LMDB (through heed) beside the log, rebuildable from it at any time.
//!
//! Every claim id the log names, as a claim or as a claim's target or premise, gets a
//! [`Node`] number, in the order the log first names it. The other tables key claims by
//! that number, so the claims of one stretch of the log sit together in them (numbers
//! grow with arrival) instead of at random places in a B-tree keyed by hash.
//!
//! Databases (numbers are u64 big-endian, so key order is number order; claim ids are their
//! 32 hash bytes, keyids their hex text):
//! - `meta`: `meta` ([`Meta`]: the log head indexed up to, the position of the last indexed
//!   record, counts of claims, envelopes, trust events, nodes and keys) and `format` (the
//!   index's own layout version, [`FORMAT`]; an index in another format is rebuilt)
//! - `nodes`: id → [`NodeValue`] (its node, and whether the log holds it as a claim); the
//!   only table keyed by hash
//! - `claims`: node → [`ClaimEntry`] (the claim's id, the fields the fold reads, its signers,
//!   arrival number, where its first envelope sits in the log, and the number and digest of
//!   each of its envelopes: an envelope is found through its claim, so no table is keyed by
//!   digest). A node named only as a target or premise has no entry.
//! - `incoming`: node → [`Incoming`] (how many records target the id and how many claims
//!   name it as a premise), for every node
//! - `envelope_order`: envelope number → [`OrderEntry`] (its claim and position)
//! - `arrivals`: claim arrival number → id
//! - `by_target`: target node ‖ record node → (); `by_premise`: premise node ‖ dependent
//!   node → ()
//! - `keys`: keyid → [`KeyEntry`] (the trust state: the fold of the log's trust events)
//!
//! Databases keyed by a growing number are written with LMDB's append mode, so their pages
//! are filled, not split in half; the summary leaves out what other fields hold. Writing a
//! claim dirties one page at a random place (in `nodes`) where keys by id dirtied one per
//! table, which is most of what a large index costs to write (docs/benchmarks.md).
//!
//! Every value ends in a checksum of its table, key and value ([`Checked`]). A damaged branch
//! page can still send a search or a walk past entries whose checksums are sound, so what a
//! read finds is held to counts kept elsewhere, in checksummed values: the pairs of a node
//! to its [`Incoming`], the keys to `meta`, numbered tables to `meta`; an id the
//! index names must be found in `nodes`, and a claim `nodes` calls stored in `claims`. A
//! read that falls short is [`IndexError::Inconsistent`], damage.
//!
//! Invariants: the index is written only under the store's writer lock, one transaction per
//! group of log records, after the log's fsync; it is not synced per commit (the log is the
//! truth, and a disagreeing index is rebuilt), and before a commit the disk may not hold,
//! `index/UNSYNCED` names the boot that holds it ([`unsynced`]). Readers use LMDB read
//! transactions and never wait for the writer.

mod audit;
mod envs;
pub mod fault;
pub mod meta_pages;
pub mod unsynced;

pub use audit::Audit;
pub use envs::Environments;
pub use fault::IndexWatch;

use super::log::{Chain, Head, Position};
use crate::claim::{Kind, OriginKind, Summary};
use crate::ingest::{Accepted, Read, Signer};
use crate::keys::Role;
use envs::{FileId, Opened};
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, PutFlags, RoTxn, RwTxn, WithTls};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

pub type IdKey = [u8; 32];

/// The index's own layout version. An index written in another one (or before versions were
/// recorded) is rebuilt from the log on open, like a damaged one: the log is unchanged.
pub const FORMAT: u32 = 7;

/// A claim id's 32 hash bytes; None when the text is not a claim id.
pub fn id_key(id: &str) -> Option<IdKey> {
    let hex_part = id.strip_prefix(crate::claim::id::ID_PREFIX)?;
    if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_part, &mut out).ok()?;
    Some(out)
}

/// An id's number in the index (see the module comment).
pub type Node = u64;

/// The key of a node in the tables keyed by it.
pub fn node_key(node: Node) -> [u8; 8] {
    node.to_be_bytes()
}

/// The node whose key is `key`; None when it is not 8 bytes.
fn node_of_key(key: &[u8]) -> Option<Node> {
    <[u8; 8]>::try_from(key).ok().map(u64::from_be_bytes)
}

/// What `nodes` keeps of an id: its node, and whether the log holds a claim with that id
/// (else it is named only as a target or premise, and `claims` has no entry for the node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeValue {
    pub node: Node,
    pub claimed: bool,
}

impl NodeValue {
    /// The value as stored: the node (8 bytes, big-endian), then 1 when claimed, else 0.
    pub fn encode(self) -> [u8; 9] {
        let mut v = [0u8; 9];
        v[..8].copy_from_slice(&node_key(self.node));
        v[8] = u8::from(self.claimed);
        v
    }
}

/// The value a `nodes` entry gives `id`.
fn node_value(id: &IdKey, value: &[u8]) -> Result<NodeValue, IndexError> {
    match value {
        [node @ .., flag @ (0 | 1)] if node.len() == 8 => Ok(NodeValue {
            node: node_of_key(node).unwrap_or(Node::MAX),
            claimed: *flag == 1,
        }),
        _ => Err(IndexError::Decode {
            what: format!("nodes/{}", id_text(id)),
            why: "not a node and a flag".into(),
        }),
    }
}

pub fn id_text(key: &[u8]) -> String {
    format!("{}{}", crate::claim::id::ID_PREFIX, hex::encode(key))
}

/// What the index keeps of a claim. The claim's full text stays in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimEntry {
    /// The claim's id (the table is keyed by its node).
    pub id: IdKey,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: String,
    pub target: Vec<IdKey>,
    pub depends_on: Vec<IdKey>,
    pub anchor_tree: String,
    pub timestamp: i64,
    /// Arrival number among claims.
    pub seq: u64,
    /// Union over the claim's envelopes, sorted by keyid.
    pub signers: Vec<Signer>,
    /// The claim's first envelope in the log.
    pub first: Position,
    /// JSON of the parts of the claim that scopes and anchors read without the log:
    /// `{"anchor": …, "assertion": {"form", "text"}}`, the anchor without its `tree` (that is
    /// `anchor_tree`; [`ClaimEntry::summary_body`] puts it back).
    pub summary: String,
    /// The claim's envelopes, in log order.
    pub envelopes: Vec<EnvelopeRef>,
}

/// The pairs that name an id: `by_target` pairs (records targeting it) and `by_premise`
/// pairs (claims naming it as a premise), counted in the `incoming` table, by node, in a
/// checksummed value of its own. A read that a damaged branch page sends past some of the
/// pairs finds fewer than these, which is damage, never an answer. (Kept out of the claim's
/// entry: a new claim updates the counts of its premises, at random places; in a table of
/// a few bytes per node that dirties far fewer pages than in the claims table.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incoming {
    pub records: u64,
    pub dependents: u64,
}

impl Incoming {
    /// An `incoming` value, as a walk of the table gives it.
    pub fn decode(value: &[u8]) -> Result<Incoming, IndexError> {
        decode(value, "incoming")
    }

    /// A record targets the id: what a writer adds to its `incoming` entry, and the audit to
    /// what it expects, for each distinct target of a record.
    pub fn count_record(&mut self) {
        self.records += 1;
    }

    /// A claim names the id as a premise (each distinct premise of a claim).
    pub fn count_dependent(&mut self) {
        self.dependents += 1;
    }

    /// Both counts of `more` added (a writer gathers a transaction's counts, then adds them).
    pub fn add(&mut self, more: Incoming) {
        self.records += more.records;
        self.dependents += more.dependents;
    }
}

/// The distinct ids of a claim's `target` or `dependsOn`, each at its first mention: each
/// gives the claim one pair, and the claim it names one more [`Incoming`] count. The writer
/// and the audit both decide a record's pairs (and number their ids) with it.
pub fn distinct(ids: &[IdKey]) -> Vec<IdKey> {
    let mut out: Vec<IdKey> = Vec::with_capacity(ids.len());
    if ids.len() <= 16 {
        // The usual list is short (a claim names a few ids): a scan beats a set.
        for id in ids {
            if !out.contains(id) {
                out.push(*id);
            }
        }
    } else {
        let mut seen = rustc_hash::FxHashSet::default();
        out.extend(ids.iter().filter(|id| seen.insert(**id)));
    }
    out
}

/// One envelope of a claim: its number in the log's order of envelopes, and its digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeRef {
    pub number: u64,
    pub digest: [u8; 32],
}

impl ClaimEntry {
    /// The entry a claim gets from its first envelope: `seq` is its arrival number among
    /// claims. Written by [`Writer::apply_envelope`], expected by [`audit::Audit`].
    pub fn first(
        id: IdKey,
        accepted: &Accepted,
        pos: Position,
        seq: u64,
        envelope: EnvelopeRef,
    ) -> ClaimEntry {
        let Accepted {
            claim,
            signers,
            text,
            ..
        } = accepted;
        let to_keys =
            |ids: &[String]| -> Vec<IdKey> { ids.iter().filter_map(|t| id_key(t)).collect() };
        let mut sorted = signers.to_vec();
        sorted.sort_by(|a, b| a.keyid.cmp(&b.keyid));
        sorted.dedup_by(|a, b| a.keyid == b.keyid);
        ClaimEntry {
            id,
            kind: claim.kind,
            origin: claim.origin,
            producer: claim.producer.clone(),
            target: to_keys(&claim.target),
            depends_on: to_keys(&claim.depends_on),
            anchor_tree: claim.anchor_tree.clone(),
            timestamp: claim.timestamp,
            seq,
            signers: sorted,
            first: pos,
            summary: match text {
                Read::Summary(summary) => summary.clone(),
                Read::Whole(body) => summary_of(body.as_value()),
            },
            envelopes: vec![envelope],
        }
    }

    /// Adds a later envelope of the claim `id`: its signers join the union. An envelope the
    /// entry already holds is [`IndexError::DuplicateEnvelope`].
    pub fn add_envelope(
        &mut self,
        id: &IdKey,
        envelope: EnvelopeRef,
        signers: &[Signer],
    ) -> Result<(), IndexError> {
        if self.envelopes.iter().any(|e| e.digest == envelope.digest) {
            return Err(IndexError::DuplicateEnvelope { claim: id_text(id) });
        }
        self.envelopes.push(envelope);
        for s in signers {
            if !self.signers.iter().any(|e| e.keyid == s.keyid) {
                self.signers.push(s.clone());
            }
        }
        self.signers.sort_by(|a, b| a.keyid.cmp(&b.keyid));
        Ok(())
    }

    /// The summary as the claim body it abbreviates: `anchor` (with its tree) and
    /// `assertion.{form,text}`.
    pub fn summary_body(&self) -> Result<Summary, serde_json::Error> {
        let mut body: serde_json::Value = serde_json::from_str(&self.summary)?;
        if let Some(anchor) = body.get_mut("anchor").and_then(|a| a.as_object_mut()) {
            anchor.insert("tree".into(), self.anchor_tree.clone().into());
        }
        Ok(Summary::new(body))
    }
}

/// What the blast radius reads of a claim: its id, kind and edges, decoded from the leading
/// fields of its [`ClaimEntry`] without the rest (see [`EdgesRef`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimEdges {
    pub id: IdKey,
    pub kind: Kind,
    pub target: Vec<IdKey>,
    pub depends_on: Vec<IdKey>,
}

/// A claim's id, kind and edges, borrowed from its encoded [`ClaimEntry`]. postcard writes a
/// struct as its fields one after another, so the leading ones decode on their own: `id` (an
/// `[u8; 32]` is 32 raw bytes), `kind`, `origin` and `producer` through serde, then `target`
/// and `depends_on`, each a varint count and that many 32-byte ids, read as slices. Signers,
/// summary and envelopes are never decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgesRef<'a> {
    pub id: &'a IdKey,
    pub kind: Kind,
    target: &'a [u8],
    depends_on: &'a [u8],
}

fn ids_of(bytes: &[u8]) -> impl Iterator<Item = &IdKey> {
    bytes
        .chunks_exact(32)
        .filter_map(|c| <&IdKey>::try_from(c).ok())
}

impl<'a> EdgesRef<'a> {
    /// Decodes the leading fields of the entry stored under the key `node`.
    pub fn decode(node: &[u8], entry: &'a [u8]) -> Result<EdgesRef<'a>, IndexError> {
        let bad = |why: String| IndexError::Decode {
            what: format!("claims/{}", node_of_key(node).unwrap_or(u64::MAX)),
            why,
        };
        let (id, rest) = take_ids(1, entry).map_err(&bad)?;
        let id = <&IdKey>::try_from(id).map_err(|_| bad("no id".into()))?;
        let ((kind, _origin, _producer), rest) =
            postcard::take_from_bytes::<(Kind, OriginKind, &str)>(rest)
                .map_err(|e| bad(e.to_string()))?;
        let (target, rest) = take_counted_ids(rest).map_err(&bad)?;
        let (depends_on, _) = take_counted_ids(rest).map_err(&bad)?;
        Ok(EdgesRef {
            id,
            kind,
            target,
            depends_on,
        })
    }

    pub fn target(&self) -> impl Iterator<Item = &'a IdKey> {
        ids_of(self.target)
    }

    pub fn depends_on(&self) -> impl Iterator<Item = &'a IdKey> {
        ids_of(self.depends_on)
    }

    /// How many premises the claim names (a repeated one counts each time).
    pub fn depends_on_len(&self) -> usize {
        self.depends_on.len() / 32
    }

    pub fn has_target(&self) -> bool {
        !self.target.is_empty()
    }

    pub fn to_owned(&self) -> ClaimEdges {
        ClaimEdges {
            id: *self.id,
            kind: self.kind,
            target: self.target().copied().collect(),
            depends_on: self.depends_on().copied().collect(),
        }
    }
}

/// A postcard `Vec<[u8; 32]>` at the start of `bytes`: its ids' bytes, and what follows.
fn take_counted_ids(bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let (count, rest) = postcard::take_from_bytes::<usize>(bytes).map_err(|e| e.to_string())?;
    take_ids(count, rest)
}

/// `count` ids (32 bytes each) at the start of `bytes`, and what follows.
fn take_ids(count: usize, bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    match count.checked_mul(32) {
        Some(len) if len <= bytes.len() => Ok(bytes.split_at(len)),
        _ => Err(format!("{count} ids, {} bytes left", bytes.len())),
    }
}

/// The tables [`Reader::walk_sorted`] reads, each keyed by a node or beginning with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Claim entries by node.
    Claims,
    /// target node ‖ record node.
    Targets,
    /// premise node ‖ dependent node.
    Premises,
    /// Counts of the pairs naming a node, by node.
    Incoming,
}

impl Table {
    /// How many entries [`Reader::walk_sorted`] steps over before it seeks instead. A seek
    /// descends from the B-tree's root (whose pages stay in cache) and searches a leaf; a
    /// step reads the next entry. Pair keys are small, so a page holds many and stepping
    /// over them is cheap; claim entries are a few hundred bytes each, so every step over
    /// one touches new memory, and a seek pays off sooner.
    fn steps(self) -> usize {
        match self {
            Table::Claims => 4,
            Table::Targets | Table::Premises | Table::Incoming => 16,
        }
    }
}

/// The summary a [`ClaimEntry`] keeps of a claim's body, written without copying the body:
/// the anchor without its `tree`, `assertion.{form,text}` (members in the body's order) and,
/// for a predicate, `assertion.expression.source`; and the `evidence` entries that record an
/// observation's inputs (`uri` and `digest` only), which judging a claim at a tree reads.
pub fn summary_of(body: &serde_json::Value) -> String {
    use serde::ser::{SerializeMap, SerializeSeq};
    use serde_json::Value;
    /// An object's members except `skip`.
    struct Members<'a> {
        fields: &'a serde_json::Map<String, Value>,
        skip: &'a str,
    }
    impl Serialize for Members<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            for (k, v) in self.fields {
                if k != self.skip {
                    map.serialize_entry(k, v)?;
                }
            }
            map.end()
        }
    }
    /// `form` and `text` in the body's order, then a predicate's source.
    struct Assertion<'a>(&'a serde_json::Map<String, Value>);
    impl Serialize for Assertion<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            for (k, v) in self.0 {
                if k == "form" || k == "text" {
                    map.serialize_entry(k, v)?;
                }
            }
            if let Some(source) = predicate_source(self.0) {
                map.serialize_entry("expression", &Source { source })?;
            }
            map.end()
        }
    }
    #[derive(Serialize)]
    struct Source<'a> {
        source: &'a str,
    }
    #[derive(Serialize)]
    struct Observed<'a> {
        uri: &'a str,
        digest: &'a str,
    }
    struct Evidence<'a>(Vec<Observed<'a>>);
    impl Serialize for Evidence<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0.len()))?;
            for o in &self.0 {
                seq.serialize_element(o)?;
            }
            seq.end()
        }
    }
    let empty = serde_json::Map::new();
    fn object(v: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
        v.and_then(Value::as_object)
    }
    fn predicate_source(a: &serde_json::Map<String, Value>) -> Option<&str> {
        if a.get("form")?.as_str()? != "predicate" {
            return None;
        }
        a.get("expression")?.get("source")?.as_str()
    }
    #[derive(Serialize)]
    struct Summary<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        anchor: Option<Members<'a>>,
        assertion: Assertion<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        evidence: Option<Evidence<'a>>,
    }
    let observed: Vec<Observed<'_>> = body
        .get("evidence")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|e| {
            let uri = e.get("uri")?.as_str()?;
            uri.starts_with(crate::claim::INPUTS_URI_PREFIX)
                .then_some(())?;
            Some(Observed {
                uri,
                digest: e.get("digest")?.as_str()?,
            })
        })
        .collect();
    let summary = Summary {
        anchor: object(body.get("anchor")).map(|fields| Members {
            fields,
            skip: "tree",
        }),
        assertion: Assertion(object(body.get("assertion")).unwrap_or(&empty)),
        evidence: (!observed.is_empty()).then_some(Evidence(observed)),
    };
    serde_json::to_string(&summary).unwrap_or_default()
}

/// An envelope as the index knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeEntry {
    pub claim: IdKey,
    pub pos: Position,
    /// Envelope number: 0 for the first envelope in the log.
    pub number: u64,
}

/// The value of `envelope_order`: whose envelope sits where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderEntry {
    pub claim: IdKey,
    pub pos: Position,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyEntry {
    pub keyid: String,
    pub role: Role,
    pub name: String,
    pub public_key: [u8; 32],
    /// Log record numbers of the events.
    pub added_at: u64,
    pub retired_at: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub claims: u64,
    pub envelopes: u64,
    pub trust_events: u64,
    /// Entries of `nodes`: every id the log names (the next id gets this number).
    pub nodes: u64,
    /// Entries of `keys`: every key the log added.
    pub keys: u64,
}

/// `meta` key of the chain value of the log's first record: which log the index indexes.
pub const ORIGIN_KEY: &[u8] = b"origin";
/// `meta` key of the trust events the index applied, in log order: where each sits and its
/// chain value, so that a writer can check the records the trust state rests on.
pub const TRUST_EVENTS_KEY: &[u8] = b"trust_events";

/// A trust event as the index saw it.
pub type TrustEventAt = (Position, Chain);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub head: Head,
    pub last: Option<Position>,
    pub counts: Counts,
}

impl KeyEntry {
    /// The trust state's entry for a key added at `pos`.
    pub fn added(pos: Position, key: &super::record::KeyAdd) -> Result<KeyEntry, IndexError> {
        let public_key: [u8; 32] = hex::decode(&key.public_key)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| IndexError::Decode {
                what: format!("key {}", key.keyid),
                why: "public key is not 32 bytes of hex".into(),
            })?;
        Ok(KeyEntry {
            keyid: key.keyid.clone(),
            role: key.role,
            name: key.name.clone(),
            public_key,
            added_at: pos.n,
            retired_at: None,
        })
    }

    /// Retires the key at `pos`; false when it was already retired (the first retirement
    /// stands).
    pub fn retire(&mut self, pos: Position) -> bool {
        if self.retired_at.is_some() {
            return false;
        }
        self.retired_at = Some(pos.n);
        true
    }
}

impl Meta {
    /// The key of `claim` and the reference its envelope (with this digest) gets as the
    /// next envelope of the log.
    pub fn next_envelope(
        &self,
        claim: &crate::claim::Claim,
        digest: &[u8; 32],
    ) -> Result<(IdKey, EnvelopeRef), IndexError> {
        let id = id_key(&claim.id).ok_or_else(|| IndexError::Decode {
            what: "claim id".into(),
            why: claim.id.clone(),
        })?;
        let envelope = EnvelopeRef {
            number: self.counts.envelopes,
            digest: *digest,
        };
        Ok((id, envelope))
    }

    /// Moves the indexed head past the record at `pos`.
    pub fn advance(&mut self, pos: Position, chain: Chain, frame_len: u64) {
        self.head = Head {
            records: pos.n + 1,
            chain,
            segment: pos.segment,
            end: pos.offset + frame_len,
        };
        self.last = Some(pos);
    }

    /// Counts the trust event at `pos` and moves past it: what every applier does after
    /// applying one, the writer and the audit alike.
    pub fn advance_past_trust_event(&mut self, pos: Position, chain: Chain, frame_len: u64) {
        self.counts.trust_events += 1;
        self.advance(pos, chain, frame_len);
    }

    /// Counts a key the log adds for the first time.
    pub fn count_key(&mut self) {
        self.counts.keys += 1;
    }

    /// Numbers an id the log names for the first time: the next node.
    pub fn number_node(&mut self) -> Node {
        self.counts.nodes += 1;
        self.counts.nodes - 1
    }

    pub const EMPTY: Meta = Meta {
        head: Head::EMPTY,
        last: None,
        counts: Counts {
            claims: 0,
            envelopes: 0,
            trust_events: 0,
            nodes: 0,
            keys: 0,
        },
    };
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index: {0}")]
    Lmdb(#[from] heed::Error),
    #[error("index entry {what} is unreadable: {why}")]
    Decode { what: String, why: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// [`Writer::apply_envelope`] was given an envelope the claim already holds; the
    /// transaction is left half-applied and must be abandoned.
    #[error("claim {claim} already holds this envelope")]
    DuplicateEnvelope { claim: String },
    /// LMDB has the environment open already, through another [`Environments`] of this
    /// process: the caller opened one store twice without sharing its environments.
    #[error(
        "the index in {} is open already in this process, through other environments (a \
         store opened twice at once must share one `Environments`)",
        .0.display()
    )]
    InUse(PathBuf),
    /// The index contradicts itself: a lookup or a walk found fewer entries than another
    /// entry says there are (a damaged page sent it past them), or an entry that another one
    /// names is missing. Damage.
    #[error("the index contradicts itself: {0}")]
    Inconsistent(String),
    /// LMDB's own meta pages cannot be what LMDB wrote ([`meta_pages`]): the file is
    /// damaged, and LMDB is not let read it.
    #[error("{0}")]
    File(String),
}

impl IndexError {
    /// Whether the process ran short of memory or address space (or of LMDB's own slots):
    /// never a sign of damage, and never a reason to replace the index.
    pub fn is_resource(&self) -> bool {
        use heed::MdbError as M;
        let io = |e: &std::io::Error| {
            e.kind() == std::io::ErrorKind::OutOfMemory
                || matches!(
                    e.raw_os_error(),
                    Some(libc::ENOMEM | libc::EAGAIN | libc::ENOSPC)
                )
        };
        match self {
            IndexError::Lmdb(heed::Error::Io(e)) | IndexError::Io { source: e, .. } => io(e),
            // Not MDB_CURSOR_FULL: a cursor's stack fills only on a tree deeper than any
            // LMDB writes (a damaged page that points back up the tree).
            IndexError::Lmdb(heed::Error::Mdb(e)) => matches!(
                e,
                M::MapFull | M::ReadersFull | M::TlsFull | M::TxnFull | M::MapResized
            ),
            _ => false,
        }
    }

    /// Whether the error says the index's bytes are damaged (rather than that the process
    /// ran out of something, or the file system failed it): then the index is rebuilt.
    pub fn is_damage(&self) -> bool {
        use heed::MdbError as M;
        match self {
            IndexError::Decode { .. } | IndexError::Inconsistent(_) | IndexError::File(_) => true,
            IndexError::Lmdb(heed::Error::Decoding(_)) => true,
            IndexError::Lmdb(heed::Error::Mdb(e)) => matches!(
                e,
                M::PageNotFound
                    | M::Corrupted
                    | M::Panic
                    | M::VersionMismatch
                    | M::Invalid
                    | M::Incompatible
                    | M::BadTxn
                    | M::PageFull
                    | M::BadValSize
                    | M::CursorFull
                    // Only the writer's appends can meet a key already there: the counts in
                    // `meta` say the key is new, so the table contradicts them.
                    | M::KeyExist
            ),
            _ => false,
        }
    }
}

type Db = Database<Bytes, Bytes>;

/// Bytes of the checksum that ends every value ([`Checked`]).
const CHECK_LEN: usize = 4;

/// The checksum of an entry: CRC32C of its table's number, its key and its value. LMDB keeps
/// no checksums, and a flipped bit in a page would otherwise be read as another value (a
/// signer, a status) or another key (an edge), and a flipped page number could send one
/// table's search into another table's pages (the target and premise pairs look alike): an
/// entry whose checksum fails is damage, and the index is rebuilt.
fn check_of(table: u8, key: &[u8], value: &[u8]) -> [u8; CHECK_LEN] {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&[table]), key);
    crc32c::crc32c_append(crc, value).to_le_bytes()
}

/// The bytes the index stores for an entry of the table named `table` (one of the names
/// LMDB knows the tables by): `value` and its checksum. For tools and tests that write the
/// index behind elench's back; None for a table the index does not have.
pub fn stored_value(table: &str, key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
    let number = DB_NAMES.iter().position(|n| *n == table)?;
    Some(with_check(number as u8, key, value))
}

fn with_check(table: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + CHECK_LEN);
    v.extend_from_slice(value);
    v.extend_from_slice(&check_of(table, key, value));
    v
}

/// The value of an entry of `table` without its checksum; an error when the checksum fails.
fn checked<'t>(table: u8, key: &[u8], stored: &'t [u8]) -> Result<&'t [u8], IndexError> {
    let split = stored
        .len()
        .checked_sub(CHECK_LEN)
        .ok_or_else(|| damaged(key, "too short"))?;
    let (value, check) = stored.split_at(split);
    if check != check_of(table, key, value) {
        return Err(damaged(key, "its checksum does not match"));
    }
    Ok(value)
}

fn damaged(key: &[u8], why: &str) -> IndexError {
    IndexError::Decode {
        what: format!("entry {}", hex::encode(&key[..key.len().min(40)])),
        why: why.to_owned(),
    }
}

type Entry<'t> = (&'t [u8], &'t [u8]);

/// A walk's entry of `table`, checked.
fn checked_item(table: u8, item: heed::Result<Entry<'_>>) -> Result<Entry<'_>, IndexError> {
    let (k, v) = item?;
    Ok((k, checked(table, k, v)?))
}

/// A table whose every value ends in the checksum of its entry ([`check_of`]): written and
/// checked here, so no reader sees a value that was not written. The number is the table's
/// place in `DB_NAMES`, which its checksums cover.
#[derive(Clone, Copy)]
pub(crate) struct Checked(Db, u8);

impl Checked {
    fn get<'t>(&self, txn: &'t RoTxn, key: &[u8]) -> Result<Option<&'t [u8]>, IndexError> {
        match self.0.get(txn, key)? {
            None => Ok(None),
            Some(v) => checked(self.1, key, v).map(Some),
        }
    }

    fn put(&self, txn: &mut RwTxn, key: &[u8], value: &[u8]) -> Result<(), IndexError> {
        Ok(self.0.put(txn, key, &with_check(self.1, key, value))?)
    }

    fn put_with_flags(
        &self,
        txn: &mut RwTxn,
        flags: PutFlags,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), IndexError> {
        Ok(self
            .0
            .put_with_flags(txn, flags, key, &with_check(self.1, key, value))?)
    }

    /// The value under `key`, or None after putting `value` there.
    fn get_or_put(
        &self,
        txn: &mut RwTxn,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, IndexError> {
        let stored = with_check(self.1, key, value);
        match self.0.get_or_put(txn, key, &stored)? {
            None => Ok(None),
            Some(v) => checked(self.1, key, v).map(|v| Some(v.to_vec())),
        }
    }

    #[cfg(test)]
    fn delete(&self, txn: &mut RwTxn, key: &[u8]) -> Result<bool, IndexError> {
        Ok(self.0.delete(txn, key)?)
    }

    fn iter<'t>(
        &self,
        txn: &'t RoTxn,
    ) -> Result<impl Iterator<Item = Result<Entry<'t>, IndexError>>, IndexError> {
        let table = self.1;
        Ok(self.0.iter(txn)?.map(move |i| checked_item(table, i)))
    }

    fn range<'t>(
        &self,
        txn: &'t RoTxn,
        range: &(Bound<&[u8]>, Bound<&[u8]>),
    ) -> Result<impl Iterator<Item = Result<Entry<'t>, IndexError>>, IndexError> {
        let table = self.1;
        Ok(self
            .0
            .range(txn, range)?
            .map(move |i| checked_item(table, i)))
    }

    fn prefix_iter<'t>(
        &self,
        txn: &'t RoTxn,
        prefix: &[u8],
    ) -> Result<impl Iterator<Item = Result<Entry<'t>, IndexError>>, IndexError> {
        let table = self.1;
        Ok(self
            .0
            .prefix_iter(txn, prefix)?
            .map(move |i| checked_item(table, i)))
    }

    fn len(&self, txn: &RoTxn) -> Result<u64, IndexError> {
        Ok(self.0.len(txn)?)
    }

    fn clear(&self, txn: &mut RwTxn) -> Result<(), IndexError> {
        Ok(self.0.clear(txn)?)
    }
}

const MIB: u64 = 1 << 20;

/// Room to leave in the map beyond `used` bytes: as much again, at least 256 MiB (far more
/// than one transaction of the writer dirties).
fn headroom(used: u64) -> u64 {
    used.max(256 * MIB)
}

/// The map size for an index of `used` bytes: with headroom, in whole 64 MiB (a multiple of
/// any page size).
fn map_size_for(used: u64) -> usize {
    let want = used.saturating_add(headroom(used));
    let rounded = want.div_ceil(64 * MIB).saturating_mul(64 * MIB);
    usize::try_from(rounded).unwrap_or(usize::MAX & !(64 * MIB as usize - 1))
}

/// Sets close-on-exec on every descriptor of this process open on a file under `dir` (LMDB's
/// data file is opened without it).
pub fn close_on_exec_under(dir: &Path) {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for fd in fds.flatten() {
        let Some(n) = fd.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if target.starts_with(dir) {
            // SAFETY: fcntl on a descriptor number; a closed or reused one fails or gets a flag
            // it should have anyway.
            unsafe {
                let flags = libc::fcntl(n, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                    libc::fcntl(n, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// How the index differs from what the log gives it ([`Audit`]); each holds the entry's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The log gives the entry; the index lacks it.
    Missing(Vec<u8>),
    /// The index holds an entry the log does not account for.
    Extra(Vec<u8>),
    /// The index holds the entry with another value.
    Changed(Vec<u8>),
    /// LMDB could not read it (a damaged page); the audit stops there, since LMDB fails every
    /// later read of the transaction.
    Unreadable(Vec<u8>),
    /// The table holds `found` entries where the log gives `expected`, and no entry could
    /// be named (for example, LMDB's own count in the file disagrees with its pages).
    Count { expected: u64, found: u64 },
}

#[derive(Clone, Copy)]
struct Dbs {
    meta: Checked,
    nodes: Checked,
    claims: Checked,
    envelope_order: Checked,
    arrivals: Checked,
    by_target: Checked,
    by_premise: Checked,
    keys: Checked,
    incoming: Checked,
}

const DB_NAMES: [&str; 9] = [
    "meta",
    "nodes",
    "claims",
    "envelope_order",
    "arrivals",
    "by_target",
    "by_premise",
    "keys",
    "incoming",
];

/// Databases earlier index formats had and this one does not; a rebuild empties them.
const LEGACY_DB_NAMES: [&str; 2] = ["claim_envelopes", "envelopes"];

/// The index of one store.
#[derive(Clone)]
pub struct Index {
    /// The environment, shared with every other handle on the folder ([`Environments`]).
    opened: Arc<Opened>,
    dbs: Dbs,
    legacy: Vec<Checked>,
    /// The `UNSYNCED` file ([`unsynced`]).
    unsynced: PathBuf,
}

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T, IndexError> {
    postcard::from_bytes(bytes).map_err(|e| IndexError::Decode {
        what: what.to_owned(),
        why: e.to_string(),
    })
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising these plain structs into memory cannot fail.
    postcard::to_allocvec(v).unwrap_or_default()
}

fn pair(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(a.len() + b.len());
    k.extend_from_slice(a);
    k.extend_from_slice(b);
    k
}

impl Index {
    /// Opens (creating if needed) the index in `dir`, through `envs` (the environment of a
    /// folder already open there is shared).
    pub fn open(envs: &Environments, dir: &Path) -> Result<Index, IndexError> {
        Index::open_mode(envs, dir, false)
    }

    /// Opens an existing index that cannot be written (a store on a read-only file system
    /// or without write permission): no lock file, no database created.
    pub fn open_read_only(envs: &Environments, dir: &Path) -> Result<Index, IndexError> {
        Index::open_mode(envs, dir, true)
    }

    fn open_mode(envs: &Environments, dir: &Path, read_only: bool) -> Result<Index, IndexError> {
        if !read_only {
            std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let canonical = std::fs::canonicalize(dir).map_err(|source| IndexError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let opened = envs.get_or_open(&canonical, || {
            // LMDB trusts its meta pages: damage there is found before it reads them.
            if let Some(why) = meta_pages::damage(&canonical.join("data.mdb")) {
                return Err(IndexError::File(why));
            }
            let mut options = EnvOpenOptions::new();
            // The map is sized to the file with room to grow (grown before a write that
            // could need more, `Index::make_room`), not a fixed reservation: under a
            // limit on address space (`ulimit -v`) a terabyte cannot be mapped.
            let file = std::fs::metadata(canonical.join("data.mdb")).map_or(0, |m| m.len());
            options
                .map_size(map_size_for(file))
                .max_dbs(16)
                .max_readers(1024);
            // SAFETY: NO_SYNC only drops the index's own fsyncs: the log is fsynced, a
            // killed process leaves its writes in the page cache, and a machine that stopped
            // before the disk held them is told by the `UNSYNCED` file (module
            // `unsynced`), so the index is rebuilt. Without boot ids there is no such file
            // and NO_META_SYNC keeps LMDB's own guarantee. READ_ONLY with NO_LOCK is for
            // stores nobody can write, so no writer can change the pages under the
            // reader. The environment is opened once per registry (`Environments`), and
            // heed refuses a second one of the folder in the process (`InUse`).
            let env = unsafe {
                if read_only {
                    options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_LOCK);
                } else if unsynced::boot_id().is_some() {
                    options.flags(EnvFlags::NO_SYNC);
                } else {
                    options.flags(EnvFlags::NO_META_SYNC);
                }
                options.open(&canonical)
            }
            .map_err(|e| match e {
                heed::Error::EnvAlreadyOpened => IndexError::InUse(canonical.clone()),
                e => IndexError::Lmdb(e),
            })?;
            // LMDB opens data.mdb without close-on-exec: a child process (a predicate's
            // runner) would inherit a descriptor that writes the index.
            close_on_exec_under(&canonical);
            Ok((env, file_id(&canonical.join("data.mdb"))))
        })?;
        let env = &opened.env;
        let _active = fault::Active::new(&opened.watched);
        let mut dbs = Vec::with_capacity(DB_NAMES.len());
        let mut legacy = Vec::new();
        if read_only {
            let rtxn = env.read_txn()?;
            for name in DB_NAMES {
                let db = env
                    .open_database::<Bytes, Bytes>(&rtxn, Some(name))?
                    .ok_or_else(|| IndexError::Decode {
                        what: format!("database {name}"),
                        why: "missing from a read-only index".into(),
                    })?;
                dbs.push(db);
            }
            rtxn.commit()?;
        } else {
            // Most opens find every database: a read transaction does, without waiting for a
            // writer or writing anything.
            let rtxn = env.read_txn()?;
            for name in DB_NAMES {
                match env.open_database::<Bytes, Bytes>(&rtxn, Some(name))? {
                    Some(db) => dbs.push(db),
                    None => break,
                }
            }
            rtxn.commit()?;
            if dbs.len() < DB_NAMES.len() {
                dbs.clear();
                let mut wtxn = env.write_txn()?;
                for name in DB_NAMES {
                    dbs.push(env.create_database::<Bytes, Bytes>(&mut wtxn, Some(name))?);
                }
                unsynced::mark(&unsynced::path_in(&canonical))?;
                wtxn.commit()?;
            }
            let rtxn = env.read_txn()?;
            for name in LEGACY_DB_NAMES {
                if let Some(db) = env.open_database::<Bytes, Bytes>(&rtxn, Some(name))? {
                    legacy.push(Checked(db, u8::MAX));
                }
            }
            rtxn.commit()?;
        }
        let dbs = Dbs {
            meta: Checked(dbs[0], 0),
            nodes: Checked(dbs[1], 1),
            claims: Checked(dbs[2], 2),
            envelope_order: Checked(dbs[3], 3),
            arrivals: Checked(dbs[4], 4),
            by_target: Checked(dbs[5], 5),
            by_premise: Checked(dbs[6], 6),
            keys: Checked(dbs[7], 7),
            incoming: Checked(dbs[8], 8),
        };
        drop(_active);
        // A read-only index is checked against the file too (it cannot be rebuilt, so a
        // command says so instead of reading pages that may be lost).
        let unsynced = unsynced::path_in(&canonical);
        Ok(Index {
            opened,
            dbs,
            legacy,
            unsynced,
        })
    }

    fn env(&self) -> &Env {
        &self.opened.env
    }

    pub fn read(&self) -> Result<Reader<'_>, IndexError> {
        let pinned = PINNED.with(|p| {
            p.borrow()
                .iter()
                .find(|(dir, _)| dir.as_path() == self.env().path())
                .map(|(_, txn)| txn.clone())
        });
        let active = fault::Active::new(&self.opened.watched);
        let txn = match pinned {
            Some(txn) => Txn::Pinned(txn),
            None => Txn::Own(self.begin(|env| env.read_txn())?),
        };
        Ok(Reader {
            txn,
            dbs: self.dbs,
            _active: active,
        })
    }

    /// Makes every read of this index on this thread one transaction, until the [`Pin`] is
    /// dropped: what a command answers is then one state of the index, whatever a writer
    /// commits meanwhile.
    pub fn pin(&self) -> Result<Pin, IndexError> {
        let dir = self.env().path().to_path_buf();
        let active = fault::Active::new(&self.opened.watched);
        let txn = self.begin(|env| env.clone().static_read_txn())?;
        PINNED.with(|p| p.borrow_mut().push((dir.clone(), Rc::new(txn))));
        // The pin holds the transaction from here, and releases it when dropped.
        std::mem::forget(active);
        Ok(Pin {
            dir,
            watched: self.opened.watched.clone(),
        })
    }

    /// Begins a transaction (the caller holds one [`fault::Active`] for it, and no
    /// transaction yet); when another process grew the file past this process's map
    /// (MDB_MAP_RESIZED), adopts the new size and begins again.
    fn begin<'s, T>(&'s self, f: impl Fn(&'s Env) -> heed::Result<T>) -> Result<T, IndexError> {
        match f(self.env()) {
            Err(heed::Error::Mdb(heed::MdbError::MapResized)) => {
                // Other threads' transactions are short: wait for a moment without any.
                for _ in 0..1000 {
                    if self.resize_holding(0, 1)? {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Ok(f(self.env())?)
            }
            other => Ok(other?),
        }
    }

    /// Remaps the environment at `size` bytes (0: the size the file's writer recorded), when
    /// no transaction of this process is open (LMDB requires that); false when one is.
    fn resize(&self, size: usize) -> Result<bool, IndexError> {
        self.resize_holding(size, 0)
    }

    /// [`Index::resize`] by a caller that holds `held` [`fault::Active`]s without a
    /// transaction.
    fn resize_holding(&self, size: usize, held: usize) -> Result<bool, IndexError> {
        let Some(_excl) = fault::Exclusive::take(&self.opened.watched, held) else {
            return Ok(false);
        };
        // SAFETY: no transaction of this process is open, and none can begin until `_excl`
        // is dropped (fault::Exclusive).
        unsafe { self.env().resize(size)? };
        Ok(true)
    }

    /// Grows the map before a write when what is left of it could be too little for one
    /// transaction: the map is sized to the data, never a fixed address-space reservation.
    fn make_room(&self) -> Result<(), IndexError> {
        let info = self.env().info();
        let page = self.env().stat().page_size as u64;
        let used = (info.last_page_number as u64 + 1) * page;
        let left = (info.map_size as u64).saturating_sub(used);
        if left >= headroom(used) / 2 {
            return Ok(());
        }
        // Readers on other threads are short and never wait for this one: when little room
        // is left, wait for a moment without any (bounded: this thread may hold one itself).
        for _ in 0..1000 {
            if self.resize(map_size_for(used))? || left >= headroom(used) / 4 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    /// A write transaction that applies records after those the index holds.
    pub fn write(&self) -> Result<Writer<'_>, IndexError> {
        self.writer(false)
    }

    /// A write transaction over an emptied index, and the tables of earlier formats emptied
    /// too (a rebuild in place starts here): what the index held is not read, so an index
    /// in another format, whose `meta` may not read as this one's, is rebuilt too.
    pub fn rewrite(&self) -> Result<Writer<'_>, IndexError> {
        self.writer(true)
    }

    fn writer(&self, cleared: bool) -> Result<Writer<'_>, IndexError> {
        self.make_room()?;
        let active = fault::Active::new(&self.opened.watched);
        let txn = self.begin(|env| env.write_txn())?;
        let meta = if cleared {
            Meta::EMPTY
        } else {
            read_meta(&txn, &self.dbs)?
        };
        let mut w = Writer {
            txn,
            dbs: self.dbs,
            legacy: self.legacy.clone(),
            meta,
            counted: FxHashMap::default(),
            unsynced: &self.unsynced,
            _active: active,
        };
        if cleared {
            w.clear()?;
        } else {
            // The next id the log names is numbered from the count `meta` keeps; LMDB's own
            // count of the table (a number in the file) must agree, or the number would be
            // given twice.
            let nodes = w.dbs.nodes.len(&w.txn)?;
            if nodes != w.meta.counts.nodes {
                return Err(IndexError::Inconsistent(format!(
                    "its nodes table holds {nodes} entries where its meta counts {}",
                    w.meta.counts.nodes
                )));
            }
        }
        Ok(w)
    }

    /// Makes every committed write of the index durable and removes its `UNSYNCED` file
    /// (module [`unsynced`]): after a long write (a rebuild, a bulk add), so that a machine
    /// that stops later finds the index whole and does not rebuild it.
    pub fn sync(&self) -> Result<(), IndexError> {
        let path = &self.unsynced;
        if !path.exists() {
            return Ok(());
        }
        // An environment whose files another process moved aside (and rebuilt anew) syncs its
        // own, orphaned file: the new index's record is not this one's to remove.
        let here = path.parent().map(|dir| file_id(&dir.join("data.mdb")));
        if self.opened.data.is_none() || here != Some(self.opened.data) {
            return Ok(());
        }
        // Held so that no writer commits between the fsync and the removal.
        let txn = self.env().write_txn()?;
        self.env().force_sync()?;
        unsynced::clear(path)?;
        txn.abort();
        Ok(())
    }

    /// The earlier boot in which the index was written and not synced, if any: writes made
    /// then may be lost, and the index must be rebuilt.
    pub fn unsynced_from_other_boot(&self) -> Result<Option<String>, IndexError> {
        unsynced::from_other_boot(&self.unsynced)
    }

    /// Bytes the index occupies on disk.
    pub fn disk_size(&self) -> Result<u64, IndexError> {
        Ok(self.env().real_disk_size()?)
    }

    pub fn clear_stale_readers(&self) {
        let _ = self.env().clear_stale_readers();
    }
}

/// The index format recorded in `meta` (0 when none is: an index from before formats).
fn read_format(txn: &RoTxn, dbs: &Dbs) -> Result<u32, IndexError> {
    let Some(raw) = dbs.meta.0.get(txn, b"format")? else {
        return Ok(0);
    };
    match checked(dbs.meta.1, b"format", raw) {
        Ok(b) => decode(b, "format"),
        // Formats before 4 kept no checksums: the number alone; format 4's checksums left
        // out the table. Such an index is rebuilt for its format, not reported as damaged.
        Err(e) => match postcard::take_from_bytes::<u32>(raw) {
            Ok((old, [])) if old < 4 => Ok(old),
            Ok((4, check)) if check.len() == CHECK_LEN => {
                let value = &raw[..raw.len() - CHECK_LEN];
                let crc = crc32c::crc32c_append(crc32c::crc32c(b"format"), value);
                if crc.to_le_bytes() == check {
                    Ok(4)
                } else {
                    Err(e)
                }
            }
            _ => Err(e),
        },
    }
}

fn read_meta(txn: &RoTxn, dbs: &Dbs) -> Result<Meta, IndexError> {
    match dbs.meta.get(txn, b"meta")? {
        None => Ok(Meta::EMPTY),
        Some(b) => decode(b, "meta"),
    }
}

/// What `nodes` says of `id`, read in any transaction; None when the log never named it.
fn node_in(txn: &RoTxn, dbs: &Dbs, id: &IdKey) -> Result<Option<NodeValue>, IndexError> {
    dbs.nodes
        .get(txn, id)?
        .map(|v| node_value(id, v))
        .transpose()
}

/// What `nodes` says of an id that the index itself names (a stored claim's target or
/// premise, a record's claim): the log named it, so a lookup that misses is damage (a
/// damaged page sent it past the entry), never an id the log does not know.
fn named_node_in(txn: &RoTxn, dbs: &Dbs, id: &IdKey) -> Result<NodeValue, IndexError> {
    node_in(txn, dbs, id)?.ok_or_else(|| {
        IndexError::Inconsistent(format!(
            "the index names {} and its nodes table has no entry for it",
            id_text(id)
        ))
    })
}

/// The encoded entry of the claim `id`, whose `nodes` entry is `value`: there exactly when
/// `nodes` says the log holds the claim (a lookup that misses it is damage), and holding
/// that claim's id.
fn entry_at<'t>(
    txn: &'t RoTxn,
    dbs: &Dbs,
    id: &IdKey,
    value: NodeValue,
) -> Result<Option<(Node, &'t [u8])>, IndexError> {
    if !value.claimed {
        return Ok(None);
    }
    match dbs.claims.get(txn, &node_key(value.node))? {
        Some(b) if b.starts_with(id) => Ok(Some((value.node, b))),
        Some(_) => Err(IndexError::Inconsistent(format!(
            "the claims entry of node {} is not {}'s",
            value.node,
            id_text(id)
        ))),
        None => Err(IndexError::Inconsistent(format!(
            "its nodes table lists claim {} as node {} and its claims table has no entry \
             for it",
            id_text(id),
            value.node
        ))),
    }
}

/// The encoded entry of the claim `id` (none when `id` is no stored claim) in any transaction.
fn entry_bytes<'t>(
    txn: &'t RoTxn,
    dbs: &Dbs,
    id: &IdKey,
) -> Result<Option<(Node, &'t [u8])>, IndexError> {
    match node_in(txn, dbs, id)? {
        None => Ok(None),
        Some(value) => entry_at(txn, dbs, id, value),
    }
}

/// A claim's entry, read in any transaction (a reader's or the writer's).
fn claim_in(txn: &RoTxn, dbs: &Dbs, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
    match entry_bytes(txn, dbs, id)? {
        None => Ok(None),
        Some((_, b)) => decode(b, &format!("claims/{}", id_text(id))).map(Some),
    }
}

/// The trust state, read in any transaction: `expected` keys (the count `meta` keeps), or
/// the walk was sent past some of them, which is damage.
fn keys_in(txn: &RoTxn, dbs: &Dbs, expected: u64) -> Result<Vec<KeyEntry>, IndexError> {
    let mut out = Vec::new();
    for item in dbs.keys.iter(txn)? {
        let (_, v) = item?;
        out.push(decode(v, "keys")?);
    }
    found_all("keys", "the trust state", expected, out.len())?;
    Ok(out)
}

/// The count of the pairs naming the node `node`, in any transaction: every node the log
/// named has one, so a lookup that misses it is damage.
fn incoming_in(txn: &RoTxn, dbs: &Dbs, node: Node) -> Result<Incoming, IndexError> {
    match dbs.incoming.get(txn, &node_key(node))? {
        Some(v) => decode(v, "incoming"),
        None => Err(IndexError::Inconsistent(format!(
            "its incoming table has no entry for node {node}"
        ))),
    }
}

/// Checks that a read found the `expected` entries another entry counts: fewer (or more) is
/// damage, never an answer.
fn found_all(table: &str, of: &str, expected: u64, found: usize) -> Result<(), IndexError> {
    if found as u64 == expected {
        return Ok(());
    }
    Err(IndexError::Inconsistent(format!(
        "{table} holds {found} entries for {of} where the index counts {expected}"
    )))
}

/// A consistent view of the index (one LMDB read transaction).
pub struct Reader<'e> {
    txn: Txn<'e>,
    dbs: Dbs,
    _active: fault::Active<'e>,
}

/// A read transaction of the reader's own, or the one pinned for the thread ([`Index::pin`]).
enum Txn<'e> {
    Own(RoTxn<'e, WithTls>),
    Pinned(Rc<RoTxn<'static, WithTls>>),
}

impl<'e> std::ops::Deref for Txn<'e> {
    type Target = RoTxn<'e, WithTls>;
    fn deref(&self) -> &RoTxn<'e, WithTls> {
        match self {
            Txn::Own(t) => t,
            Txn::Pinned(t) => t,
        }
    }
}

thread_local! {
    /// The read transaction pinned on this thread, by the environment's folder.
    static PINNED: RefCell<Vec<(PathBuf, Rc<RoTxn<'static, WithTls>>)>> =
        const { RefCell::new(Vec::new()) };
}

/// While it lives, every read of its index on this thread is one transaction: a command's
/// answer is a snapshot of one state of the index ([`Index::pin`]).
pub struct Pin {
    dir: PathBuf,
    /// The pinned transaction's environment, released when the transaction ends.
    watched: Arc<fault::Watched>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        PINNED.with(|p| p.borrow_mut().retain(|(dir, _)| dir != &self.dir));
        self.watched.release();
    }
}

impl Reader<'_> {
    pub fn meta(&self) -> Result<Meta, IndexError> {
        read_meta(&self.txn, &self.dbs)
    }

    /// The layout version the index was written in (0: from before versions were recorded).
    pub fn format(&self) -> Result<u32, IndexError> {
        read_format(&self.txn, &self.dbs)
    }

    /// The chain value of the first record of the log the index was built from (None: an
    /// empty log, or an index written before this was recorded).
    pub fn origin(&self) -> Result<Option<Chain>, IndexError> {
        self.dbs
            .meta
            .get(&self.txn, ORIGIN_KEY)?
            .map(|b| decode(b, "meta/origin"))
            .transpose()
    }

    /// The trust events applied, in log order (None: an index written before they were
    /// recorded).
    pub fn trust_events(&self) -> Result<Option<Vec<TrustEventAt>>, IndexError> {
        self.dbs
            .meta
            .get(&self.txn, TRUST_EVENTS_KEY)?
            .map(|b| decode(b, "meta/trust_events"))
            .transpose()
    }

    pub fn claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        claim_in(&self.txn, &self.dbs, id)
    }

    /// The entry of a claim that the index itself names (a stored claim's target or
    /// premise, a record a pair names): None when the log names it and does not hold it; a
    /// lookup that does not find the id at all is damage.
    pub fn named_claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        let value = named_node_in(&self.txn, &self.dbs, id)?;
        match entry_at(&self.txn, &self.dbs, id, value)? {
            None => Ok(None),
            Some((_, b)) => decode(b, &format!("claims/{}", id_text(id))).map(Some),
        }
    }

    /// The node of `id`; None when the log never named it.
    pub fn node(&self, id: &IdKey) -> Result<Option<Node>, IndexError> {
        Ok(node_in(&self.txn, &self.dbs, id)?.map(|v| v.node))
    }

    /// The node of the stored claim `id`; None when no such claim is stored.
    pub fn claim_node(&self, id: &IdKey) -> Result<Option<Node>, IndexError> {
        Ok(entry_bytes(&self.txn, &self.dbs, id)?.map(|(node, _)| node))
    }

    /// A claim's id, kind and edges (see [`ClaimEdges`]), without decoding the whole entry.
    pub fn claim_edges(&self, id: &IdKey) -> Result<Option<ClaimEdges>, IndexError> {
        match entry_bytes(&self.txn, &self.dbs, id)? {
            None => Ok(None),
            Some((node, b)) => EdgesRef::decode(&node_key(node), b).map(|e| Some(e.to_owned())),
        }
    }

    /// The id and kind of the claim numbered `node`; None when that node is no stored claim
    /// (an id named only as a target or premise).
    pub fn node_claim(&self, node: Node) -> Result<Option<(IdKey, Kind)>, IndexError> {
        let key = node_key(node);
        match self.dbs.claims.get(&self.txn, &key)? {
            None => Ok(None),
            Some(b) => EdgesRef::decode(&key, b).map(|e| Some((*e.id, e.kind))),
        }
    }

    /// Visits the entries of `table` whose keys begin with one of the nodes `keys`, which
    /// must be sorted ascending without repeats, as `f(position in keys, entry key, entry
    /// value)`, in key order. One cursor moves forward through the table: a key near the last
    /// one is reached by stepping, a far one by a fresh seek after a few steps ([`Table`]),
    /// so the cost grows with `keys` and what they hold, never with the table. When the keys
    /// are sparse in the claims table, whose keys are whole nodes, each is looked up instead.
    pub fn walk_sorted<'t>(
        &'t self,
        table: Table,
        keys: &[Node],
        mut f: impl FnMut(usize, &[u8], &'t [u8]) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        let db = match table {
            Table::Claims => self.dbs.claims,
            Table::Targets => self.dbs.by_target,
            Table::Premises => self.dbs.by_premise,
            Table::Incoming => self.dbs.incoming,
        };
        let Some(&first) = keys.first() else {
            return Ok(());
        };
        // When the keys are sparse in the table (on average more entries between two of them
        // than steps allowed), stepping first would only add to every seek: seek at once.
        // Nodes are numbered densely, and each numbers at most one claim and few pairs, so the
        // span of the keys tells how far apart they lie, wherever they are in the table.
        let span = keys.last().map_or(0, |&last| last.saturating_sub(first)) + 1;
        let gap = span / keys.len() as u64;
        let max_steps = if gap > table.steps() as u64 {
            0
        } else {
            table.steps()
        };
        // A claim's key is its whole node, so there a seek is a lookup, which needs no cursor
        // of its own (a fresh cursor per seek was most of a sparse walk's cost).
        if max_steps == 0 && matches!(table, Table::Claims | Table::Incoming) {
            for (i, &n) in keys.iter().enumerate() {
                let k = node_key(n);
                if let Some(v) = db.get(&self.txn, &k)? {
                    f(i, &k, v)?;
                }
            }
            return Ok(());
        }
        let seek = |k: &[u8]| db.range(&self.txn, &(Bound::Included(k), Bound::Unbounded));
        let mut it = seek(&node_key(first))?;
        let mut cur = it.next().transpose()?;
        for (i, &n) in keys.iter().enumerate() {
            let k = node_key(n);
            let mut steps = 0;
            while let Some((ek, _)) = cur {
                if ek >= &k[..] {
                    break;
                }
                if steps == max_steps {
                    it = seek(&k)?;
                    cur = it.next().transpose()?;
                    break;
                }
                steps += 1;
                cur = it.next().transpose()?;
            }
            while let Some((ek, ev)) = cur {
                if !ek.starts_with(&k) {
                    break;
                }
                f(i, ek, ev)?;
                cur = it.next().transpose()?;
            }
            if cur.is_none() {
                // The table ends before the remaining keys.
                break;
            }
        }
        Ok(())
    }

    pub fn has_claim(&self, id: &IdKey) -> Result<bool, IndexError> {
        Ok(entry_bytes(&self.txn, &self.dbs, id)?.is_some())
    }

    /// Whether the claim `id` is stored with the envelope whose digest is `digest`.
    pub fn holds_envelope(&self, id: &IdKey, digest: &[u8; 32]) -> Result<bool, IndexError> {
        Ok(self
            .claim(id)?
            .is_some_and(|e| e.envelopes.iter().any(|x| &x.digest == digest)))
    }

    /// The envelope with this number, which the index says exists.
    fn numbered_envelope(&self, number: u64) -> Result<EnvelopeEntry, IndexError> {
        let v = self
            .dbs
            .envelope_order
            .get(&self.txn, &number.to_be_bytes())?
            .ok_or_else(|| IndexError::Decode {
                what: format!("envelope_order/{number}"),
                why: "missing, though an index entry names it".into(),
            })?;
        let e: OrderEntry = decode(v, "envelope_order")?;
        Ok(EnvelopeEntry {
            claim: e.claim,
            pos: e.pos,
            number,
        })
    }

    /// Second halves of the pair keys starting with the node `first`.
    fn paired_nodes(&self, db: Checked, first: Node) -> Result<Vec<Node>, IndexError> {
        pairs_in(&self.txn, db, first)
    }

    /// The ids of the claims paired with `first` in a pair table, sorted. The `incoming`
    /// table counts the pairs of every id the log names (`count`): a read that finds another
    /// number was sent past some of them by a damaged page, which is damage.
    fn pairs(
        &self,
        db: Checked,
        count: fn(&Incoming) -> u64,
        first: &IdKey,
    ) -> Result<Vec<IdKey>, IndexError> {
        let Some(node) = self.node(first)? else {
            return Ok(Vec::new());
        };
        let expected = count(&incoming_in(&self.txn, &self.dbs, node)?);
        let seconds = self.paired_nodes(db, node)?;
        found_all(
            pair_table(db, &self.dbs),
            &id_text(first),
            expected,
            seconds.len(),
        )?;
        let mut out = Vec::with_capacity(seconds.len());
        for second in seconds {
            // The second of a pair is always a stored claim (the record or the dependent).
            let (id, _) = self.node_claim(second)?.ok_or_else(|| {
                IndexError::Inconsistent(format!(
                    "a pair names node {second}, and its claims table has no entry for it"
                ))
            })?;
            out.push(id);
        }
        out.sort_unstable();
        Ok(out)
    }

    pub fn records_targeting(&self, id: &IdKey) -> Result<Vec<IdKey>, IndexError> {
        self.pairs(self.dbs.by_target, |i| i.records, id)
    }

    /// The nodes of the records targeting the stored claim numbered `node`, in node order,
    /// and its kind. The claim's entry must be there and its `incoming` entry count those
    /// records: the caller knows the node to be a stored claim (a member of a closure, a
    /// record), so anything else is damage.
    pub fn claim_records(&self, node: Node) -> Result<(Vec<Node>, Kind), IndexError> {
        let key = node_key(node);
        let entry = self.dbs.claims.get(&self.txn, &key)?.ok_or_else(|| {
            IndexError::Inconsistent(format!(
                "a pair names node {node}, and its claims table has no entry for it"
            ))
        })?;
        let edges = EdgesRef::decode(&key, entry)?;
        let expected = incoming_in(&self.txn, &self.dbs, node)?.records;
        let records = self.paired_nodes(self.dbs.by_target, node)?;
        found_all("by_target", &id_text(edges.id), expected, records.len())?;
        Ok((records, edges.kind))
    }

    pub fn dependents(&self, id: &IdKey) -> Result<Vec<IdKey>, IndexError> {
        self.pairs(self.dbs.by_premise, |i| i.dependents, id)
    }

    /// The envelopes of a claim, in log order.
    pub fn claim_envelopes(&self, id: &IdKey) -> Result<Vec<EnvelopeEntry>, IndexError> {
        let Some(entry) = self.claim(id)? else {
            return Ok(Vec::new());
        };
        entry
            .envelopes
            .iter()
            .map(|e| self.numbered_envelope(e.number))
            .collect()
    }

    /// Values of a database keyed by a big-endian number, from number `from` on, at most
    /// `limit`, each decoded by `value`.
    /// The numbers run from 0 to `total` - 1 without a gap: any other key, or fewer entries,
    /// is damage.
    #[allow(clippy::too_many_arguments)]
    fn numbered<T>(
        &self,
        db: Checked,
        what: &str,
        total: u64,
        from: u64,
        limit: usize,
        value: impl Fn(&[u8]) -> Result<T, IndexError>,
    ) -> Result<Vec<(u64, T)>, IndexError> {
        let gap = |n: u64| IndexError::Decode {
            what: format!("{what}/{n}"),
            why: "missing: the numbers have a gap".into(),
        };
        let mut out = Vec::new();
        let start = from.to_be_bytes();
        for item in db
            .range(&self.txn, &(Bound::Included(&start[..]), Bound::Unbounded))?
            .take(limit)
        {
            let (k, v) = item?;
            let n = u64::from_be_bytes(k.try_into().map_err(|_| IndexError::Decode {
                what: what.to_owned(),
                why: "key is not 8 bytes".into(),
            })?);
            let want = from + out.len() as u64;
            if n != want {
                return Err(gap(want));
            }
            out.push((n, value(v)?));
        }
        let want = total.saturating_sub(from).min(limit as u64);
        if (out.len() as u64) < want {
            return Err(gap(from + out.len() as u64));
        }
        Ok(out)
    }

    /// Claim ids in arrival order from arrival number `from`, at most `limit`.
    pub fn arrivals(&self, from: u64, limit: usize) -> Result<Vec<(u64, IdKey)>, IndexError> {
        let total = self.meta()?.counts.claims;
        self.numbered(self.dbs.arrivals, "arrivals", total, from, limit, |v| {
            v.try_into().map_err(|_| IndexError::Decode {
                what: "arrivals".into(),
                why: "value is not 32 bytes".into(),
            })
        })
    }

    /// Envelopes in log order from envelope number `from`, at most `limit`.
    pub fn envelope_order(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<Vec<EnvelopeEntry>, IndexError> {
        let total = self.meta()?.counts.envelopes;
        Ok(self
            .numbered(
                self.dbs.envelope_order,
                "envelope_order",
                total,
                from,
                limit,
                |v| decode::<OrderEntry>(v, "envelope_order"),
            )?
            .into_iter()
            .map(|(number, e)| EnvelopeEntry {
                claim: e.claim,
                pos: e.pos,
                number,
            })
            .collect())
    }

    /// Ids whose hex starts with `hex_prefix`, at most `limit`.
    pub fn ids_with_prefix(
        &self,
        hex_prefix: &str,
        limit: usize,
    ) -> Result<Vec<IdKey>, IndexError> {
        let even = hex_prefix.len() / 2 * 2;
        let Ok(bytes) = hex::decode(&hex_prefix[..even]) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for item in self.dbs.nodes.prefix_iter(&self.txn, &bytes)? {
            let (k, v) = item?;
            if !hex::encode(k).starts_with(hex_prefix) {
                continue;
            }
            let id: IdKey = k.try_into().map_err(|_| IndexError::Decode {
                what: "nodes entry".into(),
                why: "key is not 32 bytes".into(),
            })?;
            // Ids named only as targets or premises have a node and no claim.
            if node_value(&id, v)?.claimed {
                out.push(id);
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    pub fn keys(&self) -> Result<Vec<KeyEntry>, IndexError> {
        keys_in(&self.txn, &self.dbs, self.meta()?.counts.keys)
    }

    pub fn key(&self, keyid: &str) -> Result<Option<KeyEntry>, IndexError> {
        match self.dbs.keys.get(&self.txn, keyid.as_bytes())? {
            None => Ok(None),
            Some(v) => decode(v, "keys").map(Some),
        }
    }
}

/// Second halves of the pair keys of `db` starting with the node `first`, in any
/// transaction. A range, not a prefix walk: the entry after the last pair is read (and its
/// checksum checked) too, so a pair whose first half a flipped bit moved out of the prefix is
/// found damaged instead of silently missing.
fn pairs_in(txn: &RoTxn, db: Checked, first: Node) -> Result<Vec<Node>, IndexError> {
    let mut out = Vec::new();
    let prefix = node_key(first);
    for item in db.range(txn, &(Bound::Included(&prefix[..]), Bound::Unbounded))? {
        let (k, _) = item?;
        if !k.starts_with(&prefix) {
            break;
        }
        out.push(second_node(k)?);
    }
    Ok(out)
}

/// The name of a pair table, for messages.
fn pair_table(db: Checked, dbs: &Dbs) -> &'static str {
    if db.1 == dbs.by_target.1 {
        "by_target"
    } else {
        "by_premise"
    }
}

/// The second node of a pair key (first node ‖ second node).
pub fn second_node(pair: &[u8]) -> Result<Node, IndexError> {
    Some(pair)
        .filter(|p| p.len() == 16)
        .and_then(|p| node_of_key(&p[8..]))
        .ok_or_else(|| IndexError::Decode {
            what: "pair key".into(),
            why: format!("{} bytes", pair.len()),
        })
}

/// One write transaction over the index, applying log records in order.
pub struct Writer<'e> {
    txn: RwTxn<'e>,
    /// Pairs counted in this transaction and not yet in `incoming`, by node (written at
    /// commit, [`Writer::write_counts`]).
    counted: FxHashMap<Node, Incoming>,
    dbs: Dbs,
    legacy: Vec<Checked>,
    meta: Meta,
    unsynced: &'e Path,
    _active: fault::Active<'e>,
}

/// Where a log's records go, in log order: an index being written ([`Writer`]), or the live
/// index being checked against the log ([`Audit`]). Both work out each record's entries
/// with the same functions ([`ClaimEntry::first`], [`ClaimEntry::add_envelope`],
/// [`KeyEntry::added`], [`KeyEntry::retire`], [`Meta::advance`]).
pub trait Apply {
    /// Applies an accepted envelope record; a repeated envelope is
    /// [`IndexError::DuplicateEnvelope`].
    #[allow(clippy::too_many_arguments)]
    fn apply_envelope(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        digest: &[u8; 32],
        accepted: &Accepted,
    ) -> Result<(), IndexError>;
    fn apply_key_add(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        key: &super::record::KeyAdd,
    ) -> Result<(), IndexError>;
    fn apply_key_retire(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        keyid: &str,
    ) -> Result<(), IndexError>;
    /// The trust state after the records applied so far.
    fn keys(&self) -> Result<Vec<KeyEntry>, IndexError>;
}

impl Writer<'_> {
    pub fn meta(&self) -> Meta {
        self.meta
    }

    pub fn claim(&self, id: &IdKey) -> Result<Option<ClaimEntry>, IndexError> {
        claim_in(&self.txn, &self.dbs, id)
    }

    /// Empties every database, and those of earlier formats (a rebuild starts here).
    pub fn clear(&mut self) -> Result<(), IndexError> {
        for db in [
            self.dbs.meta,
            self.dbs.nodes,
            self.dbs.claims,
            self.dbs.envelope_order,
            self.dbs.arrivals,
            self.dbs.by_target,
            self.dbs.by_premise,
            self.dbs.keys,
            self.dbs.incoming,
        ]
        .iter()
        .chain(&self.legacy)
        {
            db.clear(&mut self.txn)?;
        }
        self.meta = Meta::EMPTY;
        self.counted.clear();
        Ok(())
    }

    /// What `nodes` says of `id`, numbering it now if the log never named it before (then
    /// `true`, and `claimed` says whether it is the id of the claim being added).
    fn node_of(&mut self, id: &IdKey, claimed: bool) -> Result<(NodeValue, bool), IndexError> {
        let fresh = NodeValue {
            node: self.meta.counts.nodes,
            claimed,
        };
        match self
            .dbs
            .nodes
            .get_or_put(&mut self.txn, id, &fresh.encode())?
        {
            Some(v) => Ok((node_value(id, &v)?, false)),
            None => {
                self.meta.number_node();
                // Nothing names it yet; nodes only grow, so the entry goes at the end.
                self.dbs.incoming.put_with_flags(
                    &mut self.txn,
                    PutFlags::APPEND,
                    &node_key(fresh.node),
                    &encode(&Incoming::default()),
                )?;
                Ok((fresh, true))
            }
        }
    }

    /// Pairs `first`, a target or premise of the claim numbered `second`, with it in `db`,
    /// and counts the pair for `first`'s `incoming` entry (`count`), which the commit
    /// writes.
    fn add_pair(
        &mut self,
        db: Checked,
        first: &IdKey,
        second: Node,
        count: fn(&mut Incoming),
    ) -> Result<(), IndexError> {
        let (value, _) = self.node_of(first, false)?;
        let key = node_key(value.node);
        db.put(&mut self.txn, &pair(&key, &node_key(second)), &[])?;
        count(self.counted.entry(value.node).or_default());
        Ok(())
    }

    /// Adds the pairs counted in this transaction to the `incoming` entries, in node order:
    /// one update per node however many pairs named it, and one pass through the table.
    fn write_counts(&mut self) -> Result<(), IndexError> {
        let mut counted: Vec<(Node, Incoming)> = self.counted.drain().collect();
        counted.sort_unstable_by_key(|&(node, _)| node);
        for (node, more) in counted {
            let mut incoming = incoming_in(&self.txn, &self.dbs, node)?;
            incoming.add(more);
            self.dbs
                .incoming
                .put(&mut self.txn, &node_key(node), &encode(&incoming))?;
        }
        Ok(())
    }

    /// Records what says which log this is: the first record's chain value, and where each
    /// trust event sits.
    fn note_record(
        &mut self,
        pos: Position,
        chain: Chain,
        trust_event: bool,
    ) -> Result<(), IndexError> {
        // Envelopes after the first record write nothing here: a bulk add pays no lookup.
        if pos.n != 0 && !trust_event {
            return Ok(());
        }
        if pos.n == 0 {
            self.dbs
                .meta
                .put(&mut self.txn, ORIGIN_KEY, &encode(&chain))?;
        }
        let mut events: Vec<TrustEventAt> = match self.dbs.meta.get(&self.txn, TRUST_EVENTS_KEY)? {
            Some(b) if pos.n != 0 => decode(b, "meta/trust_events")?,
            _ => Vec::new(),
        };
        if trust_event {
            events.push((pos, chain));
        }
        self.dbs
            .meta
            .put(&mut self.txn, TRUST_EVENTS_KEY, &encode(&events))?;
        Ok(())
    }

    /// Writes the meta entry and commits.
    pub fn commit(mut self) -> Result<Meta, IndexError> {
        self.write_counts()?;
        let meta = self.meta;
        self.dbs.meta.put(&mut self.txn, b"meta", &encode(&meta))?;
        self.dbs
            .meta
            .put(&mut self.txn, b"format", &encode(&FORMAT))?;
        unsynced::mark(self.unsynced)?;
        self.txn.commit()?;
        Ok(meta)
    }
}

impl Apply for Writer<'_> {
    fn apply_envelope(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        digest: &[u8; 32],
        accepted: &Accepted,
    ) -> Result<(), IndexError> {
        let (id, envelope) = self.meta.next_envelope(&accepted.claim, digest)?;
        let number = envelope.number;
        // Numbers only grow: append mode fills pages instead of splitting them.
        self.dbs.envelope_order.put_with_flags(
            &mut self.txn,
            PutFlags::APPEND,
            &number.to_be_bytes(),
            &encode(&OrderEntry { claim: id, pos }),
        )?;
        self.meta.counts.envelopes += 1;
        let (value, numbered_now) = self.node_of(&id, true)?;
        let key = node_key(value.node);
        if value.claimed && !numbered_now {
            // A later envelope of a stored claim: its signers join the claim's.
            let mut stored: ClaimEntry = match entry_at(&self.txn, &self.dbs, &id, value)? {
                Some((_, b)) => decode(b, &format!("claims/{}", id_text(&id)))?,
                None => return Err(IndexError::Inconsistent("a claim vanished".into())),
            };
            stored.add_envelope(&id, envelope, &accepted.signers)?;
            self.dbs.claims.put(&mut self.txn, &key, &encode(&stored))?;
        } else {
            // A claim the log named before it arrived is a stored one now.
            if !numbered_now {
                let claimed = NodeValue {
                    claimed: true,
                    ..value
                };
                self.dbs.nodes.put(&mut self.txn, &id, &claimed.encode())?;
            }
            let entry = ClaimEntry::first(id, accepted, pos, self.meta.counts.claims, envelope);
            // A claim the log never named before has the largest node: its entry goes at the
            // end.
            let flags = if numbered_now {
                PutFlags::APPEND
            } else {
                PutFlags::empty()
            };
            self.dbs
                .claims
                .put_with_flags(&mut self.txn, flags, &key, &encode(&entry))?;
            self.dbs.arrivals.put_with_flags(
                &mut self.txn,
                PutFlags::APPEND,
                &entry.seq.to_be_bytes(),
                &id,
            )?;
            for t in distinct(&entry.target) {
                self.add_pair(self.dbs.by_target, &t, value.node, Incoming::count_record)?;
            }
            for p in distinct(&entry.depends_on) {
                self.add_pair(
                    self.dbs.by_premise,
                    &p,
                    value.node,
                    Incoming::count_dependent,
                )?;
            }
            self.meta.counts.claims += 1;
        }
        self.meta.advance(pos, chain, frame_len);
        self.note_record(pos, chain, false)
    }

    fn apply_key_add(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        key: &super::record::KeyAdd,
    ) -> Result<(), IndexError> {
        let entry = KeyEntry::added(pos, key)?;
        if self
            .dbs
            .keys
            .get(&self.txn, key.keyid.as_bytes())?
            .is_none()
        {
            self.dbs
                .keys
                .put(&mut self.txn, key.keyid.as_bytes(), &encode(&entry))?;
            self.meta.count_key();
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true)
    }

    fn apply_key_retire(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        keyid: &str,
    ) -> Result<(), IndexError> {
        if let Some(v) = self.dbs.keys.get(&self.txn, keyid.as_bytes())? {
            let mut entry: KeyEntry = decode(v, "keys")?;
            if entry.retire(pos) {
                self.dbs
                    .keys
                    .put(&mut self.txn, keyid.as_bytes(), &encode(&entry))?;
            }
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true)
    }

    fn keys(&self) -> Result<Vec<KeyEntry>, IndexError> {
        keys_in(&self.txn, &self.dbs, self.meta.counts.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(n: u16) -> IdKey {
        let mut k = [0u8; 32];
        k[..2].copy_from_slice(&n.to_be_bytes());
        k[31] = 7;
        k
    }

    #[test]
    fn the_map_grows_before_a_write_that_could_fill_it_and_a_flipped_value_is_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let index = Index::open(&Environments::new(), &dir).unwrap();
        // As if opened by a process that mapped the file when it was small.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !index.resize(1 << 20).unwrap() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(index.env().info().map_size, 1 << 20);
        let value = vec![0x5a; 2000];
        for round in 0..4u64 {
            let mut w = index.write().unwrap();
            for n in 0..1000u64 {
                let k = (round * 1000 + n).to_be_bytes();
                w.dbs.envelope_order.put(&mut w.txn, &k, &value).unwrap();
            }
            w.commit().unwrap();
        }
        let info = index.env().info();
        assert!(info.map_size >= map_size_for(8 << 20), "{}", info.map_size);
        let r = index.read().unwrap();
        let stored = r
            .dbs
            .envelope_order
            .get(&r.txn, &7u64.to_be_bytes())
            .unwrap();
        assert_eq!(stored, Some(&value[..]));
        drop(r);
        // A value written without its checksum (a flipped byte reads the same) is damage.
        let mut w = index.write().unwrap();
        w.dbs
            .envelope_order
            .0
            .put(&mut w.txn, &7u64.to_be_bytes(), &value)
            .unwrap();
        w.commit().unwrap();
        let r = index.read().unwrap();
        let err = r
            .dbs
            .envelope_order
            .get(&r.txn, &7u64.to_be_bytes())
            .unwrap_err();
        assert!(err.is_damage(), "{err}");
        assert!(!err.is_resource());
        drop(r);
    }

    #[test]
    fn a_commit_marks_the_index_and_only_its_own_files_sync_clears_it() {
        if unsynced::boot_id().is_none() {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let index = Index::open(&Environments::new(), &dir).unwrap();
        let marker = dir.join(unsynced::FILE);
        index.write().unwrap().commit().unwrap();
        assert!(marker.exists());
        index.sync().unwrap();
        assert!(!marker.exists());
        index.write().unwrap().commit().unwrap();
        assert!(marker.exists());
        // Another process moves these files aside and builds a new index in their place,
        // with writes of its own not yet on disk: this environment's sync is of its own,
        // orphaned file, and must leave the new index's record alone.
        std::fs::rename(&dir, tmp.path().join("aside")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("data.mdb"), b"another file").unwrap();
        std::fs::write(&marker, unsynced::boot_id().unwrap()).unwrap();
        index.sync().unwrap();
        assert!(marker.exists());
    }

    /// A full cursor stack (a tree that points back up itself), a key the counts say is new
    /// and a contradiction are damage; a full map or reader table is a lack of resources.
    #[test]
    fn damage_and_a_lack_of_resources_are_told_apart() {
        use heed::MdbError as M;
        let lmdb = |e: M| IndexError::Lmdb(heed::Error::Mdb(e));
        for e in [
            lmdb(M::CursorFull),
            lmdb(M::KeyExist),
            lmdb(M::Corrupted),
            IndexError::Inconsistent("x".into()),
            IndexError::File("x".into()),
        ] {
            assert!(e.is_damage() && !e.is_resource(), "{e}");
            let s = crate::store::StoreError::from(e);
            assert!(
                matches!(s, crate::store::StoreError::IndexDamaged(_)),
                "{s}"
            );
        }
        for e in [lmdb(M::MapFull), lmdb(M::ReadersFull), lmdb(M::MapResized)] {
            assert!(e.is_resource() && !e.is_damage(), "{e}");
            let s = crate::store::StoreError::from(e);
            assert!(
                matches!(s, crate::store::StoreError::IndexUnavailable(_)),
                "{s}"
            );
        }
    }

    /// The borrowed decoding of an entry's leading fields agrees with decoding all of it.
    #[test]
    fn edges_decode_from_the_entry_prefix() {
        let entry = |target: Vec<IdKey>, depends_on: Vec<IdKey>| ClaimEntry {
            id: key(77),
            kind: Kind::Falsification,
            origin: OriginKind::AgentAsserted,
            producer: "p/1".repeat(50),
            target,
            depends_on,
            anchor_tree: "t".into(),
            timestamp: -3,
            seq: 300,
            signers: Vec::new(),
            first: Position {
                n: 1,
                segment: 2,
                offset: 3,
            },
            summary: "{}".into(),
            envelopes: vec![EnvelopeRef {
                number: 1,
                digest: [9; 32],
            }],
        };
        for (t, d) in [
            (vec![], vec![]),
            (vec![key(1)], vec![]),
            (vec![], vec![key(2), key(3)]),
            ((0..200).map(key).collect(), (0..130).map(key).collect()),
        ] {
            let e = entry(t, d);
            let bytes = encode(&e);
            let got = EdgesRef::decode(&node_key(4), &bytes).unwrap().to_owned();
            assert_eq!(
                got,
                ClaimEdges {
                    id: e.id,
                    kind: e.kind,
                    target: e.target.clone(),
                    depends_on: e.depends_on.clone(),
                }
            );
            // A cut entry is an error, never a panic.
            for cut in 0..bytes.len().min(80) {
                let _ = EdgesRef::decode(&node_key(4), &bytes[..cut]);
            }
            assert!(EdgesRef::decode(&node_key(4), &bytes[..3]).is_err());
            assert!(EdgesRef::decode(&node_key(4), &bytes[..35]).is_err());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        /// A sorted walk finds exactly what one prefix lookup per key finds, whether the keys
        /// are dense (stepping) or far apart (seeking), present or not, at the table's ends.
        #[test]
        fn walk_sorted_equals_a_lookup_per_key(
            pairs in prop::collection::btree_set((0u16..400, 0u16..4), 0..300),
            wanted in prop::collection::btree_set(0u16..420, 0..120),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let index = Index::open(&Environments::new(), tmp.path()).unwrap();
            {
                let mut w = index.write().unwrap();
                for (a, b) in &pairs {
                    let k = pair(&node_key(*a as Node), &node_key(*b as Node));
                    w.dbs.by_premise.put(&mut w.txn, &k, &[]).unwrap();
                }
                w.commit().unwrap();
            }
            let r = index.read().unwrap();
            let keys: Vec<Node> = wanted.iter().map(|&n| n as Node).collect();
            let mut walked: Vec<(usize, Node)> = Vec::new();
            r.walk_sorted(Table::Premises, &keys, |i, k, v| {
                assert!(v.is_empty());
                walked.push((i, second_node(k).unwrap()));
                Ok(())
            })
            .unwrap();
            let mut looked_up = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                for d in r.paired_nodes(r.dbs.by_premise, k).unwrap() {
                    looked_up.push((i, d));
                }
            }
            prop_assert_eq!(walked, looked_up);
            drop(r);
            drop(index);
        }

        /// The same for the claims and incoming tables, whose keys are whole nodes: a walk of
        /// few keys looks each one up, a walk of many steps through the table; both find what
        /// `get` finds.
        #[test]
        fn a_walk_of_claims_equals_a_lookup_per_key(
            stored in prop::collection::btree_set(0u16..400, 0..300),
            wanted in prop::collection::btree_set(0u16..420, 0..120),
            incoming in any::<bool>(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let index = Index::open(&Environments::new(), tmp.path()).unwrap();
            let (table, db) = if incoming {
                (Table::Incoming, index.dbs.incoming)
            } else {
                (Table::Claims, index.dbs.claims)
            };
            {
                let mut w = index.write().unwrap();
                for n in &stored {
                    db.put(&mut w.txn, &node_key(*n as Node), &n.to_be_bytes()).unwrap();
                }
                w.commit().unwrap();
            }
            let r = index.read().unwrap();
            let keys: Vec<Node> = wanted.iter().map(|&n| n as Node).collect();
            let mut walked: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
            r.walk_sorted(table, &keys, |i, k, v| {
                walked.push((i, k.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            let mut looked_up = Vec::new();
            for (i, &k) in keys.iter().enumerate() {
                if let Some(v) = db.get(&r.txn, &node_key(k)).unwrap() {
                    looked_up.push((i, node_key(k).to_vec(), v.to_vec()));
                }
            }
            prop_assert_eq!(walked, looked_up);
            drop(r);
            drop(index);
        }
    }
}

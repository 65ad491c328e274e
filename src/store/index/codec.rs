//! How the index's entries are keyed and encoded: ids and nodes, the claim, incoming,
//! key and meta entries, the claim summary, and the checksum that ends every value
//! ([`Checked`]).

use super::{IndexError, DB_NAMES};
use crate::claim::{Kind, OriginKind, Summary};
use crate::ingest::{Accepted, Read, Signer};
use crate::keys::Role;
use crate::store::log::{Chain, Head, Position};
use heed::types::Bytes;
use heed::{Database, PutFlags, RoTxn, RwTxn};
use serde::{Deserialize, Serialize};
use std::ops::Bound;

pub type IdKey = [u8; 32];

/// The index's own layout version. An index written in another one (or before versions were
/// recorded) is rebuilt from the log on open, like a damaged one: the log is unchanged.
pub const FORMAT: u32 = 9;

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
pub(super) fn node_of_key(key: &[u8]) -> Option<Node> {
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
pub(super) fn node_value(id: &IdKey, value: &[u8]) -> Result<NodeValue, IndexError> {
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

/// The text of an id: its prefix, then its bytes in lowercase hex
/// (`claim::id::id_of_digest`: one string of the right size: a walk turns many ids
/// into text, and the general hex encoding, a char at a time, took a tenth of a short
/// command's work).
pub fn id_text(key: &[u8]) -> String {
    crate::claim::id::id_of_digest(key)
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

/// What a walk up a claim's premises reads of each claim it passes: its id, its kind, and
/// the nodes of its distinct premises in the order its `dependsOn` names them (a premise the
/// log does not hold keeps its node here and has no entry of its own). The `ancestry`
/// table holds one for every stored claim, written with its first envelope and never
/// changed: a claim's premises are fixed by its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AncestryEntry {
    pub id: IdKey,
    pub kind: Kind,
    pub premises: Vec<Node>,
}

impl AncestryEntry {
    /// An `ancestry` value, as stored under `node`.
    pub fn decode(node: Node, value: &[u8]) -> Result<AncestryEntry, IndexError> {
        decode(value, &format!("ancestry/{node}"))
    }

    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }
}

/// The distinct ids of a claim's `target` or `dependsOn`, each at its first mention: each
/// gives the claim one pair, and the claim it names one more [`Incoming`] count. The writer
/// and the audit both decide a record's pairs (and number their ids) with it; a gate its
/// claims' distinct premises, by slot.
pub fn distinct<T: Copy + Eq + std::hash::Hash>(ids: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(ids.len());
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
        let claim = &accepted.claim;
        ClaimEntry {
            id,
            kind: claim.kind,
            origin: claim.origin,
            producer: claim.producer.clone(),
            target: id_keys(&claim.target),
            depends_on: id_keys(&claim.depends_on),
            anchor_tree: claim.anchor_tree.clone(),
            timestamp: claim.timestamp,
            seq,
            signers: first_signers(&accepted.signers).cloned().collect(),
            first: pos,
            summary: first_summary(&accepted.text).into_owned(),
            envelopes: vec![envelope],
        }
    }

    /// The bytes of [`ClaimEntry::first`] encoded, appended to `out`, without copying the
    /// claim's strings into an entry first (the audit compares them with every claim's live
    /// entry): `target` and `depends_on` are the claim's as [`id_keys`] gives them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn encode_first(
        id: &IdKey,
        accepted: &Accepted,
        pos: Position,
        seq: u64,
        envelope: &EnvelopeRef,
        target: &[IdKey],
        depends_on: &[IdKey],
        out: Vec<u8>,
    ) -> Vec<u8> {
        let claim = &accepted.claim;
        let first = FirstEntry {
            id,
            kind: claim.kind,
            origin: claim.origin,
            producer: &claim.producer,
            target,
            depends_on,
            anchor_tree: &claim.anchor_tree,
            timestamp: claim.timestamp,
            seq,
            signers: first_signers(&accepted.signers).collect(),
            first: pos,
            summary: &first_summary(&accepted.text),
            envelopes: std::slice::from_ref(envelope),
        };
        postcard::to_extend(&first, out).unwrap_or_default()
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
        summary_body(&self.summary, &self.anchor_tree)
    }
}

/// The claim ids of `ids` as index keys, in order (an id that is not a claim id has none).
pub(super) fn id_keys(ids: &[String]) -> Vec<IdKey> {
    ids.iter().filter_map(|t| id_key(t)).collect()
}

/// A claim's signers as its first entry holds them: sorted by keyid, the first of each
/// keyid kept.
fn first_signers(signers: &[Signer]) -> impl Iterator<Item = &Signer> {
    let mut sorted: Vec<&Signer> = signers.iter().collect();
    sorted.sort_by(|a, b| a.keyid.cmp(&b.keyid));
    sorted.dedup_by(|a, b| a.keyid == b.keyid);
    sorted.into_iter()
}

/// The summary an entry keeps of a claim read for the store.
fn first_summary(text: &Read) -> std::borrow::Cow<'_, str> {
    match text {
        Read::Summary(summary) => summary.as_str().into(),
        Read::Whole(body) => summary_of(body.as_value()).into(),
    }
}

/// [`ClaimEntry`] with its strings and lists borrowed: encoded the same (postcard writes a
/// `&str` as a `String` and a slice as a `Vec`), so [`ClaimEntry::encode_first`] needs no
/// owned entry.
#[derive(Serialize)]
struct FirstEntry<'a> {
    id: &'a IdKey,
    kind: Kind,
    origin: OriginKind,
    producer: &'a str,
    target: &'a [IdKey],
    depends_on: &'a [IdKey],
    anchor_tree: &'a str,
    timestamp: i64,
    seq: u64,
    signers: Vec<&'a Signer>,
    first: Position,
    summary: &'a str,
    envelopes: &'a [EnvelopeRef],
}

/// The summary text `summary` of a claim made at `anchor_tree`, as the claim body it
/// abbreviates (see [`ClaimEntry::summary_body`]).
pub fn summary_body(summary: &str, anchor_tree: &str) -> Result<Summary, serde_json::Error> {
    let mut body: serde_json::Value = serde_json::from_str(summary)?;
    if let Some(anchor) = body.get_mut("anchor").and_then(|a| a.as_object_mut()) {
        anchor.insert("tree".into(), anchor_tree.into());
    }
    Ok(Summary::new(body))
}

/// A claim's entry read in place: the index's own bytes, borrowed from the read transaction,
/// its fields decoded where they lie (strings and id lists are slices of the entry) rather
/// than copied into a [`ClaimEntry`]. Every field is checked as [`ClaimEntry`]'s decoding
/// checks it. The signers stay the entry's bytes for them ([`ClaimRef::signers`]): a walk
/// over many claims decodes each distinct list once. [`ClaimRef::owned`] is the whole entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimRef<'t> {
    pub id: &'t IdKey,
    pub kind: Kind,
    pub origin: OriginKind,
    pub producer: &'t str,
    target: &'t [u8],
    depends_on: &'t [u8],
    pub anchor_tree: &'t str,
    pub timestamp: i64,
    pub seq: u64,
    /// The entry's bytes for its signers (a `Vec<Signer>` as the entry encodes it).
    pub signers: &'t [u8],
    pub summary: &'t str,
    /// The whole entry.
    raw: &'t [u8],
}

impl<'t> ClaimRef<'t> {
    /// Reads the entry stored under node `node`.
    pub fn decode(node: Node, entry: &'t [u8]) -> Result<ClaimRef<'t>, IndexError> {
        let bad = |why: String| IndexError::Decode {
            what: format!("claims/{node}"),
            why,
        };
        let (id, rest) = take_ids(1, entry).map_err(&bad)?;
        let id = <&IdKey>::try_from(id).map_err(|_| bad("no id".into()))?;
        let ((kind, origin, producer), rest) =
            postcard::take_from_bytes::<(Kind, OriginKind, &str)>(rest)
                .map_err(|e| bad(e.to_string()))?;
        let (target, rest) = take_counted_ids(rest).map_err(&bad)?;
        let (depends_on, rest) = take_counted_ids(rest).map_err(&bad)?;
        let ((anchor_tree, timestamp, seq), rest) =
            postcard::take_from_bytes::<(&str, i64, u64)>(rest).map_err(|e| bad(e.to_string()))?;
        // Each signer checked as a `Signer` is, its strings borrowed.
        let (_, after) = postcard::take_from_bytes::<Vec<(&str, Role, &str)>>(rest)
            .map_err(|e| bad(e.to_string()))?;
        let signers = &rest[..rest.len() - after.len()];
        let ((_first, summary, _envelopes), _) =
            postcard::take_from_bytes::<(Position, &str, Vec<EnvelopeRef>)>(after)
                .map_err(|e| bad(e.to_string()))?;
        Ok(ClaimRef {
            id,
            kind,
            origin,
            producer,
            target,
            depends_on,
            anchor_tree,
            timestamp,
            seq,
            signers,
            summary,
            raw: entry,
        })
    }

    /// The ids the claim targets, as stored (repeats kept).
    pub fn target(&self) -> impl Iterator<Item = &'t IdKey> {
        ids_of(self.target)
    }

    /// The ids the claim depends on, as stored (repeats kept).
    pub fn depends_on(&self) -> impl Iterator<Item = &'t IdKey> {
        ids_of(self.depends_on)
    }

    /// The signers whose bytes are `bytes` (a [`ClaimRef::signers`]).
    pub fn decode_signers(bytes: &[u8]) -> Result<Vec<Signer>, IndexError> {
        decode(bytes, "claims/signers")
    }

    /// The whole entry, owned.
    pub fn owned(&self) -> Result<ClaimEntry, IndexError> {
        decode(self.raw, "claims")
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

pub(super) fn ids_of(bytes: &[u8]) -> impl Iterator<Item = &IdKey> {
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
pub(super) fn take_counted_ids(bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let (count, rest) = postcard::take_from_bytes::<usize>(bytes).map_err(|e| e.to_string())?;
    take_ids(count, rest)
}

/// `count` ids (32 bytes each) at the start of `bytes`, and what follows.
pub(super) fn take_ids(count: usize, bytes: &[u8]) -> Result<(&[u8], &[u8]), String> {
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
    /// Each stored claim's id, kind and premises by node ([`AncestryEntry`]), by node.
    Ancestry,
}

impl Table {
    /// How many entries [`Reader::walk_sorted`] steps over before it seeks instead. A seek
    /// descends from the B-tree's root (whose pages stay in cache) and searches a leaf; a
    /// step reads the next entry. Pair keys are small, so a page holds many and stepping
    /// over them is cheap; claim entries are a few hundred bytes each, so every step over
    /// one touches new memory, and a seek pays off sooner.
    pub(super) fn steps(self) -> usize {
        match self {
            Table::Claims => 4,
            Table::Targets | Table::Premises | Table::Incoming | Table::Ancestry => 16,
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
    pub fn added(
        pos: Position,
        key: &crate::store::record::KeyAdd,
    ) -> Result<KeyEntry, IndexError> {
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

    /// A later `key-add` of a key already held: a key still trusted takes the role and name
    /// it names from here on (a team's policy moved it to another role); a retired key stays
    /// retired. Whether anything changed.
    pub fn regrant(&mut self, key: &crate::store::record::KeyAdd) -> bool {
        if self.retired_at.is_some() || (self.role == key.role && self.name == key.name) {
            return false;
        }
        self.role = key.role;
        self.name = key.name.clone();
        true
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
pub(super) type Db = Database<Bytes, Bytes>;

/// Bytes of the checksum that ends every value ([`Checked`]).
pub(super) const CHECK_LEN: usize = 4;

/// The checksum of an entry: CRC32C of its table's number, its key and its value. LMDB keeps
/// no checksums, and a flipped bit in a page would otherwise be read as another value (a
/// signer, a status) or another key (an edge), and a flipped page number could send one
/// table's search into another table's pages (the target and premise pairs look alike): an
/// entry whose checksum fails is damage, and the index is rebuilt.
pub(super) fn check_of(table: u8, key: &[u8], value: &[u8]) -> [u8; CHECK_LEN] {
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

pub(super) fn with_check(table: u8, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + CHECK_LEN);
    v.extend_from_slice(value);
    v.extend_from_slice(&check_of(table, key, value));
    v
}

/// The value of an entry of `table` without its checksum; an error when the checksum fails.
pub(super) fn checked<'t>(table: u8, key: &[u8], stored: &'t [u8]) -> Result<&'t [u8], IndexError> {
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

pub(super) fn damaged(key: &[u8], why: &str) -> IndexError {
    IndexError::Decode {
        what: format!("entry {}", hex::encode(&key[..key.len().min(40)])),
        why: why.to_owned(),
    }
}

pub(super) type Entry<'t> = (&'t [u8], &'t [u8]);

/// A walk's entry of `table`, checked.
pub(super) fn checked_item(
    table: u8,
    item: heed::Result<Entry<'_>>,
) -> Result<Entry<'_>, IndexError> {
    let (k, v) = item?;
    Ok((k, checked(table, k, v)?))
}

/// A table whose every value ends in the checksum of its entry ([`check_of`]): written and
/// checked here, so no reader sees a value that was not written. The number is the table's
/// place in `DB_NAMES`, which its checksums cover.
#[derive(Clone, Copy)]
pub(crate) struct Checked(pub(super) Db, pub(super) u8);

impl Checked {
    pub(super) fn get<'t>(
        &self,
        txn: &'t RoTxn,
        key: &[u8],
    ) -> Result<Option<&'t [u8]>, IndexError> {
        match self.0.get(txn, key)? {
            None => Ok(None),
            Some(v) => checked(self.1, key, v).map(Some),
        }
    }

    pub(super) fn put(&self, txn: &mut RwTxn, key: &[u8], value: &[u8]) -> Result<(), IndexError> {
        Ok(self.0.put(txn, key, &with_check(self.1, key, value))?)
    }

    pub(super) fn put_with_flags(
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
    pub(super) fn get_or_put(
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
    pub(super) fn delete(&self, txn: &mut RwTxn, key: &[u8]) -> Result<bool, IndexError> {
        Ok(self.0.delete(txn, key)?)
    }

    pub(super) fn iter<'t>(
        &self,
        txn: &'t RoTxn,
    ) -> Result<impl Iterator<Item = Result<Entry<'t>, IndexError>>, IndexError> {
        let table = self.1;
        Ok(self.0.iter(txn)?.map(move |i| checked_item(table, i)))
    }

    /// The table's keys in order, values unchecked: for walks that only count entries or
    /// name the ones that do not belong, where every entry that belongs has its value
    /// checked by a lookup anyway (a checksum per value read there cost `fsck` a pass over
    /// every byte of the claims table).
    pub(super) fn keys<'t>(
        &self,
        txn: &'t RoTxn,
    ) -> Result<impl Iterator<Item = Result<&'t [u8], IndexError>>, IndexError> {
        Ok(self.0.iter(txn)?.map(|i| Ok(i?.0)))
    }

    pub(super) fn range<'t>(
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

    pub(super) fn prefix_iter<'t>(
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

    pub(super) fn len(&self, txn: &RoTxn) -> Result<u64, IndexError> {
        Ok(self.0.len(txn)?)
    }

    pub(super) fn clear(&self, txn: &mut RwTxn) -> Result<(), IndexError> {
        Ok(self.0.clear(txn)?)
    }
}

pub(super) fn decode<T: for<'de> Deserialize<'de>>(
    bytes: &[u8],
    what: &str,
) -> Result<T, IndexError> {
    postcard::from_bytes(bytes).map_err(|e| IndexError::Decode {
        what: what.to_owned(),
        why: e.to_string(),
    })
}

pub(super) fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serialising these plain structs into memory cannot fail.
    postcard::to_allocvec(v).unwrap_or_default()
}

/// The key of the pair `first ‖ second` of a pair table (`by_target`, `by_premise`): both
/// nodes big-endian, so a node's pairs are adjacent and in order.
pub(super) fn node_pair(first: Node, second: Node) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&node_key(first));
    key[8..].copy_from_slice(&node_key(second));
    key
}

/// The value of a `by_target` pair: the kind of the record it pairs with its target. What a
/// record decides follows from its kind, so whoever reads the records targeting a claim (a
/// blast radius reads those of every member) learns what each decides from the pairs, in
/// key order, without a lookup of each record's entry at a random place of `claims`.
pub(super) fn record_kind_value(kind: Kind) -> [u8; 1] {
    let mut value = [0u8; 1];
    // A unit variant among fewer than 128 is one varint byte, so this always fits: no
    // allocation for each pair written or audited.
    let _ = postcard::to_slice(&kind, &mut value);
    value
}

/// The record kind that the `by_target` pair `pair` holds as its value.
pub fn record_kind(pair: &[u8], value: &[u8]) -> Result<Kind, IndexError> {
    match value {
        [_] => decode(value, "by_target"),
        _ => Err(IndexError::Decode {
            what: format!("by_target/{}", hex::encode(pair)),
            why: format!("a record's kind is one byte, found {}", value.len()),
        }),
    }
}

pub(super) fn pair(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(a.len() + b.len());
    k.extend_from_slice(a);
    k.extend_from_slice(b);
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Each kind's pair value is its postcard encoding, one byte, and reads back as that kind.
    #[test]
    fn a_record_kind_value_round_trips() {
        for kind in Kind::ALL {
            let value = record_kind_value(kind);
            assert_eq!(value.to_vec(), encode(&kind));
            assert_eq!(record_kind(&[0; 16], &value).unwrap(), kind);
        }
        assert!(record_kind(&[0; 16], &[]).is_err());
    }

    fn entry() -> impl Strategy<Value = ClaimEntry> {
        let id = any::<[u8; 32]>();
        let ids = prop::collection::vec(any::<[u8; 32]>(), 0..3);
        let signer = ("[a-f0-9]{0,8}", 0..3usize, "[a-zé\"]{0,5}").prop_map(|(k, r, n)| Signer {
            keyid: k,
            role: [Role::Harness, Role::Agent, Role::Human][r],
            name: n,
        });
        (
            (id, 0..Kind::ALL.len(), 0..3usize, "[a-z/ ]{0,6}"),
            (
                ids.clone(),
                ids,
                "[0-9a-f]{0,64}",
                any::<i64>(),
                any::<u64>(),
            ),
            prop::collection::vec(signer, 0..3),
            (any::<[u64; 3]>(), "[{}\":a-z,]{0,40}"),
            prop::collection::vec((any::<u64>(), any::<[u8; 32]>()), 0..3),
        )
            .prop_map(
                |(
                    (id, kind, origin, producer),
                    (target, depends_on, tree, ts, seq),
                    signers,
                    (pos, summary),
                    envs,
                )| {
                    ClaimEntry {
                        id,
                        kind: Kind::ALL[kind],
                        origin: [
                            OriginKind::HarnessObserved,
                            OriginKind::AgentAsserted,
                            OriginKind::HumanAsserted,
                        ][origin],
                        producer,
                        target,
                        depends_on,
                        anchor_tree: tree,
                        timestamp: ts,
                        seq,
                        signers,
                        first: Position {
                            n: pos[0],
                            segment: pos[1],
                            offset: pos[2],
                        },
                        summary,
                        envelopes: envs
                            .into_iter()
                            .map(|(number, digest)| EnvelopeRef { number, digest })
                            .collect(),
                    }
                },
            )
    }

    /// What a [`ClaimRef`] says, as owned values, to compare with a [`ClaimEntry`].
    fn fields(r: &ClaimRef<'_>) -> ClaimEntry {
        let whole = r.owned().expect("a read entry is whole");
        ClaimEntry {
            id: *r.id,
            kind: r.kind,
            origin: r.origin,
            producer: r.producer.to_owned(),
            target: r.target().copied().collect(),
            depends_on: r.depends_on().copied().collect(),
            anchor_tree: r.anchor_tree.to_owned(),
            timestamp: r.timestamp,
            seq: r.seq,
            signers: ClaimRef::decode_signers(r.signers).expect("signers"),
            first: whole.first,
            summary: r.summary.to_owned(),
            envelopes: whole.envelopes,
        }
    }

    proptest! {
        /// An entry read in place says what the owned decoding says, and on damaged bytes
        /// (cut short, a byte changed) both refuse alike or agree.
        #[test]
        fn codec_claim_read_in_place_is_the_owned_decoding(
            e in entry(),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            mask in 1u8..,
        ) {
            let bytes = encode(&e);
            let r = ClaimRef::decode(3, &bytes).expect("reads");
            prop_assert_eq!(&fields(&r), &e);
            prop_assert_eq!(r.owned().expect("whole"), e);
            let short = &bytes[..cut.index(bytes.len())];
            let mut changed = bytes.clone();
            changed[flip.index(bytes.len())] ^= mask;
            for damaged in [short, &changed[..]] {
                let owned = decode::<ClaimEntry>(damaged, "claims").ok();
                let read = ClaimRef::decode(3, damaged).ok();
                prop_assert_eq!(read.as_ref().map(fields), owned);
            }
        }
    }
}

//! Checking the live index against the log without writing a second index (`fsck`).
//!
//! `fsck` reads and verifies the log as a rebuild does, but applies each record to an
//! [`Audit`] instead of a [`Writer`](super::Writer): the audit works out the entry values
//! the record gives each table with the writer's own functions, and looks each one up in
//! the live index. Which entries a record writes (a claim's first envelope or a later one,
//! each distinct target and premise pair, a key added or retired once) is decided here as
//! the writer decides it; a property test holds the two to the same result. The `ancestry`
//! table is the exception: its entries are met by a walk forward as the claims come (a
//! search only for a claim the log named before it came), so an entry a damaged branch key
//! hides from searches alone is not found here, but by the reads that search for it, which
//! hold a missing entry to the claims table and report damage. Numbering the
//! ids itself, the audit compares the `nodes` table, keyed by hash, at the end in one walk
//! beside its numbering, sorted, rather than looked up id by id. At the end the audit also counts
//! every other table's entries by walking it (never trusting LMDB's own count, a number in
//! the file) and, where the count is not what the log gives or an entry differed, walks the
//! table again to name the entries the log does not account for. So a missing, changed or
//! extra entry is found in every table. A damaged page is a finding too: LMDB fails
//! every later read of the transaction, so the audit stops there and says where.
//!
//! Why not rebuild and compare: a second index costs as much to write as the first (at a
//! million claims, a gigabyte of scratch space), and lookups in the live index cost less
//! than writes.
//!
//! Two ways to number the ids the log names. [`Audit::bounded`], what `fsck` runs first,
//! takes each id's node from the live `nodes` table itself, looked up at every mention: an id
//! named before must give a node already given, an id named for the first time the next
//! one. At the end one walk of `nodes` checks that the table gives every node below the
//! count exactly once, with the claimed flag the log gives it, and holds no other entry:
//! together with the lookups this proves the table is the writer's numbering, so every other
//! table is checked with the right nodes. It keeps a bit per node (claimed) and the two
//! counts of pairs naming it (4 bytes each; a count past that is kept aside). It only tells
//! an index that agrees with the log from one that does not: where it finds any difference,
//! `fsck` audits again with [`Audit::new`], which numbers every id itself as the writer does
//! (every id the log names, about 50 bytes an id) and names each difference
//! in every table, `nodes` included. Both keep the expected entries of the claims that have
//! more than one envelope or already differ.

use super::codec::{checked, id_keys, node_pair, record_kind_value};
use super::{
    decode, distinct, encode, node_key, node_of_key, pair, AncestryEntry, Apply, Checked,
    ClaimEntry, Difference, IdKey, Incoming, IndexError, KeyEntry, Meta, Node, NodeValue,
    OrderEntry, Reader, TrustEventAt, FORMAT, ORIGIN_KEY, TRUST_EVENTS_KEY,
};
use crate::ingest::Accepted;
use crate::store::log::{Chain, Position};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::hash::BuildHasher;

/// One bit per node.
#[derive(Default)]
struct Bits(Vec<u64>);

impl Bits {
    fn get(&self, n: Node) -> bool {
        let Ok(i) = usize::try_from(n / 64) else {
            return false;
        };
        self.0.get(i).is_some_and(|w| w & (1 << (n % 64)) != 0)
    }

    /// Sets bit `n` (below the count of nodes numbered); whether it was set before.
    fn set(&mut self, n: Node) -> bool {
        let i = (n / 64) as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        let bit = 1 << (n % 64);
        let was = self.0[i] & bit != 0;
        self.0[i] |= bit;
        was
    }
}

/// By node, the counts of the pairs that name it (what its `incoming` entry must say), in
/// 4 bytes each; a count that outgrows them is kept aside.
#[derive(Default)]
struct Tally {
    small: Vec<[u32; 2]>,
    large: FxHashMap<Node, [u64; 2]>,
}

impl Tally {
    fn push(&mut self) {
        self.small.push([0, 0]);
    }

    fn len(&self) -> usize {
        self.small.len()
    }

    /// One more pair names node `n`: a record targeting it (`which` 0) or a claim naming it
    /// as a premise (1).
    fn count(&mut self, n: Node, which: usize) {
        let Some(c) = self.small.get_mut(n as usize) else {
            return;
        };
        match c[which] {
            // The count is kept aside.
            u32::MAX => self.large.entry(n).or_default()[which] += 1,
            v if v == u32::MAX - 1 => {
                c[which] = u32::MAX;
                self.large.entry(n).or_default()[which] = u64::from(u32::MAX);
            }
            _ => c[which] += 1,
        }
    }

    fn get(&self, n: Node) -> Incoming {
        let c = self.small.get(n as usize).copied().unwrap_or_default();
        let large = self.large.get(&n);
        let of = |w: usize| match large {
            Some(l) if c[w] == u32::MAX => l[w],
            _ => u64::from(c[w]),
        };
        Incoming {
            records: of(0),
            dependents: of(1),
        }
    }
}

/// How the audit numbers the ids the log names (see the module comment).
enum Numbering {
    /// From the live `nodes` table, checked as it is read.
    Live,
    /// Its own, as the writer numbers them.
    Own(OwnIds),
}

/// Every id the log names, numbered as the writer numbers them: the ids in node order, and
/// a hash table from an id to its node that holds the nodes only (each id is kept once, in
/// `ids`). About 50 bytes an id, where a map keyed by the ids themselves took about 150.
struct OwnIds {
    ids: Vec<IdKey>,
    nodes: hashbrown::HashTable<Node>,
}

impl OwnIds {
    /// Room for `named` ids, the number the index says it numbered (a hint: the log decides).
    fn with_capacity(named: usize) -> OwnIds {
        OwnIds {
            ids: Vec::with_capacity(named),
            nodes: hashbrown::HashTable::with_capacity(named),
        }
    }

    fn hash(id: &IdKey) -> u64 {
        rustc_hash::FxBuildHasher.hash_one(id)
    }

    fn get(&self, id: &IdKey) -> Option<Node> {
        let ids = &self.ids;
        self.nodes
            .find(Self::hash(id), |&n| ids.get(n as usize) == Some(id))
            .copied()
    }

    /// Numbers `id`, which has no node yet, with the next node.
    fn push(&mut self, id: IdKey) -> Node {
        let node = self.ids.len() as Node;
        let ids = &self.ids;
        self.nodes.insert_unique(Self::hash(&id), node, |&n| {
            ids.get(n as usize).map_or(0, Self::hash)
        });
        self.ids.push(id);
        node
    }
}

/// The live index, checked record by record against the log (see the module comment).
pub struct Audit<'r, 'e> {
    live: &'r Reader<'e>,
    /// Differences kept per table (all are counted).
    limit: usize,
    /// What the index's `meta` should say after the records applied so far.
    meta: Meta,
    /// The trust state: the fold of the trust events so far.
    keys: BTreeMap<String, KeyEntry>,
    /// The first record's chain value, and the trust events so far (`meta/origin`,
    /// `meta/trust_events`).
    origin: Option<Chain>,
    trust_events: Vec<TrustEventAt>,
    /// How ids get their nodes; `claimed` says by node which ids the log holds as claims.
    numbering: Numbering,
    claimed: Bits,
    /// By node, the pairs that name it: what its `incoming` entry must count.
    incoming: Tally,
    /// Expected entries compared at the end rather than at the claim's first envelope, with
    /// the claim's node: the live index gives the claim more than one envelope, or lacks it,
    /// or (`true`) was already reported to differ.
    open: FxHashMap<IdKey, (ClaimEntry, bool, Node)>,
    /// Distinct (target, record) and (premise, dependent) pairs the log gives.
    targets: u64,
    premises: u64,
    found: Vec<(&'static str, Difference)>,
    counted: BTreeMap<&'static str, usize>,
    /// The encoded first entry of the claim being checked, kept between claims.
    scratch: Vec<u8>,
    /// LMDB failed a read: a damaged page. LMDB then fails every later read in the same
    /// transaction, so the audit stops looking (the one finding says where).
    broken: bool,
    /// A forward walk of the `ancestry` table (made at the first claim).
    ancestry: Option<ForwardWalk<'r>>,
}

/// A table's entries as LMDB gives them, checksums not yet checked.
type RawEntries<'r> = Box<dyn Iterator<Item = heed::Result<(&'r [u8], &'r [u8])>> + 'r>;

/// A walk forward through a table keyed by node, for checking its entries in the order the
/// log's claims come: most claims take the next node when they arrive, so their entries come
/// one after another, and stepping to each costs less than a search from the root. Only the
/// entry handed out is checked (its checksum): one it steps past is checked when its claim
/// comes, by a search, or found at the end among the entries the log does not account for.
struct ForwardWalk<'r> {
    entries: RawEntries<'r>,
    table: u8,
    /// The entry the walk stands at (its node, key and stored value); None past the end.
    at: Option<(Node, &'r [u8], &'r [u8])>,
}

impl<'r> ForwardWalk<'r> {
    fn new(table: Checked, txn: &'r heed::RoTxn<'r>) -> Result<ForwardWalk<'r>, IndexError> {
        let mut walk = ForwardWalk {
            entries: Box::new(table.0.iter(txn)?),
            table: table.1,
            at: None,
        };
        walk.step()?;
        Ok(walk)
    }

    fn step(&mut self) -> Result<(), IndexError> {
        self.at = match self.entries.next().transpose()? {
            // A key that is no node ends the walk here; the table's extra entries are
            // looked for at the end of the audit.
            Some((k, v)) => node_of_key(k).map(|n| (n, k, v)),
            None => None,
        };
        Ok(())
    }

    /// The value under `node`, checked, when the walk meets it going forward (entries
    /// before it are passed); None when the walk is already past it or has no entry there.
    fn value_at(&mut self, node: Node) -> Result<Option<&'r [u8]>, IndexError> {
        while let Some((n, k, v)) = self.at {
            if n > node {
                return Ok(None);
            }
            self.step()?;
            if n == node {
                return checked(self.table, k, v).map(Some);
            }
        }
        Ok(None)
    }
}

impl<'r, 'e> Audit<'r, 'e> {
    /// An audit of `live` that keeps at most `limit` differences per table and names each
    /// one, numbering the ids itself (see the module comment). Room is made for `named` ids
    /// (the count the index gives, which its caller bounds), so that the ids and their table
    /// need not grow, each growth a copy, as the ids come.
    pub fn new(live: &'r Reader<'e>, limit: usize, named: usize) -> Audit<'r, 'e> {
        Audit::numbering(live, limit, Numbering::Own(OwnIds::with_capacity(named)))
    }

    /// An audit of `live` that numbers the ids from its `nodes` table, holding a few bytes
    /// per node: whether it finds any difference is whether [`Audit::new`] does, but what it
    /// reports is only that (see the module comment).
    pub fn bounded(live: &'r Reader<'e>, limit: usize) -> Audit<'r, 'e> {
        Audit::numbering(live, limit, Numbering::Live)
    }

    fn numbering(live: &'r Reader<'e>, limit: usize, numbering: Numbering) -> Audit<'r, 'e> {
        Audit {
            live,
            limit,
            meta: Meta::EMPTY,
            keys: BTreeMap::new(),
            origin: None,
            trust_events: Vec::new(),
            numbering,
            claimed: Bits::default(),
            incoming: Tally::default(),
            open: FxHashMap::default(),
            targets: 0,
            premises: 0,
            found: Vec::new(),
            counted: BTreeMap::new(),
            scratch: Vec::new(),
            broken: false,
            ancestry: None,
        }
    }

    /// What the writer's `note_record` writes, kept to be compared at the end.
    fn note_record(&mut self, pos: Position, chain: Chain, trust_event: bool) {
        if pos.n == 0 {
            self.origin = Some(chain);
        }
        if trust_event {
            self.trust_events.push((pos, chain));
        }
    }

    /// A table of the index, by the name `fsck` reports.
    fn table(&self, name: &'static str) -> Checked {
        let d = &self.live.dbs;
        match name {
            "meta" => d.meta,
            "nodes" => d.nodes,
            "claims" => d.claims,
            "envelope_order" => d.envelope_order,
            "arrivals" => d.arrivals,
            "by_target" => d.by_target,
            "by_premise" => d.by_premise,
            "incoming" => d.incoming,
            "ancestry" => d.ancestry,
            _ => d.keys,
        }
    }

    fn report(&mut self, table: &'static str, difference: Difference) {
        let n = self.counted.entry(table).or_insert(0);
        *n += 1;
        if *n <= self.limit {
            self.found.push((table, difference));
        }
    }

    fn differs(&self, table: &'static str) -> bool {
        self.counted.get(table).is_some_and(|&n| n > 0)
    }

    /// A read of `table` at `key` failed. A damaged page is a finding, not an error: it is
    /// the index that is damaged, and a rebuild mends it.
    fn unreadable(&mut self, table: &'static str, key: &[u8]) {
        if !self.broken {
            self.broken = true;
            self.report(table, Difference::Unreadable(key.to_vec()));
        }
    }

    /// The live entry of `table` under `key`; `None` when it cannot be read (reported once).
    fn get(&mut self, table: &'static str, key: &[u8]) -> Option<Option<&'r [u8]>> {
        if self.broken {
            return None;
        }
        let live: &'r Reader<'e> = self.live;
        match self.table(table).get(&live.txn, key) {
            Ok(v) => Some(v),
            Err(_) => {
                self.unreadable(table, key);
                None
            }
        }
    }

    /// Checks that the `ancestry` table holds `value` under `node`: through the forward walk
    /// when it meets the node, else by a search (a claim the log named before it came has
    /// an older node than the claims before it).
    fn expect_ancestry(&mut self, node: Node, value: &[u8]) {
        if self.broken {
            return;
        }
        let key = node_key(node);
        let live: &'r Reader<'e> = self.live;
        let found = match &mut self.ancestry {
            Some(walk) => walk.value_at(node),
            None => ForwardWalk::new(live.dbs.ancestry, &live.txn).and_then(|mut walk| {
                let v = walk.value_at(node);
                self.ancestry = Some(walk);
                v
            }),
        };
        match found {
            Ok(Some(stored)) if stored == value => {}
            Ok(Some(_)) => self.report("ancestry", Difference::Changed(key.to_vec())),
            Ok(None) => self.expect("ancestry", &key, value),
            Err(_) => self.unreadable("ancestry", &key),
        }
    }

    /// Checks that `table` holds `value` under `key`.
    fn expect(&mut self, table: &'static str, key: &[u8], value: &[u8]) {
        if let Some(difference) = self.differs_from(table, key, value) {
            self.report(table, difference(key.to_vec()));
        }
    }

    /// How the entry of `table` under `key` differs from `value`, as the [`Difference`] to
    /// report under the name the caller gives it (ids, where the key holds nodes); None when
    /// it holds `value` or cannot be read (reported once).
    fn differs_from(
        &mut self,
        table: &'static str,
        key: &[u8],
        value: &[u8],
    ) -> Option<fn(Vec<u8>) -> Difference> {
        match self.get(table, key)? {
            Some(v) if v == value => None,
            Some(_) => Some(Difference::Changed),
            None => Some(Difference::Missing),
        }
    }

    /// The node of `id`, numbered now if the log never named it before: the writer's
    /// numbering ([`super::Writer`]). The `nodes` table is compared at the end
    /// ([`Audit::audit_nodes`]).
    fn node_of(&mut self, id: &IdKey) -> Node {
        let next = self.meta.counts.nodes;
        let found = match &mut self.numbering {
            Numbering::Own(own) => match own.get(id) {
                Some(n) => return n,
                None => own.push(*id),
            },
            // The live table's node: one already given (the id was named before), or the
            // next one (it is named now for the first time). Anything else differs from the
            // log; the id is numbered as new, and the audit goes on to its end.
            Numbering::Live => match self.get("nodes", id) {
                Some(Some(v)) => match super::codec::node_value(id, v) {
                    Ok(v) if v.node < next => return v.node,
                    Ok(v) if v.node == next => next,
                    _ => {
                        self.report("nodes", Difference::Changed(id.to_vec()));
                        next
                    }
                },
                Some(None) => {
                    self.report("nodes", Difference::Missing(id.to_vec()));
                    next
                }
                None => next,
            },
        };
        self.meta.number_node();
        self.incoming.push();
        found
    }

    /// Numbers the ids of `firsts` in order, as the writer does, checks the pairs `first ‖
    /// node` of a pair table (`node` is the claim `id`'s), each distinct pair once and holding
    /// `value`, and counts each in what the first's `incoming` entry must say (`which` of its
    /// counts). Returns the nodes of the distinct firsts, in order.
    fn expect_pairs(
        &mut self,
        table: &'static str,
        firsts: &[IdKey],
        node: Node,
        id: &IdKey,
        which: usize,
        value: &[u8],
    ) -> Vec<Node> {
        let firsts = distinct(firsts);
        let mut nodes = Vec::with_capacity(firsts.len());
        for first in &firsts {
            let f = self.node_of(first);
            nodes.push(f);
            self.incoming.count(f, which);
            if let Some(difference) = self.differs_from(table, &node_pair(f, node), value) {
                self.report(table, difference(pair(first, id)));
            }
        }
        nodes
    }

    /// What adding an envelope to the claim `id`'s entry gave. An envelope the entry holds
    /// already is damage in the log ([`IndexError::DuplicateEnvelope`]) when the ids are
    /// numbered as the writer numbers them; numbered from the index, it may be the index's
    /// numbering that sent the envelope to another claim's entry, so it is a difference
    /// there (and the audit that numbers the ids itself tells which).
    fn added(&mut self, id: &IdKey, added: Result<(), IndexError>) -> Result<(), IndexError> {
        match added {
            Err(IndexError::DuplicateEnvelope { .. })
                if matches!(self.numbering, Numbering::Live) =>
            {
                self.report("claims", Difference::Changed(id.to_vec()));
                Ok(())
            }
            other => other,
        }
    }

    /// Moves past an envelope record.
    fn advance_envelope(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
    ) -> Result<(), IndexError> {
        self.meta.advance(pos, chain, frame_len);
        self.note_record(pos, chain, false);
        Ok(())
    }

    /// What the index's `meta` should say after the records applied so far.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// Ends the audit: compares what was left for the end, then each table's size with what
    /// the log gives it. Returns every difference kept, table by table.
    pub fn finish(mut self) -> Vec<(&'static str, Difference)> {
        if self.broken {
            return self.found;
        }
        let mut open: Vec<(IdKey, (ClaimEntry, bool, Node))> =
            std::mem::take(&mut self.open).into_iter().collect();
        open.sort_by_key(|a| a.0);
        for (id, (entry, reported, node)) in &open {
            if !reported {
                if let Some(difference) =
                    self.differs_from("claims", &node_key(*node), &encode(entry))
                {
                    self.report("claims", difference(id.to_vec()));
                }
            }
        }
        let open: FxHashMap<IdKey, ClaimEntry> = open
            .into_iter()
            .map(|(id, (entry, _, _))| (id, entry))
            .collect();
        // A store with an empty log may never have committed an index: no meta at all is
        // what readers take for an empty log, and agrees with it.
        let never_written = self.meta.head.records == 0
            && matches!(self.get("meta", b"meta"), Some(None))
            && matches!(self.get("meta", b"format"), Some(None));
        if never_written {
            self.extra_entries("meta", 0, |_| false);
        } else {
            self.expect("meta", b"meta", &encode(&self.meta));
            self.expect("meta", b"format", &encode(&FORMAT));
            let mut known: Vec<&[u8]> = vec![b"meta", b"format"];
            if let Some(origin) = self.origin {
                self.expect("meta", ORIGIN_KEY, &encode(&origin));
                let events = encode(&self.trust_events);
                self.expect("meta", TRUST_EVENTS_KEY, &events);
                known.extend([ORIGIN_KEY, TRUST_EVENTS_KEY]);
            }
            self.extra_entries("meta", known.len() as u64, |k| known.contains(&k));
        }
        self.audit_keys();
        let (claims, envelopes) = (self.meta.counts.claims, self.meta.counts.envelopes);
        let (own, ids) = match std::mem::replace(&mut self.numbering, Numbering::Live) {
            // The table from ids to nodes is done with: the ids in node order say the rest.
            Numbering::Own(own) => (true, own.ids),
            Numbering::Live => (false, Vec::new()),
        };
        // Every node's count of the pairs naming it, looked up in node order (the lookups
        // read the table's pages one after another).
        let incoming = std::mem::take(&mut self.incoming);
        for n in 0..incoming.len() {
            let key = node_key(n as Node);
            let expected = encode(&incoming.get(n as Node));
            if let Some(difference) = self.differs_from("incoming", &key, &expected) {
                let name = ids.get(n).map_or(key.to_vec(), |id| id.to_vec());
                self.report("incoming", difference(name));
            }
        }
        drop(incoming);
        let claimed = std::mem::take(&mut self.claimed);
        // The id of a node the log named, if the key is one (known only to an audit that
        // numbers the ids itself; the other reports no more than that a table differs).
        let id_of = |k: &[u8]| node_of_key(k).and_then(|n| ids.get(n as usize));
        let is_claim = |k: &[u8]| node_of_key(k).is_some_and(|n| claimed.get(n));
        if own {
            self.audit_nodes(&ids, &claimed);
        } else {
            self.audit_live_nodes(&claimed);
        }
        self.extra_entries("claims", claims, is_claim);
        self.extra_entries("ancestry", claims, is_claim);
        let numbered = |count: u64| {
            move |k: &[u8]| <[u8; 8]>::try_from(k).is_ok_and(|n| u64::from_be_bytes(n) < count)
        };
        self.extra_entries("arrivals", claims, numbered(claims));
        let named = self.meta.counts.nodes;
        self.extra_entries("incoming", named, numbered(named));
        self.extra_entries("envelope_order", envelopes, numbered(envelopes));
        // A pair is the log's when its second node is a claim of the log that names the
        // first: the expected entry where one is kept, else the live one (already found
        // equal).
        let live = self.live;
        let names = |k: &[u8], of: fn(&ClaimEntry) -> &Vec<IdKey>| -> bool {
            if k.len() != 16 {
                return false;
            }
            let (Some(first), Some(second)) = (id_of(&k[..8]), id_of(&k[8..])) else {
                return false;
            };
            if !is_claim(&k[8..]) {
                return false;
            }
            match open.get(second) {
                Some(e) => of(e).contains(first),
                None => live
                    .claim(second)
                    .ok()
                    .flatten()
                    .is_some_and(|e| of(&e).contains(first)),
            }
        };
        let (targets, premises) = (self.targets, self.premises);
        self.extra_entries("by_target", targets, |k| names(k, |e| &e.target));
        self.extra_entries("by_premise", premises, |k| names(k, |e| &e.depends_on));
        self.found
    }

    /// Counts `table`'s entries by walking it (LMDB's own count is a number in the file,
    /// which damage could change); when they are not the `expected` number, or a difference
    /// was found in the table, walks it again and reports each entry `belongs` refuses as
    /// extra, or the count itself when no entry can be named. The walk reads keys only:
    /// every entry the log accounts for has had its value and checksum read by a lookup,
    /// and an entry it does not account for is reported whatever its value.
    fn extra_entries(
        &mut self,
        table: &'static str,
        expected: u64,
        belongs: impl Fn(&[u8]) -> bool,
    ) {
        let t = self.table(table);
        let live: &'r Reader<'e> = self.live;
        let mut found = 0u64;
        let mut extra = Vec::new();
        for pass in [false, true] {
            if self.broken || (pass && found == expected && !self.differs(table)) {
                return;
            }
            let walk = match t.keys(&live.txn) {
                Ok(w) => w,
                Err(_) => return self.unreadable(table, &[]),
            };
            let mut last: Vec<u8> = Vec::new();
            for item in walk {
                let Ok(k) = item else {
                    return self.unreadable(table, &last);
                };
                if !pass {
                    found += 1;
                    last.clear();
                    last.extend_from_slice(k);
                } else if !belongs(k) && extra.len() < self.limit {
                    extra.push(k.to_vec());
                }
            }
        }
        let named = !extra.is_empty();
        for k in extra {
            self.report(table, Difference::Extra(k));
        }
        if found != expected && !named {
            self.report(table, Difference::Count { expected, found });
        }
    }

    /// Compares the `nodes` table with the numbering the log gives, in one walk in key order
    /// beside the expected entries sorted: keyed by hash, a lookup per id would land on a
    /// random page each time.
    fn audit_nodes(&mut self, ids: &[IdKey], claimed: &Bits) {
        if self.broken {
            return;
        }
        let mut expected: Vec<(&IdKey, Node)> = ids.iter().zip(0..).collect();
        expected.sort_unstable();
        let t = self.table("nodes");
        let live: &'r Reader<'e> = self.live;
        let walk = match t.iter(&live.txn) {
            Ok(w) => w,
            Err(_) => return self.unreadable("nodes", &[]),
        };
        let mut want = expected.into_iter().peekable();
        let mut last: Vec<u8> = Vec::new();
        for item in walk {
            let Ok((k, v)) = item else {
                return self.unreadable("nodes", &last);
            };
            // LMDB orders keys as bytes, as the sort above does.
            while let Some((id, _)) = want.next_if(|(id, _)| &id[..] < k) {
                self.report("nodes", Difference::Missing(id.to_vec()));
            }
            let value = |n: Node| NodeValue {
                node: n,
                claimed: claimed.get(n),
            };
            match want.next_if(|(id, _)| &id[..] == k) {
                Some((_, n)) if v == value(n).encode() => {}
                Some(_) => self.report("nodes", Difference::Changed(k.to_vec())),
                None => self.report("nodes", Difference::Extra(k.to_vec())),
            }
            // A walk steps from leaf to leaf; a lookup is routed by the keys of the branch
            // pages above them, which the walk never reads: each entry is looked up too
            // (in key order, so the lookups read the leaves the walk just read).
            match self.get("nodes", k) {
                Some(Some(found)) if found == v => {}
                Some(_) => self.report("nodes", Difference::Missing(k.to_vec())),
                None => return,
            }
            last.clear();
            last.extend_from_slice(k);
        }
        for (id, _) in want {
            self.report("nodes", Difference::Missing(id.to_vec()));
        }
    }

    /// Checks the `nodes` table against the numbering read from it ([`Numbering::Live`]): in
    /// one walk, every entry gives a node below the count numbered, no node twice, and the
    /// claimed flag the log gives the node; and the walk finds as many entries as nodes were
    /// numbered. With every id the log names found at its lookups, that is the writer's
    /// numbering and no more. A difference is reported without naming what the log gives
    /// instead (an audit that numbers the ids itself names it).
    fn audit_live_nodes(&mut self, claimed: &Bits) {
        if self.broken {
            return;
        }
        let named = self.meta.counts.nodes;
        let t = self.table("nodes");
        let live: &'r Reader<'e> = self.live;
        let walk = match t.iter(&live.txn) {
            Ok(w) => w,
            Err(_) => return self.unreadable("nodes", &[]),
        };
        let mut given = Bits::default();
        let mut found = 0u64;
        let mut last: Vec<u8> = Vec::new();
        for item in walk {
            let Ok((k, v)) = item else {
                return self.unreadable("nodes", &last);
            };
            found += 1;
            let sound = <&IdKey>::try_from(k)
                .ok()
                .and_then(|id| super::codec::node_value(id, v).ok())
                .is_some_and(|v| {
                    v.node < named && !given.set(v.node) && v.claimed == claimed.get(v.node)
                });
            if !sound {
                self.report("nodes", Difference::Changed(k.to_vec()));
            }
            last.clear();
            last.extend_from_slice(k);
        }
        if found != named {
            self.report(
                "nodes",
                Difference::Count {
                    expected: named,
                    found,
                },
            );
        }
    }

    /// Compares the trust state with the `keys` table, entry by entry (it is small).
    fn audit_keys(&mut self) {
        if self.broken {
            return;
        }
        let t = self.table("keys");
        let mut live: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let walk = match t.iter(&self.live.txn) {
            Ok(w) => w,
            Err(_) => return self.unreadable("keys", &[]),
        };
        for item in walk {
            match item {
                Ok((k, v)) => {
                    live.insert(k.to_vec(), v.to_vec());
                }
                Err(_) => {
                    let last = live.keys().next_back().cloned().unwrap_or_default();
                    return self.unreadable("keys", &last);
                }
            }
        }
        let expected: Vec<(Vec<u8>, Vec<u8>)> = self
            .keys
            .iter()
            .map(|(k, e)| (k.as_bytes().to_vec(), encode(e)))
            .collect();
        for (k, v) in expected {
            // Looked up too: a lookup is routed by branch keys that the walk never reads.
            let found = match self.get("keys", &k) {
                Some(found) => found.is_some(),
                None => return,
            };
            match live.remove(&k) {
                Some(l) if l == v && found => {}
                Some(l) if l == v => self.report("keys", Difference::Missing(k)),
                Some(_) => self.report("keys", Difference::Changed(k)),
                None => self.report("keys", Difference::Missing(k)),
            }
        }
        for k in live.into_keys() {
            self.report("keys", Difference::Extra(k));
        }
    }
}

impl Apply for Audit<'_, '_> {
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
        self.expect(
            "envelope_order",
            &number.to_be_bytes(),
            &encode(&OrderEntry { claim: id, pos }),
        );
        self.meta.counts.envelopes += 1;
        let node = self.node_of(&id);
        let key = node_key(node);
        if !self.claimed.set(node) {
            let seq = self.meta.counts.claims;
            let claim = &accepted.claim;
            let (target, depends_on) = (id_keys(&claim.target), id_keys(&claim.depends_on));
            self.expect("arrivals", &seq.to_be_bytes(), &id);
            let kind = record_kind_value(claim.kind);
            let targets = self.expect_pairs("by_target", &target, node, &id, 0, &kind);
            self.targets += targets.len() as u64;
            let premises = self.expect_pairs("by_premise", &depends_on, node, &id, 1, &[]);
            self.premises += premises.len() as u64;
            let ancestry = AncestryEntry {
                id,
                kind: claim.kind,
                premises,
            };
            self.expect_ancestry(node, &ancestry.encode());
            self.meta.counts.claims += 1;
            let mut encoded = std::mem::take(&mut self.scratch);
            encoded.clear();
            let encoded = ClaimEntry::encode_first(
                &id,
                accepted,
                pos,
                seq,
                &envelope,
                &target,
                &depends_on,
                encoded,
            );
            let live = self.get("claims", &key);
            let settled = matches!(live, Some(Some(v)) if v == encoded.as_slice());
            self.scratch = encoded;
            if settled {
                // The claim as the log has it so far, with one envelope.
                return self.advance_envelope(pos, chain, frame_len);
            }
            let entry = ClaimEntry::first(id, accepted, pos, seq, envelope);
            match live {
                Some(Some(v)) => {
                    let more =
                        decode::<ClaimEntry>(v, "claims").is_ok_and(|e| e.envelopes.len() > 1);
                    if !more {
                        self.report("claims", Difference::Changed(id.to_vec()));
                    }
                    self.open.insert(id, (entry, !more, node));
                }
                Some(None) => {
                    self.open.insert(id, (entry, false, node));
                }
                None => {
                    self.open.insert(id, (entry, true, node));
                }
            }
        } else {
            match self.open.get_mut(&id) {
                Some((entry, _, _)) => {
                    let added = entry.add_envelope(&id, envelope, &accepted.signers);
                    self.added(&id, added)?;
                }
                None => {
                    // The live entry was found equal to the claim's entry with one envelope:
                    // it lacks this one, unless this one repeats it (damage in the log).
                    let live = match self.get("claims", &key) {
                        Some(Some(v)) => decode::<ClaimEntry>(v, "claims").ok(),
                        _ => None,
                    };
                    // Unreadable now (reported), or decoded: it held the claim's first
                    // envelope, so a repeat of it is damage in the log.
                    if let Some(mut entry) = live {
                        let added = entry.add_envelope(&id, envelope, &accepted.signers);
                        self.added(&id, added)?;
                        self.report("claims", Difference::Changed(id.to_vec()));
                        self.open.insert(id, (entry, true, node));
                    }
                }
            }
        }
        self.advance_envelope(pos, chain, frame_len)
    }

    fn apply_key_add(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        key: &crate::store::record::KeyAdd,
    ) -> Result<(), IndexError> {
        let entry = KeyEntry::added(pos, key)?;
        match self.keys.entry(key.keyid.clone()) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(entry);
                self.meta.count_key();
            }
            std::collections::btree_map::Entry::Occupied(mut held) => {
                held.get_mut().regrant(key);
            }
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true);
        Ok(())
    }

    fn apply_key_retire(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
        keyid: &str,
    ) -> Result<(), IndexError> {
        if let Some(entry) = self.keys.get_mut(keyid) {
            entry.retire(pos);
        }
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true);
        Ok(())
    }

    fn apply_trust_record(
        &mut self,
        pos: Position,
        chain: Chain,
        frame_len: u64,
    ) -> Result<(), IndexError> {
        self.meta.advance_past_trust_event(pos, chain, frame_len);
        self.note_record(pos, chain, true);
        Ok(())
    }

    fn keys(&self) -> Result<Vec<KeyEntry>, IndexError> {
        Ok(self.keys.values().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{id_text, record_kind, Environments, Index, Writer};
    use super::*;
    use crate::claim::{Claim, Kind, OriginKind};
    use crate::ingest::Signer;
    use crate::keys::Role;
    use crate::store::record::KeyAdd;
    use proptest::prelude::*;

    fn key(n: u8) -> IdKey {
        let mut k = [0u8; 32];
        k[0] = n;
        k[31] = 7;
        k
    }

    proptest! {
        /// The compact numbering gives each id the node a plain map would (the next one at
        /// its first mention, its own after), whatever room was made for it, through the
        /// table's growth included.
        #[test]
        fn own_ids_number_as_a_map_does(
            mentions in proptest::collection::vec(0u16..600, 0..2000),
            room in 0usize..700,
        ) {
            let mut own = OwnIds::with_capacity(room);
            let mut map: FxHashMap<IdKey, Node> = FxHashMap::default();
            for m in mentions {
                let mut id = [0u8; 32];
                id[..2].copy_from_slice(&m.to_be_bytes());
                let expected = match map.get(&id) {
                    Some(&n) => n,
                    None => {
                        let n = map.len() as Node;
                        map.insert(id, n);
                        n
                    }
                };
                let given = match own.get(&id) {
                    Some(n) => n,
                    None => own.push(id),
                };
                prop_assert_eq!(given, expected);
            }
            for (id, n) in &map {
                prop_assert_eq!(own.get(id), Some(*n));
                prop_assert_eq!(own.ids.get(*n as usize), Some(id));
            }
            prop_assert_eq!(own.ids.len(), map.len());
        }
    }

    /// Claim `c`: always the same content, so its envelopes differ only in signers. Some
    /// name one target twice, some name claims the log never holds.
    fn claim(c: u8) -> Claim {
        let ids = |ns: &[u8]| ns.iter().map(|&n| id_text(&key(n))).collect::<Vec<_>>();
        Claim {
            id: id_text(&key(c)),
            kind: if c.is_multiple_of(3) {
                Kind::Falsification
            } else {
                Kind::Assertion
            },
            target: if c.is_multiple_of(3) {
                ids(&[c / 2, c / 2])
            } else {
                Vec::new()
            },
            depends_on: ids(&[c / 2 + 40, c / 4]),
            origin: OriginKind::AgentAsserted,
            producer: format!("p{c}"),
            anchor_tree: "a".repeat(64),
            timestamp: i64::from(c),
        }
    }

    /// The body of claim `c`.
    fn body(c: u8) -> crate::claim::Body {
        crate::claim::Body::new(
            serde_json::json!({"assertion": {"form": "prose", "text": format!("c{c}")}}),
        )
    }

    fn signer(v: u8) -> Signer {
        Signer {
            keyid: format!("{v:064x}"),
            role: Role::Agent,
            name: format!("k{v}"),
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Envelope `variant` of claim `c`, signed by one or two keys.
        Envelope {
            c: u8,
            variant: u8,
        },
        KeyAdd(u8),
        KeyRetire(u8),
    }

    fn apply(sink: &mut dyn Apply, ops: &[Op]) {
        for (i, op) in ops.iter().enumerate() {
            let pos = Position {
                n: i as u64,
                segment: 1,
                offset: 100 * i as u64,
            };
            let chain = [i as u8; 32];
            match *op {
                Op::Envelope { c, variant } => {
                    let signers = [signer(variant), signer(variant / 2)];
                    let digest = [
                        c, variant, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1,
                        2, 3, 4, 5, 6, 7, 8, 9, 0,
                    ];
                    sink.apply_envelope(
                        pos,
                        chain,
                        100,
                        &digest,
                        &Accepted {
                            claim: claim(c),
                            signers: signers[..1 + usize::from(variant % 2)].to_vec(),
                            unverified_signatures: 0,
                            text: crate::ingest::Read::Whole(body(c)),
                        },
                    )
                    .unwrap();
                }
                Op::KeyAdd(k) => sink
                    .apply_key_add(
                        pos,
                        chain,
                        100,
                        &KeyAdd {
                            keyid: format!("{k:064x}"),
                            role: Role::Harness,
                            name: format!("k{k}"),
                            public_key: hex::encode([k; 32]),
                        },
                    )
                    .unwrap(),
                Op::KeyRetire(k) => sink
                    .apply_key_retire(pos, chain, 100, &format!("{k:064x}"))
                    .unwrap(),
            }
        }
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                6 => (0u8..30, 0u8..3).prop_map(|(c, variant)| Op::Envelope { c, variant }),
                1 => (0u8..3).prop_map(Op::KeyAdd),
                1 => (0u8..3).prop_map(Op::KeyRetire),
            ],
            0..60,
        )
        .prop_map(|ops| {
            // An envelope appears once in a log.
            let mut seen = std::collections::HashSet::new();
            ops.into_iter()
                .filter(|op| match op {
                    Op::Envelope { c, variant } => seen.insert((*c, *variant)),
                    _ => true,
                })
                .collect()
        })
    }

    const TABLES: [&str; 10] = [
        "meta",
        "nodes",
        "claims",
        "envelope_order",
        "arrivals",
        "by_target",
        "by_premise",
        "keys",
        "incoming",
        "ancestry",
    ];

    /// What the audit that numbers the ids itself finds; the bounded audit, which numbers
    /// them from the index, must find a difference exactly when it does.
    fn audit(index: &Index, ops: &[Op]) -> Vec<(&'static str, Difference)> {
        let r = index.read().unwrap();
        let mut a = Audit::new(&r, usize::MAX, 0);
        apply(&mut a, ops);
        let found = a.finish();
        let mut b = Audit::bounded(&r, usize::MAX);
        apply(&mut b, ops);
        let bounded = b.finish();
        assert_eq!(
            found.is_empty(),
            bounded.is_empty(),
            "the audit found {found:?}, the bounded one {bounded:?}"
        );
        found
    }

    /// An index the writer built from `ops`, which passes the audit of the same `ops`.
    fn built(ops: &[Op]) -> (tempfile::TempDir, Index) {
        let tmp = tempfile::tempdir().unwrap();
        let index = Index::open(&Environments::new(), tmp.path()).unwrap();
        let mut w = index.write().unwrap();
        apply(&mut w, ops);
        w.commit().unwrap();
        assert_eq!(audit(&index, ops), Vec::new());
        (tmp, index)
    }

    /// Changes one entry of one table behind the writer's back: removes it, changes its
    /// value, or adds an entry the log does not account for.
    fn tamper(w: &mut Writer<'_>, table: usize, action: u8, pick: usize) {
        let db = match TABLES[table] {
            "meta" => w.dbs.meta,
            "nodes" => w.dbs.nodes,
            "claims" => w.dbs.claims,
            "envelope_order" => w.dbs.envelope_order,
            "arrivals" => w.dbs.arrivals,
            "by_target" => w.dbs.by_target,
            "by_premise" => w.dbs.by_premise,
            "incoming" => w.dbs.incoming,
            "ancestry" => w.dbs.ancestry,
            _ => w.dbs.keys,
        };
        let entries: Vec<(Vec<u8>, Vec<u8>)> = db
            .iter(&w.txn)
            .unwrap()
            .map(|e| e.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        match (action, entries.get(pick % entries.len().max(1))) {
            (0, Some((k, _))) => {
                db.delete(&mut w.txn, k).unwrap();
            }
            // A node's count of the pairs that name it, one more (of an entry that holds
            // counts, not one an earlier change added).
            (3, Some((k, v)))
                if TABLES[table] == "incoming" && decode::<Incoming>(v, "incoming").is_ok() =>
            {
                let mut incoming: Incoming = decode(v, "incoming").unwrap();
                incoming.count_record();
                db.put(&mut w.txn, k, &encode(&incoming)).unwrap();
            }
            // Another node, or the other claimed flag: a value the table could hold (of an
            // entry that has a node and a flag, not one an earlier change added).
            (4, Some((k, v))) if TABLES[table] == "nodes" && v.len() == 9 => {
                let mut v = v.clone();
                match pick % 3 {
                    0 => v[8] ^= 1,
                    1 => v[7] = v[7].wrapping_add(1),
                    _ => v[7] = v[7].wrapping_sub(1),
                }
                db.put(&mut w.txn, k, &v).unwrap();
            }
            // A record of another kind: a value the table could hold (of a pair that holds a
            // kind, not one an earlier change added).
            (3, Some((k, v))) if TABLES[table] == "by_target" && record_kind(k, v).is_ok() => {
                let kind = record_kind(k, v).unwrap();
                let other = Kind::ALL
                    .into_iter()
                    .filter(|&o| o != kind)
                    .nth(pick % 4)
                    .unwrap();
                db.put(&mut w.txn, k, &record_kind_value(other)).unwrap();
            }
            // Another kind, or a premise's node one off: a value the table could hold (of an
            // entry that holds a claim's ancestry, not one an earlier change added).
            (3, Some((k, v)))
                if TABLES[table] == "ancestry" && AncestryEntry::decode(0, v).is_ok() =>
            {
                let mut entry = AncestryEntry::decode(0, v).unwrap();
                match entry.premises.first_mut() {
                    Some(p) if pick.is_multiple_of(2) => *p ^= 1,
                    _ => {
                        entry.kind = Kind::ALL
                            .into_iter()
                            .filter(|&o| o != entry.kind)
                            .nth(pick % 4)
                            .unwrap()
                    }
                }
                db.put(&mut w.txn, k, &entry.encode()).unwrap();
            }
            // Another entry's value.
            (5, Some((k, _))) => {
                let (_, other) = &entries[(pick / 7) % entries.len()];
                db.put(&mut w.txn, k, other).unwrap();
            }
            (1 | 3 | 4, Some((k, v))) => {
                let mut v = v.clone();
                v.push(1);
                db.put(&mut w.txn, k, &v).unwrap();
            }
            _ => {
                // A key no entry has: longer than any the index writes.
                db.put(&mut w.txn, &[0xee; 70], b"x").unwrap();
            }
        }
    }

    /// A count past 4 bytes is kept aside and read back whole; the other count of the node,
    /// and other nodes, are untouched.
    #[test]
    fn a_tally_keeps_counts_past_four_bytes() {
        let mut t = Tally::default();
        t.push();
        t.push();
        t.small[0] = [u32::MAX - 2, 7];
        for _ in 0..5 {
            t.count(0, 0);
        }
        t.count(0, 1);
        t.count(1, 0);
        let past = u64::from(u32::MAX) + 2;
        assert_eq!(
            t.get(0),
            Incoming {
                records: past + 1,
                dependents: 8
            }
        );
        assert_eq!(
            t.get(1),
            Incoming {
                records: 1,
                dependents: 0
            }
        );
    }

    /// A damaged page of the live index is a finding that names the table, never an error,
    /// and never reported as damage in the log.
    #[test]
    fn a_damaged_index_page_is_a_finding() {
        let ops: Vec<Op> = (0..=250u8)
            .map(|c| Op::Envelope { c, variant: 0 })
            .chain(
                (0..=250u8)
                    .step_by(50)
                    .map(|c| Op::Envelope { c, variant: 1 }),
            )
            .collect();
        let (tmp, index) = built(&ops);
        // The producer "p150" is written only in claim 150's entry: clear the flags of the
        // leaf page that holds it (LMDB's page header: 8 bytes of page number, 2 of padding,
        // 2 of flags).
        let file = tmp.path().join("data.mdb");
        let bytes = std::fs::read(&file).unwrap();
        let at = bytes.windows(4).position(|w| w == b"p150").unwrap();
        let page = at / 4096 * 4096;
        {
            use std::io::{Seek, SeekFrom, Write};
            let mut f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
            f.seek(SeekFrom::Start(page as u64 + 10)).unwrap();
            f.write_all(&[0, 0]).unwrap();
        }
        let found = audit(&index, &ops);
        assert!(
            matches!(found.as_slice(), [("claims", Difference::Unreadable(_))]),
            "{found:?}"
        );
        drop(index);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

        /// An index the writer built from a log passes the audit of that log; after any one
        /// entry of any table is removed, changed or added, the audit finds it in that table.
        #[test]
        fn the_audit_passes_what_the_writer_built_and_finds_any_one_change(
            ops in ops(),
            table in 0usize..TABLES.len(),
            action in 0u8..4,
            pick in 0usize..1000,
        ) {
            let (_tmp, index) = built(&ops);
            {
                let mut w = index.write().unwrap();
                tamper(&mut w, table, action, pick);
                w.txn.commit().unwrap();
            }
            let found = audit(&index, &ops);
            prop_assert!(
                found.iter().any(|(t, _)| *t == TABLES[table]),
                "{} changed, found {:?}", TABLES[table], found
            );
            drop(index);
        }

        /// After up to three entries of any tables are removed, changed, replaced by another
        /// entry's value or added, the audit that numbers ids from the index finds a
        /// difference exactly when the one that numbers them itself does (the helper
        /// `audit` holds the two to it), and both find any change that is not a no-op.
        #[test]
        fn the_bounded_audit_finds_a_difference_exactly_when_the_full_one_does(
            ops in ops(),
            // `nodes` (the table the bounded audit numbers from) half the time.
            damage in prop::collection::vec(
                (prop_oneof![Just(1usize), 0usize..TABLES.len()], 0u8..6, 0usize..1000),
                1..4,
            ),
        ) {
            let (_tmp, index) = built(&ops);
            let before = index.stored_tables();
            {
                let mut w = index.write().unwrap();
                for &(table, action, pick) in &damage {
                    tamper(&mut w, table, action, pick);
                }
                w.txn.commit().unwrap();
            }
            let changed = index.stored_tables() != before;
            let found = audit(&index, &ops);
            prop_assert_eq!(!found.is_empty(), changed, "{:?}", found);
            drop(index);
        }

        /// With any one entry of the tables a claim's answer rests on gone (as when a damaged
        /// branch page sends a lookup or a walk past it), every read about an id the index
        /// names answers as before or fails as damage (the claim, the records targeting it,
        /// its dependents, and for a stored claim its records by node), and at least one
        /// fails: none answers differently.
        #[test]
        fn a_read_missing_an_entry_answers_as_before_or_fails_as_damage(
            ops in ops(),
            table in prop::sample::select(
                vec!["nodes", "claims", "by_target", "by_premise", "incoming"]
            ),
            pick in 0usize..1000,
        ) {
            let (_tmp, index) = built(&ops);
            // By id the log names: its node and whether it is a stored claim.
            let named: Vec<(IdKey, Node, bool)> = {
                let r = index.read().unwrap();
                (0..=255u8)
                    .map(key)
                    .filter_map(|id| {
                        let node = r.node(&id).unwrap()?;
                        Some((id, node, r.claim(&id).unwrap().is_some()))
                    })
                    .collect()
            };
            // What the fold reads of each, in its order: the claim (a named one), the
            // records targeting it and its dependents, and a stored claim's records by node.
            let answers = |index: &Index| -> Vec<Result<String, bool>> {
                let r = index.read().unwrap();
                let read = |id: &IdKey, node: Node, stored: bool| -> Result<String, IndexError> {
                    let claim = r.named_claim(id)?;
                    let records = r.records_targeting(id)?;
                    let dependents = r.dependents(id)?;
                    let by_node = if stored { Some(r.claim_records(node)?) } else { None };
                    Ok(format!("{claim:?} {records:?} {dependents:?} {by_node:?}"))
                };
                named
                    .iter()
                    .map(|(id, node, stored)| read(id, *node, *stored).map_err(|e| e.is_damage()))
                    .collect()
            };
            let before = answers(&index);
            prop_assert!(before.iter().all(Result::is_ok));
            {
                let mut w = index.write().unwrap();
                let db = match table {
                    "nodes" => w.dbs.nodes,
                    "claims" => w.dbs.claims,
                    "by_target" => w.dbs.by_target,
                    "incoming" => w.dbs.incoming,
                    _ => w.dbs.by_premise,
                };
                let keys: Vec<Vec<u8>> = db
                    .iter(&w.txn)
                    .unwrap()
                    .map(|e| e.unwrap().0.to_vec())
                    .collect();
                let Some(k) = keys.get(pick % keys.len().max(1)) else {
                    return Ok(());
                };
                db.delete(&mut w.txn, k).unwrap();
                w.txn.commit().unwrap();
            }
            let after = answers(&index);
            for (b, a) in before.iter().zip(&after) {
                prop_assert!(a == b || a == &Err(true), "{:?} became {:?}", b, a);
            }
            prop_assert!(after != before, "a {} entry removed unseen", table);
            drop(index);
        }
    }
}

//! Blast radius (docs/blast.md): what a falsification of a claim revokes.
//!
//! Edges run premise → dependent. The closure is discovered breadth-first through the
//! store's premise index (so the cost grows with the closure, never with the log);
//! breadth-first order gives each member its shortest depth. Each member appears once, at
//! that depth, with the smallest-id premise one layer up that reaches it; members are sorted
//! by id within a layer.
//!
//! Two implementations give the same answer:
//! - [`blast`], over any [`ClaimSource`] through the memoizing [`Fold`]: the reference, and
//!   what in-memory sources use;
//! - [`blast_bulk`] (and [`blast_store`], its answer as a [`Blast`]), what the CLI runs: it
//!   reads the closure from the index in bulk (one read transaction; forward walks through
//!   the premise index layer by layer, then through the claim and target tables for all
//!   members in id order, one lightly decoded entry per member), gives members dense numbers
//!   and folds them with `Vec` memos in topological order. Only claims outside the closure
//!   (premises outside it, the targets in `affected`) go through the general [`Fold`]. Its
//!   JSON is written from the arrays ([`BulkBlast::write_json`]).

use crate::claim::Kind;
use crate::fold::{ClaimSource, Fold, FoldError, Status};
use crate::store::index::{id_key, id_text, EdgesRef, IdKey, IndexError, Reader, Table};
use crate::store::{Store, StoreError};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Serialize;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    pub id: String,
    pub kind: &'static str,
    pub status: Status,
    /// The premise it was reached through (None for the root).
    pub via: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layer {
    pub depth: usize,
    pub claims: Vec<Member>,
}

/// A claim outside the closure whose status is decided by a record inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Affected {
    pub id: String,
    pub status: Status,
    /// The deciding record(s) inside the closure.
    pub decided_by: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blast {
    pub root: String,
    /// Members excluding the root.
    pub count: usize,
    pub layers: Vec<Layer>,
    pub affected: Vec<Affected>,
    /// Whether `--depth` left members out.
    pub truncated: bool,
}

/// Computes the blast radius of `root`, down to `max_depth` layers when given, through the
/// general fold (the reference for [`blast_store`]).
pub fn blast<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Blast, FoldError> {
    fold.require(root)?;
    let src = fold.source();

    let mut graph: DiGraph<String, ()> = DiGraph::new();
    let mut index: HashMap<String, NodeIndex> = HashMap::default();
    let root_ix = graph.add_node(root.to_owned());
    index.insert(root.to_owned(), root_ix);
    let mut depth_of: HashMap<NodeIndex, usize> = HashMap::default();
    depth_of.insert(root_ix, 0);

    // Breadth-first discovery through the premise index, one layer at a time.
    let mut frontier = vec![root.to_owned()];
    let mut depth = 0;
    let mut truncated = false;
    while !frontier.is_empty() {
        if max_depth.is_some_and(|m| depth >= m) {
            // Truncated only when some dependent was left out: one already discovered
            // (R→P, R→Q, P→Q with --depth 1: Q is in) is not beyond the cut.
            for id in &frontier {
                if src.dependents(id)?.iter().any(|d| !index.contains_key(d)) {
                    truncated = true;
                    break;
                }
            }
            break;
        }
        let mut next = Vec::new();
        for id in &frontier {
            let from = index[id];
            let mut deps = src.dependents(id)?;
            deps.sort();
            deps.dedup();
            for d in deps {
                let to = match index.get(&d) {
                    Some(&ix) => ix,
                    None => {
                        let ix = graph.add_node(d.clone());
                        index.insert(d.clone(), ix);
                        depth_of.insert(ix, depth + 1);
                        next.push(d);
                        ix
                    }
                };
                graph.update_edge(from, to, ());
            }
        }
        frontier = next;
        depth += 1;
    }

    let mut by_depth: BTreeMap<usize, Vec<(String, Option<String>)>> = BTreeMap::new();
    for (&node, &d) in &depth_of {
        let via = graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .filter(|p| d > 0 && depth_of.get(p) == Some(&(d - 1)))
            .map(|p| graph[p].clone())
            .min();
        by_depth
            .entry(d)
            .or_default()
            .push((graph[node].clone(), via));
    }

    let mut layers = Vec::new();
    let mut members: BTreeSet<String> = BTreeSet::new();
    for (d, mut ids) in by_depth {
        ids.sort();
        let mut claims = Vec::with_capacity(ids.len());
        for (id, via) in ids {
            let c = fold.require(&id)?;
            let status = fold.effective(&id)?.status;
            members.insert(id.clone());
            claims.push(Member {
                kind: c.claim.kind.as_str(),
                id,
                status,
                via: if d == 0 { None } else { via },
            });
        }
        layers.push(Layer { depth: d, claims });
    }

    // Targets outside the closure whose own status a member record decides.
    let mut affected: BTreeMap<String, Affected> = BTreeMap::new();
    for m in &members {
        let c = fold.require(m)?;
        // A record may name the same target twice; it decides it once.
        let targets: BTreeSet<&String> = c.claim.target.iter().collect();
        for t in targets {
            if members.contains(t) || fold.claim(t)?.is_none() {
                continue;
            }
            if fold.own(t)?.decided_by.iter().any(|r| r == m) {
                let status = fold.effective(t)?.status;
                let entry = affected.entry(t.clone()).or_insert_with(|| Affected {
                    id: t.clone(),
                    status,
                    decided_by: Vec::new(),
                });
                entry.decided_by.push(m.clone());
            }
        }
    }

    Ok(Blast {
        root: root.to_owned(),
        count: members.len().saturating_sub(1),
        layers,
        affected: affected.into_values().collect(),
        truncated,
    })
}

// ---------------------------------------------------------------------------------------------
// The bulk blast over the store

/// No member: the root's `via`.
const NONE: u32 = u32::MAX;

fn ix<T>(r: Result<T, IndexError>) -> Result<T, FoldError> {
    r.map_err(|e| FoldError::Store(StoreError::from(e)))
}

fn corrupt(why: String) -> FoldError {
    FoldError::Store(StoreError::Corrupt(why))
}

fn cycle_at(key: &IdKey) -> FoldError {
    corrupt(format!(
        "claim {} takes part in a cycle, which content addressing makes impossible",
        id_text(key)
    ))
}

/// A blast radius computed by [`blast_bulk`]: the same answer as [`Blast`], kept as arrays
/// indexed by member number. Members are numbered layer by layer, by id within a layer, so
/// layer `d` is members `layers[d]..layers[d + 1]` in output order. It writes exactly the
/// JSON of the equal [`Blast`], without making a string per member first.
#[derive(Debug, Clone)]
pub struct BulkBlast {
    root: String,
    keys: Vec<IdKey>,
    layers: Vec<usize>,
    kinds: Vec<Kind>,
    status: Vec<Status>,
    /// The smallest-id premise one layer up ([`NONE`] for the root).
    via: Vec<u32>,
    affected: Vec<Affected>,
    truncated: bool,
}

impl BulkBlast {
    /// Members excluding the root.
    pub fn count(&self) -> usize {
        self.keys.len() - 1
    }

    /// The same result as a [`Blast`].
    pub fn to_blast(&self) -> Blast {
        let layers = self
            .layers
            .windows(2)
            .enumerate()
            .map(|(depth, w)| Layer {
                depth,
                claims: (w[0]..w[1])
                    .map(|i| Member {
                        id: id_text(&self.keys[i]),
                        kind: self.kinds[i].as_str(),
                        status: self.status[i],
                        via: (self.via[i] != NONE)
                            .then(|| id_text(&self.keys[self.via[i] as usize])),
                    })
                    .collect(),
            })
            .collect();
        Blast {
            root: self.root.clone(),
            count: self.count(),
            layers,
            affected: self.affected.clone(),
            truncated: self.truncated,
        }
    }
}

/// `"cl_…"`: a claim id as a JSON string, written from its key.
fn push_id(buf: &mut Vec<u8>, key: &IdKey) {
    const PREFIX: &[u8] = crate::claim::id::ID_PREFIX.as_bytes();
    const START: usize = 1 + PREFIX.len();
    let mut out = [b'"'; START + 64 + 1];
    out[1..START].copy_from_slice(PREFIX);
    // 32 bytes always fill 64 hex digits exactly, so this cannot fail.
    let _ = hex::encode_to_slice(key, &mut out[START..START + 64]);
    buf.extend_from_slice(&out);
}

/// Bytes gathered before they are handed to the writer.
const CHUNK: usize = 1 << 18;

impl BulkBlast {
    /// Writes the JSON of the equal [`Blast`] (serde_json's compact form, field for field),
    /// straight from the member arrays: no `Value` tree, no string per member, and never more
    /// than a chunk of the output in memory.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 512);
        buf.extend_from_slice(b"{\"root\":");
        serde_json::to_writer(&mut buf, &self.root)?;
        buf.extend_from_slice(b",\"count\":");
        buf.extend_from_slice(self.count().to_string().as_bytes());
        buf.extend_from_slice(b",\"layers\":[");
        for (depth, w) in self.layers.windows(2).enumerate() {
            if depth > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(b"{\"depth\":");
            buf.extend_from_slice(depth.to_string().as_bytes());
            buf.extend_from_slice(b",\"claims\":[");
            for i in w[0]..w[1] {
                if i > w[0] {
                    buf.push(b',');
                }
                buf.extend_from_slice(b"{\"id\":");
                push_id(&mut buf, &self.keys[i]);
                buf.extend_from_slice(b",\"kind\":\"");
                buf.extend_from_slice(self.kinds[i].as_str().as_bytes());
                buf.extend_from_slice(b"\",\"status\":\"");
                buf.extend_from_slice(self.status[i].as_str().as_bytes());
                buf.extend_from_slice(b"\",\"via\":");
                match self.keys.get(self.via[i] as usize) {
                    Some(v) if self.via[i] != NONE => push_id(&mut buf, v),
                    _ => buf.extend_from_slice(b"null"),
                }
                buf.push(b'}');
                if buf.len() >= CHUNK {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
            buf.extend_from_slice(b"]}");
        }
        buf.extend_from_slice(b"],\"affected\":");
        serde_json::to_writer(&mut buf, &self.affected)?;
        buf.extend_from_slice(b",\"truncated\":");
        buf.extend_from_slice(if self.truncated { b"true" } else { b"false" });
        buf.push(b'}');
        out.write_all(&buf)
    }
}

/// [`blast_bulk`] as a [`Blast`]: exactly what [`blast`] returns over the store.
pub fn blast_store(
    store: &Store,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Blast, FoldError> {
    Ok(blast_bulk(store, root, max_depth)?.to_blast())
}

/// Computes what [`blast`] computes over the store, reading the closure in bulk: one read
/// transaction discovers the closure and reads each member's entry (kind and edges only) and
/// the records targeting it; own and effective status are folded over member numbers. Claims
/// outside the closure go through the general [`Fold`] afterwards.
pub fn blast_bulk(
    store: &Store,
    root: &str,
    max_depth: Option<usize>,
) -> Result<BulkBlast, FoldError> {
    let root_key = id_key(root).ok_or_else(|| FoldError::NotFound(root.to_owned()))?;
    let c = {
        let r = ix(store.index().read())?;
        read_closure(&r, root_key, max_depth)?
    };
    let n = c.keys.len();

    // The general fold, after the read transaction above has ended (a thread holds one at a
    // time): the effective status of premises outside the closure.
    let mut fold = Fold::new(store);
    let mut outside_status: HashMap<IdKey, Option<Status>> = HashMap::default();
    for (_, p) in &c.outside {
        if let Entry::Vacant(e) = outside_status.entry(*p) {
            let id = id_text(p);
            let status = match fold.claim(&id)? {
                Some(_) => Some(fold.effective(&id)?.status),
                None => None,
            };
            e.insert(status);
        }
    }

    // Effective status in a topological order of the premise edges inside the closure
    // (breadth-first order is not one: a member may depend on a deeper member).
    let revokes = |s: Status| matches!(s, Status::Falsified | Status::Revoked);
    let mut tainted = vec![false; n];
    for (i, p) in &c.outside {
        if outside_status
            .get(p)
            .copied()
            .flatten()
            .is_some_and(revokes)
        {
            tainted[*i as usize] = true;
        }
    }
    // Premises still to fold, per member; dependents inside the closure, per member, as
    // `dependents[out_starts[i]..out_starts[i + 1]]`.
    let mut waiting = c.waiting;
    let mut out_starts = vec![0usize; n + 1];
    for &(_, p) in &c.inside {
        out_starts[p as usize + 1] += 1;
    }
    for i in 0..n {
        out_starts[i + 1] += out_starts[i];
    }
    let mut fill = out_starts.clone();
    let mut dependents = vec![0u32; c.inside.len()];
    for &(d, p) in &c.inside {
        dependents[fill[p as usize]] = d;
        fill[p as usize] += 1;
    }
    drop(fill);
    let mut status = vec![Status::Unevaluated; n];
    let mut ready: Vec<u32> = (0..n as u32)
        .filter(|&i| waiting[i as usize] == 0)
        .collect();
    let mut done = 0;
    while let Some(i) = ready.pop() {
        let i = i as usize;
        done += 1;
        let own = c.own[i];
        status[i] = match own {
            Status::Falsified | Status::Superseded => own,
            _ if tainted[i] => Status::Revoked,
            _ => own,
        };
        for &d in &dependents[out_starts[i]..out_starts[i + 1]] {
            let d = d as usize;
            if revokes(status[i]) {
                tainted[d] = true;
            }
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push(d as u32);
            }
        }
    }
    if done < n {
        let stuck = (0..n).find(|&i| waiting[i] > 0).unwrap_or(0);
        return Err(cycle_at(&c.keys[stuck]));
    }

    // Targets outside the closure whose own status a member record decides (members in id
    // order, so each target's deciders come out sorted).
    let mut deciders = c.targets;
    deciders.sort_unstable_by(|a, b| c.keys[a.0 as usize].cmp(&c.keys[b.0 as usize]));
    let mut affected: BTreeMap<IdKey, Affected> = BTreeMap::new();
    for (m, targets) in deciders {
        let m = id_text(&c.keys[m as usize]);
        for t in targets {
            if c.index.contains_key(&t) {
                continue;
            }
            let tid = id_text(&t);
            if fold.claim(&tid)?.is_none() {
                continue;
            }
            if fold.own(&tid)?.decided_by.contains(&m) {
                let status = fold.effective(&tid)?.status;
                affected
                    .entry(t)
                    .or_insert_with(|| Affected {
                        id: tid,
                        status,
                        decided_by: Vec::new(),
                    })
                    .decided_by
                    .push(m.clone());
            }
        }
    }

    Ok(BulkBlast {
        root: root.to_owned(),
        keys: c.keys,
        layers: c.layers,
        kinds: c.kinds,
        status,
        via: c.via,
        affected: affected.into_values().collect(),
        truncated: c.truncated,
    })
}

/// What one read transaction learns of the closure. Members are numbered layer by layer and
/// by id within a layer, so layer `d` is `keys[layers[d]..layers[d + 1]]`, sorted.
struct Closure {
    keys: Vec<IdKey>,
    index: HashMap<IdKey, u32>,
    layers: Vec<usize>,
    via: Vec<u32>,
    truncated: bool,
    kinds: Vec<Kind>,
    /// (member, premise) for premises inside the closure, as member numbers.
    inside: Vec<(u32, u32)>,
    /// How many premises inside the closure each member has.
    waiting: Vec<u32>,
    /// (member, premise) for premises outside the closure (stored or not).
    outside: Vec<(u32, IdKey)>,
    /// Members that name targets, with their targets (sorted, each once).
    targets: Vec<(u32, Vec<IdKey>)>,
    own: Vec<Status>,
}

/// The second id of a pair key (`first ‖ second`) of the target or premise index.
fn second_of(pair: &[u8]) -> Result<IdKey, IndexError> {
    pair.get(32..)
        .and_then(|b| IdKey::try_from(b).ok())
        .ok_or_else(|| IndexError::Decode {
            what: "pair key".into(),
            why: format!("{} bytes", pair.len()),
        })
}

/// The first 8 bytes of an id as a number, which orders ids as their bytes do when it
/// differs; ids are hashes, so it almost always does.
fn head(key: &IdKey) -> u64 {
    let mut head = [0u8; 8];
    head.copy_from_slice(&key[..8]);
    u64::from_be_bytes(head)
}

/// Ids in byte order, mostly decided by [`head`] without a call to `memcmp`.
fn key_cmp(a: &IdKey, b: &IdKey) -> std::cmp::Ordering {
    head(a).cmp(&head(b)).then_with(|| a.cmp(b))
}

/// Member numbers in id order: sorted by [`head`], then any run that shares it by the whole
/// id.
fn id_order(keys: &[IdKey]) -> Vec<u32> {
    let mut by_prefix: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (head(k), i as u32))
        .collect();
    by_prefix.sort_unstable();
    for run in by_prefix.chunk_by_mut(|a, b| a.0 == b.0) {
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| keys[a.1 as usize].cmp(&keys[b.1 as usize]));
        }
    }
    by_prefix.into_iter().map(|(_, i)| i).collect()
}

/// Discovers the closure breadth-first through the premise index and reads each member's
/// entry and the records targeting it, all in one read transaction. Every read goes through
/// a layer's members in id order with [`Reader::walk_sorted`], so a dense layer is read by
/// stepping through the tables rather than by one descent of the B-tree per member.
fn read_closure(
    r: &Reader<'_>,
    root: IdKey,
    max_depth: Option<usize>,
) -> Result<Closure, FoldError> {
    if !ix(r.has_claim(&root))? {
        return Err(FoldError::NotFound(id_text(&root)));
    }
    let mut keys = vec![root];
    let mut via = vec![NONE];
    let mut index: HashMap<IdKey, u32> = HashMap::default();
    index.insert(root, 0);
    let mut layers = vec![0, 1];
    let mut truncated = false;
    let mut depth = 0;
    // Every premise pair of the index whose premise is a member is read once, here: the
    // ones whose dependent is a member too are the edges inside the closure.
    let mut inside: Vec<(u32, u32)> = Vec::new();
    loop {
        let (start, end) = (layers[depth], layers[depth + 1]);
        // Dependents not yet members, with the member (of this layer) that reaches them.
        let mut found: Vec<(IdKey, u32)> = Vec::new();
        ix(
            r.walk_sorted(Table::Premises, &keys[start..end], |i, pair, _| {
                let d = second_of(pair)?;
                let p = (start + i) as u32;
                match index.get(&d) {
                    Some(&j) => inside.push((j, p)),
                    None => found.push((d, p)),
                }
                Ok(())
            }),
        )?;
        if max_depth.is_some_and(|m| depth >= m) {
            // Truncated only when some dependent was left out (one already discovered is
            // not beyond the cut).
            truncated = !found.is_empty();
            break;
        }
        if found.is_empty() {
            break;
        }
        // The new layer by id; of the members reaching a claim, the one with the smallest
        // number, which is the smallest id, is its `via`.
        found.sort_unstable_by(|a, b| key_cmp(&a.0, &b.0).then(a.1.cmp(&b.1)));
        if keys.len() + found.len() >= NONE as usize {
            return Err(corrupt("the closure exceeds 2^32 claims".into()));
        }
        for reaching in found.chunk_by(|a, b| a.0 == b.0) {
            let (key, v) = reaching[0];
            let j = keys.len() as u32;
            index.insert(key, j);
            keys.push(key);
            via.push(v);
            inside.extend(reaching.iter().map(|&(_, p)| (j, p)));
        }
        layers.push(keys.len());
        depth += 1;
    }

    // Every member in id order, so one forward walk per table reads all their entries: in a
    // large closure most steps land on the next entry, not a new descent of the B-tree.
    let n = keys.len();
    let mut waiting = vec![0u32; n];
    for &(d, _) in &inside {
        waiting[d as usize] += 1;
    }
    let order = id_order(&keys);
    let sorted: Vec<IdKey> = order.iter().map(|&i| keys[i as usize]).collect();
    let mut kinds: Vec<Option<Kind>> = vec![None; n];
    let mut outside = Vec::new();
    let mut targets = Vec::new();
    ix(r.walk_sorted(Table::Claims, &sorted, |pos, key, entry| {
        let i = order[pos];
        let e = EdgesRef::decode(key, entry)?;
        kinds[i as usize] = Some(e.kind);
        // The premise index, read above, pairs each premise with its dependents: when a
        // member names as many premises as it has inside the closure, it names no other
        // (a list with a premise twice is longer than its pairs, and is looked at closely).
        if e.depends_on_len() != waiting[i as usize] as usize {
            for p in e.depends_on() {
                if !index.contains_key(p) {
                    outside.push((i, *p));
                }
            }
        }
        if e.has_target() {
            let mut t: Vec<IdKey> = e.target().copied().collect();
            t.sort_unstable();
            t.dedup();
            targets.push((i, t));
        }
        Ok(())
    }))?;
    let kinds = kinds
        .into_iter()
        .zip(&keys)
        .map(|(k, key)| k.ok_or_else(|| FoldError::NotFound(id_text(key))))
        .collect::<Result<Vec<Kind>, FoldError>>()?;
    // Records targeting members, grouped by member.
    let mut targeting: Vec<(u32, IdKey)> = Vec::new();
    ix(r.walk_sorted(Table::Targets, &sorted, |pos, pair, _| {
        targeting.push((order[pos], second_of(pair)?));
        Ok(())
    }))?;

    let mut own = vec![Status::Unevaluated; n];
    let mut owns = Owns {
        r,
        memo: HashMap::default(),
    };
    for group in targeting.chunk_by(|a, b| a.0 == b.0) {
        let recs: Vec<IdKey> = group.iter().map(|&(_, rec)| rec).collect();
        own[group[0].0 as usize] = owns.decide(&recs)?;
    }

    Ok(Closure {
        keys,
        index,
        layers,
        via,
        truncated,
        kinds,
        inside,
        waiting,
        outside,
        targets,
        own,
    })
}

/// Own statuses (docs/status.md) by id key, memoized over one read transaction: what the
/// records targeting a member decide, and recursively what targets those records.
struct Owns<'a, 'e> {
    r: &'a Reader<'e>,
    /// own status, and the kind (None when the claim is not stored).
    memo: HashMap<IdKey, (Status, Option<Kind>)>,
}

impl Owns<'_, '_> {
    /// What `recs` (every record targeting some claim) decide: the live falsifications,
    /// else the live supersessions, else the live verifications.
    fn decide(&mut self, recs: &[IdKey]) -> Result<Status, FoldError> {
        let (mut falsified, mut superseded, mut verified) = (false, false, false);
        for rec in recs {
            let (status, kind) = self.own(*rec)?;
            if !status.is_live() {
                continue;
            }
            // The target index names only stored records; one that is missing is damage,
            // never a status.
            let kind = kind.ok_or_else(|| {
                corrupt(format!(
                    "the target index names record {}, which is not stored",
                    id_text(rec)
                ))
            })?;
            match kind {
                Kind::Falsification => falsified = true,
                Kind::Supersession => superseded = true,
                Kind::Verification => verified = true,
                Kind::Assertion | Kind::ResidueAcceptance => {}
            }
        }
        Ok(if falsified {
            Status::Falsified
        } else if superseded {
            Status::Superseded
        } else if verified {
            Status::Verified
        } else {
            Status::Unevaluated
        })
    }

    /// own(id) and id's kind, after the own status of every record targeting it (an
    /// explicit post-order, so no chain of records can overflow the stack).
    fn own(&mut self, id: IdKey) -> Result<(Status, Option<Kind>), FoldError> {
        if let Some(&v) = self.memo.get(&id) {
            return Ok(v);
        }
        let mut stack = vec![(id, false)];
        let mut in_progress: HashSet<IdKey> = HashSet::default();
        let mut records: HashMap<IdKey, Vec<IdKey>> = HashMap::default();
        while let Some((x, expanded)) = stack.pop() {
            if self.memo.contains_key(&x) {
                continue;
            }
            if expanded {
                let recs = records.remove(&x).unwrap_or_default();
                let status = self.decide(&recs)?;
                let kind = ix(self.r.claim_kind(&x))?;
                self.memo.insert(x, (status, kind));
                in_progress.remove(&x);
                continue;
            }
            let recs = ix(self.r.records_targeting(&x))?;
            in_progress.insert(x);
            stack.push((x, true));
            for k in &recs {
                if in_progress.contains(k) {
                    return Err(cycle_at(k));
                }
                if !self.memo.contains_key(k) {
                    stack.push((*k, false));
                }
            }
            records.insert(x, recs);
        }
        self.memo.get(&id).copied().ok_or_else(|| cycle_at(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids sharing their first 8 bytes are still ordered by all of them.
    #[test]
    fn id_order_and_key_cmp_follow_the_bytes() {
        let mut keys: Vec<IdKey> = Vec::new();
        for (a, b, c) in [
            (5u8, 1u8, 9u8),
            (5, 1, 2),
            (5, 0, 7),
            (0, 9, 9),
            (255, 0, 0),
            (5, 1, 3),
        ] {
            let mut k = [0u8; 32];
            k[0] = a;
            k[7] = b;
            k[31] = c;
            keys.push(k);
        }
        let mut want: Vec<u32> = (0..keys.len() as u32).collect();
        want.sort_by(|&x, &y| keys[x as usize].cmp(&keys[y as usize]));
        assert_eq!(id_order(&keys), want);
        for x in &keys {
            for y in &keys {
                assert_eq!(key_cmp(x, y), x.cmp(y));
            }
        }
    }
}

//! The bulk blast over the store: the closure read from the index in one read transaction,
//! members given dense numbers and folded with `Vec` memos in topological order.

use super::{corrupt, Affected, Blast, Layer, Member};
use crate::claim::Kind;
use crate::fold::{Fold, FoldError, Status};
use crate::store::index::{
    id_key, id_text, second_node, EdgesRef, IdKey, Incoming, IndexError, Node, Reader, Table,
};
use crate::store::{Store, StoreError};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;

/// No member: the root's `via`.
const NONE: u32 = u32::MAX;

fn ix<T>(r: Result<T, IndexError>) -> Result<T, FoldError> {
    r.map_err(|e| FoldError::Store(StoreError::from(e)))
}

/// The index contradicts itself (`why`): it is damaged (`INDEX_DAMAGED`), and marked so that
/// the next command rebuilds it.
fn contradiction(why: String) -> FoldError {
    FoldError::Store(StoreError::from(IndexError::Inconsistent(why)))
}

fn cycle_at(key: &IdKey) -> FoldError {
    contradiction(format!(
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

impl BulkBlast {
    /// The array form of a [`Blast`] computed another way (through the general fold, at a
    /// tree), so that every front end renders one type. None when an id in it is not a
    /// claim id or a kind is unknown (it did not come from [`blast`]).
    pub fn from_blast(b: &Blast) -> Option<BulkBlast> {
        let mut keys = Vec::new();
        let mut layers = vec![0];
        let mut kinds = Vec::new();
        let mut status = Vec::new();
        let mut number: HashMap<&str, u32> = HashMap::default();
        for layer in &b.layers {
            for m in &layer.claims {
                number.insert(m.id.as_str(), u32::try_from(keys.len()).ok()?);
                keys.push(id_key(&m.id)?);
                kinds.push(kind_of(m.kind)?);
                status.push(m.status);
            }
            layers.push(keys.len());
        }
        let via = b
            .layers
            .iter()
            .flat_map(|l| l.claims.iter())
            .map(|m| match &m.via {
                Some(v) => number.get(v.as_str()).copied(),
                None => Some(NONE),
            })
            .collect::<Option<Vec<u32>>>()?;
        Some(BulkBlast {
            root: b.root.clone(),
            keys,
            layers,
            kinds,
            status,
            via,
            affected: b.affected.clone(),
            truncated: b.truncated,
        })
    }
}

/// The kind spelled `name`.
fn kind_of(name: &str) -> Option<Kind> {
    [
        Kind::Assertion,
        Kind::Falsification,
        Kind::Verification,
        Kind::Supersession,
        Kind::ResidueAcceptance,
    ]
    .into_iter()
    .find(|k| k.as_str() == name)
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
/// the records targeting it; own and effective status are folded over member numbers, and
/// premises outside the closure by a status-only fold in the same transaction. The targets in
/// `affected` go through the general [`Fold`] afterwards.
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
    // time), for the targets in `affected`.
    let mut fold = Fold::new(store);
    let outside_status = &c.outside_status;

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
            if fold.named(&tid)?.is_none() {
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
    /// The effective status of each premise in `outside`; None for one the store does not
    /// hold.
    outside_status: HashMap<IdKey, Option<Status>>,
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
/// entry and the records targeting it, all in one read transaction. The index keys claims
/// and pairs by node, numbers that grow with arrival, so every read goes through a layer's
/// members in node order with [`Reader::walk_sorted`]: a closure whose claims arrived near
/// each other is read by stepping through the tables rather than by one descent of the
/// B-tree per member. Members are then numbered by layer and by id within a layer.
fn read_closure(
    r: &Reader<'_>,
    root: IdKey,
    max_depth: Option<usize>,
) -> Result<Closure, FoldError> {
    let Some(root_node) = ix(r.claim_node(&root))? else {
        return Err(FoldError::NotFound(id_text(&root)));
    };
    // Members by discovery number: their nodes, and where each layer starts.
    let mut nodes: Vec<Node> = vec![root_node];
    let mut found_at: HashMap<Node, u32> = HashMap::default();
    found_at.insert(root_node, 0);
    let mut bounds = vec![0, 1];
    let mut truncated = false;
    let mut depth = 0;
    // Every premise pair of the index whose premise is a member is read once, here: the
    // ones whose dependent is a member too are the edges inside the closure, as (dependent,
    // premise) discovery numbers.
    let mut edges: Vec<(u32, u32)> = Vec::new();
    // The premise pairs read per member, by discovery number: what its entry must count.
    let mut dependents: Vec<u64> = Vec::new();
    loop {
        let (start, end) = (bounds[depth], bounds[depth + 1]);
        let mut layer: Vec<(Node, u32)> = (start..end).map(|j| (nodes[j], j as u32)).collect();
        layer.sort_unstable();
        let layer_nodes: Vec<Node> = layer.iter().map(|&(n, _)| n).collect();
        // Dependents not yet members, with the member (of this layer) that reaches them.
        let mut found: Vec<(Node, u32)> = Vec::new();
        dependents.resize(nodes.len(), 0);
        ix(r.walk_sorted(Table::Premises, &layer_nodes, |i, pair, _| {
            let d = second_node(pair)?;
            let p = layer[i].1;
            dependents[p as usize] += 1;
            match found_at.get(&d) {
                Some(&j) => edges.push((j, p)),
                None => found.push((d, p)),
            }
            Ok(())
        }))?;
        if max_depth.is_some_and(|m| depth >= m) {
            // Truncated only when some dependent was left out (one already discovered is
            // not beyond the cut).
            truncated = !found.is_empty();
            break;
        }
        if found.is_empty() {
            break;
        }
        found.sort_unstable();
        if nodes.len() + found.len() >= NONE as usize {
            return Err(corrupt("the closure exceeds 2^32 claims".into()));
        }
        for reaching in found.chunk_by(|a, b| a.0 == b.0) {
            let j = nodes.len() as u32;
            found_at.insert(reaching[0].0, j);
            nodes.push(reaching[0].0);
            edges.extend(reaching.iter().map(|&(_, p)| (j, p)));
        }
        bounds.push(nodes.len());
        depth += 1;
    }

    // Every member's entry, in node order: one forward walk through the claims table.
    let n = nodes.len();
    let mut by_node: Vec<(Node, u32)> = nodes
        .iter()
        .enumerate()
        .map(|(j, &x)| (x, j as u32))
        .collect();
    by_node.sort_unstable();
    let sorted_nodes: Vec<Node> = by_node.iter().map(|&(x, _)| x).collect();
    let mut entries: Vec<Option<EdgesRef<'_>>> = vec![None; n];
    ix(
        r.walk_sorted(Table::Claims, &sorted_nodes, |pos, key, entry| {
            entries[by_node[pos].1 as usize] = Some(EdgesRef::decode(key, entry)?);
            Ok(())
        }),
    )?;
    let entries = entries
        .into_iter()
        .enumerate()
        .map(|(j, e)| {
            e.ok_or_else(|| {
                contradiction(format!(
                    "the premise index names node {}, which is not a stored claim",
                    nodes[j]
                ))
            })
        })
        .collect::<Result<Vec<EdgesRef<'_>>, FoldError>>()?;
    // Every member's count of the pairs naming it (`incoming`), by discovery number, read
    // the same way: the pairs walked must be that many, or a damaged page sent a walk past
    // some of them.
    let mut counts: Vec<Option<Incoming>> = vec![None; n];
    ix(
        r.walk_sorted(Table::Incoming, &sorted_nodes, |pos, _, value| {
            counts[by_node[pos].1 as usize] = Some(Incoming::decode(value)?);
            Ok(())
        }),
    )?;
    let counts = counts
        .into_iter()
        .enumerate()
        .map(|(j, c)| {
            c.ok_or_else(|| {
                contradiction(format!("no count of the pairs naming node {}", nodes[j]))
            })
        })
        .collect::<Result<Vec<Incoming>, FoldError>>()?;
    for (j, (e, count)) in entries.iter().zip(&counts).enumerate() {
        let found = dependents.get(j).copied().unwrap_or(0);
        if count.dependents != found {
            return Err(contradiction(format!(
                "the premise index holds {found} dependents of {} where the index counts {}",
                id_text(e.id),
                count.dependents
            )));
        }
    }

    // Member numbers: by layer, and by id within a layer.
    let mut number = vec![0u32; n];
    let mut layer_of = vec![0u32; n];
    for (d, w) in bounds.windows(2).enumerate() {
        let mut layer: Vec<u32> = (w[0] as u32..w[1] as u32).collect();
        layer.sort_unstable_by(|&a, &b| key_cmp(entries[a as usize].id, entries[b as usize].id));
        for (k, &j) in layer.iter().enumerate() {
            number[j as usize] = (w[0] + k) as u32;
            layer_of[j as usize] = d as u32;
        }
    }
    // The entries by member number.
    let mut members: Vec<Option<EdgesRef<'_>>> = vec![None; n];
    for (j, e) in entries.into_iter().enumerate() {
        members[number[j] as usize] = Some(e);
    }
    let members: Vec<EdgesRef<'_>> = members.into_iter().flatten().collect();
    let keys: Vec<IdKey> = members.iter().map(|e| *e.id).collect();
    let kinds: Vec<Kind> = members.iter().map(|e| e.kind).collect();
    let index: HashMap<IdKey, u32> = keys
        .iter()
        .enumerate()
        .map(|(m, k)| (*k, m as u32))
        .collect();
    // The premise a member was reached through: of those one layer up, the smallest id.
    let mut via = vec![NONE; n];
    let mut inside = Vec::with_capacity(edges.len());
    let mut waiting = vec![0u32; n];
    for &(d, p) in &edges {
        let (dm, pm) = (number[d as usize], number[p as usize]);
        inside.push((dm, pm));
        waiting[dm as usize] += 1;
        if layer_of[p as usize] + 1 == layer_of[d as usize] {
            via[dm as usize] = via[dm as usize].min(pm);
        }
    }

    // Premises outside the closure and targets, member by member in id order.
    let mut outside = Vec::new();
    let mut targets = Vec::new();
    for i in id_order(&keys) {
        let e = &members[i as usize];
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
    }

    // Records targeting members, grouped by member.
    let mut targeting: Vec<(u32, Node)> = Vec::new();
    ix(
        r.walk_sorted(Table::Targets, &sorted_nodes, |pos, pair, _| {
            targeting.push((number[by_node[pos].1 as usize], second_node(pair)?));
            Ok(())
        }),
    )?;
    targeting.sort_unstable();
    // And the records targeting each member, as counted.
    let mut records = vec![0u64; n];
    for &(m, _) in &targeting {
        records[m as usize] += 1;
    }
    for (j, count) in counts.iter().enumerate() {
        let m = number[j] as usize;
        if count.records != records[m] {
            return Err(contradiction(format!(
                "the target index holds {} records targeting {} where the index counts {}",
                records[m],
                id_text(&keys[m]),
                count.records
            )));
        }
    }
    let mut own = vec![Status::Unevaluated; n];
    let mut owns = Owns {
        r,
        memo: HashMap::default(),
    };
    for group in targeting.chunk_by(|a, b| a.0 == b.0) {
        let recs: Vec<Node> = group.iter().map(|&(_, rec)| rec).collect();
        own[group[0].0 as usize] = owns.decide(&recs)?;
    }
    let outside_status = effective_outside(r, &mut owns, outside.iter().map(|(_, p)| p))?;

    Ok(Closure {
        keys,
        index,
        layers: bounds,
        via,
        truncated,
        kinds,
        inside,
        waiting,
        outside,
        targets,
        own,
        outside_status,
    })
}

/// The effective status (docs/status.md) of each claim in `ids`, claims the index names
/// (premises of members outside the closure): None for one the log names and does not hold.
/// Status only, without the paths to the falsified roots that [`Fold::effective`] keeps: the
/// premise ancestry is read from the claims table (id, kind and edges of each entry), own
/// statuses through `owns`, and statuses folded premises first. No compromise applies here
/// (the caller folds through [`Fold`] when one is declared).
fn effective_outside<'k>(
    r: &Reader<'_>,
    owns: &mut Owns<'_, '_>,
    ids: impl Iterator<Item = &'k IdKey>,
) -> Result<HashMap<IdKey, Option<Status>>, FoldError> {
    // The node of each id met, None when the log names it and does not hold it; and the
    // premises each stored claim met names.
    let mut node_of: HashMap<IdKey, Option<Node>> = HashMap::default();
    let mut named: Vec<(Node, IdKey, Kind, Vec<IdKey>)> = Vec::new();
    let mut starts: Vec<IdKey> = Vec::new();
    let mut queue: Vec<IdKey> = Vec::new();
    for id in ids {
        starts.push(*id);
        if !node_of.contains_key(id) {
            queue.push(*id);
        }
        // Read the ancestry: each id's entry once.
        while let Some(id) = queue.pop() {
            if node_of.contains_key(&id) {
                continue;
            }
            let found = ix(r.named_claim_edges(&id))?;
            node_of.insert(id, found.map(|(node, _)| node));
            if let Some((node, e)) = found {
                let ps: Vec<IdKey> = e.depends_on().copied().collect();
                queue.extend(ps.iter().filter(|p| !node_of.contains_key(*p)));
                named.push((node, id, e.kind, ps));
            }
        }
    }
    // Each stored claim's stored premises, by node (sorted, each once), and its id and kind.
    let mut premises: HashMap<Node, Vec<Node>> = HashMap::default();
    let mut entry_of: HashMap<Node, (IdKey, Kind)> = HashMap::default();
    for (node, id, kind, ps) in named {
        entry_of.insert(node, (id, kind));
        let mut nodes: Vec<Node> = ps
            .iter()
            .filter_map(|p| node_of.get(p).copied().flatten())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        premises.insert(node, nodes);
    }

    // Effective statuses, premises first (an explicit post-order: no ancestry is too deep).
    let revokes = |s: Status| matches!(s, Status::Falsified | Status::Revoked);
    let mut effective: HashMap<Node, Status> = HashMap::default();
    let mut in_progress: HashSet<Node> = HashSet::default();
    for id in &starts {
        let Some(start) = node_of.get(id).copied().flatten() else {
            continue;
        };
        let mut stack = vec![(start, false)];
        while let Some((x, expanded)) = stack.pop() {
            if effective.contains_key(&x) {
                continue;
            }
            let ps = premises.get(&x).map(Vec::as_slice).unwrap_or(&[]);
            if expanded {
                let own = match entry_of.get(&x) {
                    Some(&(id, kind)) => owns.own_read(x, &id, kind)?,
                    None => owns.own(x)?.0,
                };
                let mut tainted = false;
                for p in ps {
                    match effective.get(p) {
                        Some(&s) => tainted |= revokes(s),
                        None => return Err(owns.cycle_at(*p)),
                    }
                }
                let status = match own {
                    Status::Falsified | Status::Superseded => own,
                    _ if tainted => Status::Revoked,
                    _ => own,
                };
                effective.insert(x, status);
                in_progress.remove(&x);
                continue;
            }
            in_progress.insert(x);
            stack.push((x, true));
            for &p in ps {
                if in_progress.contains(&p) {
                    return Err(owns.cycle_at(p));
                }
                if !effective.contains_key(&p) {
                    stack.push((p, false));
                }
            }
        }
    }
    Ok(starts
        .into_iter()
        .map(|id| {
            let status = node_of
                .get(&id)
                .copied()
                .flatten()
                .and_then(|n| effective.get(&n).copied());
            (id, status)
        })
        .collect())
}

/// Own statuses (docs/status.md) by node, memoized over one read transaction: what the
/// records targeting a member decide, and recursively what targets those records.
struct Owns<'a, 'e> {
    r: &'a Reader<'e>,
    /// own status, and the kind.
    memo: HashMap<Node, (Status, Kind)>,
}

impl Owns<'_, '_> {
    /// What `recs` (every record targeting some claim) decide: the live falsifications,
    /// else the live supersessions, else the live verifications.
    fn decide(&mut self, recs: &[Node]) -> Result<Status, FoldError> {
        let mut live = Vec::with_capacity(recs.len());
        for &rec in recs {
            let (status, kind) = self.own(rec)?;
            if status.is_live() {
                live.push(kind);
            }
        }
        Ok(crate::fold::own_by_kinds(live))
    }

    /// own(node) of a stored claim whose entry the caller has read (its id and kind): a
    /// claim no record targets is unevaluated without reading its entry again.
    fn own_read(&mut self, node: Node, id: &IdKey, kind: Kind) -> Result<Status, FoldError> {
        if let Some(&(status, _)) = self.memo.get(&node) {
            return Ok(status);
        }
        if ix(self.r.records_of(node, id))?.is_empty() {
            self.memo.insert(node, (Status::Unevaluated, kind));
            return Ok(Status::Unevaluated);
        }
        Ok(self.own(node)?.0)
    }

    /// A cycle through the node `node` (a stored record: only those target anything).
    fn cycle_at(&self, node: Node) -> FoldError {
        match ix(self.r.node_claim(node)) {
            Ok(Some((id, _))) => cycle_at(&id),
            Ok(None) => contradiction(format!("node {node} takes part in a cycle")),
            Err(e) => e,
        }
    }

    /// own(node) and its kind, after the own status of every record targeting it (an
    /// explicit post-order, so no chain of records can overflow the stack). The node is a
    /// stored claim (a member, or a record targeting one): its entry must be there, and
    /// count the records the target index holds for it (`Reader::claim_records`).
    fn own(&mut self, node: Node) -> Result<(Status, Kind), FoldError> {
        if let Some(&v) = self.memo.get(&node) {
            return Ok(v);
        }
        let mut stack = vec![(node, false)];
        let mut in_progress: HashSet<Node> = HashSet::default();
        let mut records: HashMap<Node, (Vec<Node>, Kind)> = HashMap::default();
        while let Some((x, expanded)) = stack.pop() {
            if self.memo.contains_key(&x) {
                continue;
            }
            if expanded {
                let Some((recs, kind)) = records.remove(&x) else {
                    return Err(self.cycle_at(x));
                };
                let status = self.decide(&recs)?;
                self.memo.insert(x, (status, kind));
                in_progress.remove(&x);
                continue;
            }
            let (recs, kind) = ix(self.r.claim_records(x))?;
            in_progress.insert(x);
            stack.push((x, true));
            for &k in &recs {
                if in_progress.contains(&k) {
                    return Err(self.cycle_at(k));
                }
                if !self.memo.contains_key(&k) {
                    stack.push((k, false));
                }
            }
            records.insert(x, (recs, kind));
        }
        match self.memo.get(&node) {
            Some(&v) => Ok(v),
            None => Err(self.cycle_at(node)),
        }
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

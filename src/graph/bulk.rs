//! The bulk blast over the store: the closure read from the index in one read transaction,
//! members given dense numbers and folded with `Vec` memos in topological order.

use super::{corrupt, Affected, Blast, Layer, Member};
use crate::claim::Kind;
use crate::fold::{Fold, FoldError, Status};
use crate::store::index::{
    id_key, id_text, record_kind, second_node, AncestryEntry, EdgesRef, IdKey, Incoming,
    IndexError, Node, Reader, Table,
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
    Kind::ALL.into_iter().find(|k| k.as_str() == name)
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
            if c.order
                .binary_search_by(|&i| c.keys[i as usize].cmp(&t))
                .is_ok()
            {
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
    /// Member numbers in id order.
    order: Vec<u32>,
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
/// id. Members are numbered by id within each layer, so the sort is a merge of one sorted
/// run per layer (a stable sort finds and merges such runs).
fn id_order(keys: &[IdKey]) -> Vec<u32> {
    let mut by_prefix: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (head(k), i as u32))
        .collect();
    by_prefix.sort();
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
    // Each layer's nodes are ascending already: the stable sort merges those runs.
    by_node.sort();
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
    // some of them. The records it counts are checked below, once they are read.
    const UNCOUNTED: u64 = u64::MAX;
    let mut records_counted: Vec<u64> = vec![UNCOUNTED; n];
    ix(
        r.walk_sorted(Table::Incoming, &sorted_nodes, |pos, _, value| {
            let j = by_node[pos].1 as usize;
            let count = Incoming::decode(value)?;
            let found = dependents.get(j).copied().unwrap_or(0);
            if count.dependents != found {
                return Err(IndexError::Inconsistent(format!(
                    "the premise index holds {found} dependents of {} where the index counts {}",
                    id_text(entries[j].id),
                    count.dependents
                )));
            }
            records_counted[j] = count.records;
            Ok(())
        }),
    )?;
    if let Some(j) = records_counted.iter().position(|&c| c == UNCOUNTED) {
        return Err(contradiction(format!(
            "no count of the pairs naming node {}",
            nodes[j]
        )));
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
    // The discovery number of each member, by member number.
    let mut discovered = vec![0u32; n];
    for (j, &m) in number.iter().enumerate() {
        discovered[m as usize] = j as u32;
    }
    let member = |m: u32| &entries[discovered[m as usize] as usize];
    let keys: Vec<IdKey> = (0..n as u32).map(|m| *member(m).id).collect();
    let kinds: Vec<Kind> = (0..n as u32).map(|m| member(m).kind).collect();
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
    // Each member's premises inside the closure, as `premises_in[starts[i]..starts[i + 1]]`.
    let mut starts = vec![0usize; n + 1];
    for i in 0..n {
        starts[i + 1] = starts[i] + waiting[i] as usize;
    }
    let mut premises_in = vec![0u32; inside.len()];
    {
        let mut fill = starts.clone();
        for &(dm, pm) in &inside {
            premises_in[fill[dm as usize]] = pm;
            fill[dm as usize] += 1;
        }
    }

    // Premises outside the closure and targets, member by member in id order.
    let mut outside = Vec::new();
    let mut targets = Vec::new();
    let order = id_order(&keys);
    for &i in &order {
        let e = member(i);
        // The premise index, read above, pairs each premise with its dependents: when a
        // member names as many premises as it has inside the closure, it names no other
        // (a list with a premise twice is longer than its pairs, and is looked at closely).
        if e.depends_on_len() != waiting[i as usize] as usize {
            let inside_here = &premises_in[starts[i as usize]..starts[i as usize + 1]];
            for p in e.depends_on() {
                if !inside_here.iter().any(|&pm| &keys[pm as usize] == p) {
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

    // Records targeting members, with their kinds (which the pairs hold), grouped by member.
    let mut targeting: Vec<(u32, Node, Kind)> = Vec::new();
    ix(
        r.walk_sorted(Table::Targets, &sorted_nodes, |pos, pair, value| {
            let m = number[by_node[pos].1 as usize];
            targeting.push((m, second_node(pair)?, record_kind(pair, value)?));
            Ok(())
        }),
    )?;
    targeting.sort_unstable_by_key(|&(m, rec, _)| (m, rec));
    // And the records targeting each member, as counted.
    let mut records = vec![0u64; n];
    for &(m, _, _) in &targeting {
        records[m as usize] += 1;
    }
    for (j, &counted) in records_counted.iter().enumerate() {
        let m = number[j] as usize;
        if counted != records[m] {
            return Err(contradiction(format!(
                "the target index holds {} records targeting {} where the index counts \
                 {counted}",
                records[m],
                id_text(&keys[m]),
            )));
        }
    }
    let mut own = vec![Status::Unevaluated; n];
    let mut owns = Owns {
        r,
        memo: HashMap::default(),
        loaded: HashMap::default(),
    };
    // Every record targeting a member, and what decides each of them, read in node order.
    let mut recs: Vec<(Node, Kind)> = targeting
        .iter()
        .map(|&(_, rec, kind)| (rec, kind))
        .collect();
    each_record_once(&mut recs)?;
    owns.load(recs)?;
    for group in targeting.chunk_by(|a, b| a.0 == b.0) {
        let recs: Vec<Node> = group.iter().map(|&(_, rec, _)| rec).collect();
        own[group[0].0 as usize] = owns.decide(&recs)?;
    }
    let outside_status = effective_outside(r, &mut owns, outside.iter().map(|(_, p)| p))?;

    Ok(Closure {
        keys,
        order,
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
/// Status only, without the paths to the falsified roots that [`Fold::effective`] keeps. The
/// premise ancestry is read a generation at a time from the index's `ancestry` table (each
/// claim's kind and premises by node: one forward walk per generation, in node order, and no
/// lookup of a premise by id), own statuses through `owns` (read ahead the same way), and
/// statuses folded premises first over the ancestry numbered densely in node order. No
/// compromise applies here (the caller folds through [`Fold`] when one is declared).
fn effective_outside<'k>(
    r: &Reader<'_>,
    owns: &mut Owns<'_, '_>,
    ids: impl Iterator<Item = &'k IdKey>,
) -> Result<HashMap<IdKey, Option<Status>>, FoldError> {
    let starts: Vec<IdKey> = ids.copied().collect();
    // The node of each id asked about, None when the log names it and does not hold it;
    // and the ids of the stored ones, by node, to hold their entries to.
    let mut node_of: HashMap<IdKey, Option<Node>> = HashMap::default();
    let mut start_ids: HashMap<Node, IdKey> = HashMap::default();
    for id in &starts {
        if node_of.contains_key(id) {
            continue;
        }
        let value = ix(r.named_node(id))?;
        node_of.insert(*id, value.claimed.then_some(value.node));
        if value.claimed {
            start_ids.insert(value.node, *id);
        }
    }
    // The stored claims met: node, kind, and where their premises' nodes lie in
    // `premise_nodes`.
    let mut met: Vec<(Node, Kind, usize, usize)> = Vec::new();
    let mut premise_nodes: Vec<Node> = Vec::new();
    let mut frontier: Vec<Node> = start_ids.keys().copied().collect();
    let mut seen: HashSet<Node> = frontier.iter().copied().collect();
    frontier.sort_unstable();
    while !frontier.is_empty() {
        let mut next: Vec<Node> = Vec::new();
        let mut read = vec![false; frontier.len()];
        ix(r.walk_sorted(Table::Ancestry, &frontier, |i, _, entry| {
            let node = frontier[i];
            let e = AncestryEntry::decode(node, entry)?;
            if let Some(id) = start_ids.get(&node).filter(|id| **id != e.id) {
                return Err(IndexError::Inconsistent(format!(
                    "the ancestry entry of node {node} is not {}'s",
                    id_text(id)
                )));
            }
            let from = premise_nodes.len();
            for &p in &e.premises {
                premise_nodes.push(p);
                if seen.insert(p) {
                    next.push(p);
                }
            }
            met.push((node, e.kind, from, premise_nodes.len()));
            read[i] = true;
            Ok(())
        }))?;
        // A node without an entry is a premise the log names and does not hold, unless the
        // index says elsewhere that it holds the claim: then it is damage.
        for (i, &node) in frontier.iter().enumerate() {
            if read[i] {
                continue;
            }
            if start_ids.contains_key(&node) {
                return Err(contradiction(format!(
                    "its nodes table holds the claim numbered {node} and its ancestry table \
                     has no entry for it"
                )));
            }
            ix(r.without_ancestry(node))?;
        }
        next.sort_unstable();
        frontier = next;
    }
    // The ancestry numbered in node order; what decides each one's own status, read ahead.
    met.sort_unstable_by_key(|m| m.0);
    let nodes: Vec<Node> = met.iter().map(|m| m.0).collect();
    owns.load(met.iter().map(|m| (m.0, m.1)).collect())?;
    let number = |node: Node| {
        nodes
            .binary_search(&node)
            .map_err(|_| contradiction(format!("node {node} was named and its entry not read")))
    };
    // Each one's stored premises, by number (sorted, each once), as
    // `premises[premise_starts[a]..premise_starts[a + 1]]`; a premise met without an entry
    // is one the log does not hold.
    let mut premise_starts: Vec<usize> = Vec::with_capacity(met.len() + 1);
    let mut premises: Vec<u32> = Vec::new();
    let mut these: Vec<u32> = Vec::new();
    premise_starts.push(0);
    for &(_, _, from, to) in &met {
        these.clear();
        for p in &premise_nodes[from..to] {
            if let Ok(a) = nodes.binary_search(p) {
                these.push(a as u32);
            }
        }
        these.sort_unstable();
        these.dedup();
        premises.extend_from_slice(&these);
        premise_starts.push(premises.len());
    }
    drop(premise_nodes);

    // Effective statuses, premises first (an explicit post-order: no ancestry is too deep).
    let revokes = |s: Status| matches!(s, Status::Falsified | Status::Revoked);
    let mut effective: Vec<Option<Status>> = vec![None; met.len()];
    let mut in_progress = vec![false; met.len()];
    for id in &starts {
        let Some(start) = node_of.get(id).copied().flatten() else {
            continue;
        };
        let mut stack = vec![(number(start)?, false)];
        while let Some((x, expanded)) = stack.pop() {
            if effective[x].is_some() {
                continue;
            }
            let ps = &premises[premise_starts[x]..premise_starts[x + 1]];
            if expanded {
                let own = owns.own(nodes[x])?.0;
                let mut tainted = false;
                for &p in ps {
                    match effective[p as usize] {
                        Some(s) => tainted |= revokes(s),
                        None => return Err(owns.cycle_at(nodes[p as usize])),
                    }
                }
                effective[x] = Some(match own {
                    Status::Falsified | Status::Superseded => own,
                    _ if tainted => Status::Revoked,
                    _ => own,
                });
                in_progress[x] = false;
                continue;
            }
            in_progress[x] = true;
            stack.push((x, true));
            for &p in ps {
                let p = p as usize;
                if in_progress[p] {
                    return Err(owns.cycle_at(nodes[p]));
                }
                if effective[p].is_none() {
                    stack.push((p, false));
                }
            }
        }
    }
    starts
        .into_iter()
        .map(|id| {
            let status = match node_of.get(&id).copied().flatten() {
                Some(node) => effective[number(node)?],
                None => None,
            };
            Ok((id, status))
        })
        .collect()
}

/// Sorts records named by target pairs (`(record, kind)`) by node and keeps each once. Two
/// pairs naming one record hold its one kind: any other answer is damage.
fn each_record_once(records: &mut Vec<(Node, Kind)>) -> Result<(), FoldError> {
    records.sort_unstable_by_key(|&(rec, _)| rec);
    if let Some(w) = records
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
    {
        return Err(contradiction(format!(
            "two target pairs name record node {} with different kinds",
            w[0].0
        )));
    }
    records.dedup_by_key(|&mut (rec, _)| rec);
    Ok(())
}

/// Own statuses (docs/status.md) by node, memoized over one read transaction: what the
/// records targeting a member decide, and recursively what targets those records.
struct Owns<'a, 'e> {
    r: &'a Reader<'e>,
    /// own status, and the kind.
    memo: HashMap<Node, (Status, Kind)>,
    /// Read ahead by [`Owns::load`]: the records targeting a node, and its kind.
    loaded: HashMap<Node, (Vec<Node>, Kind)>,
}

impl Owns<'_, '_> {
    /// Reads ahead what the own status of each stored claim in `claims` (nodes ascending,
    /// each once, with their kinds) needs: the records targeting it, the records targeting
    /// those, and so on, a generation at a time, each table walked forward in node order
    /// instead of a lookup per claim. A record's kind comes with the pair that names it, so
    /// no record's entry is read. A claim no record targets is decided here (unevaluated);
    /// the rest wait in `loaded` for [`Owns::own`].
    fn load(&mut self, claims: Vec<(Node, Kind)>) -> Result<(), FoldError> {
        let mut level: Vec<(Node, Kind)> = claims
            .into_iter()
            .filter(|(x, _)| !self.memo.contains_key(x) && !self.loaded.contains_key(x))
            .collect();
        while !level.is_empty() {
            let nodes: Vec<Node> = level.iter().map(|&(x, _)| x).collect();
            // Every stored claim has its count of the pairs naming it; the pairs walked
            // must be that many.
            let mut counts: Vec<Option<u64>> = vec![None; nodes.len()];
            ix(self.r.walk_sorted(Table::Incoming, &nodes, |i, _, value| {
                counts[i] = Some(Incoming::decode(value)?.records);
                Ok(())
            }))?;
            let mut records: Vec<Vec<(Node, Kind)>> = vec![Vec::new(); nodes.len()];
            ix(self
                .r
                .walk_sorted(Table::Targets, &nodes, |i, pair, value| {
                    records[i].push((second_node(pair)?, record_kind(pair, value)?));
                    Ok(())
                }))?;
            let mut next: Vec<(Node, Kind)> = Vec::new();
            for (i, ((x, kind), recs)) in level.into_iter().zip(records).enumerate() {
                let Some(count) = counts[i] else {
                    return Err(contradiction(format!(
                        "its incoming table has no entry for node {x}"
                    )));
                };
                if count != recs.len() as u64 {
                    return Err(contradiction(format!(
                        "by_target holds {} entries for node {x} where the index counts \
                         {count}",
                        recs.len()
                    )));
                }
                if recs.is_empty() {
                    self.memo.insert(x, (Status::Unevaluated, kind));
                    continue;
                }
                next.extend(
                    recs.iter().filter(|(r, _)| {
                        !self.memo.contains_key(r) && !self.loaded.contains_key(r)
                    }),
                );
                self.loaded
                    .insert(x, (recs.into_iter().map(|(r, _)| r).collect(), kind));
            }
            each_record_once(&mut next)?;
            next.retain(|(r, _)| !self.loaded.contains_key(r));
            level = next;
        }
        Ok(())
    }

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
    /// stored claim (a member, or a record targeting one), read ahead by [`Owns::load`]
    /// (its kind from the pair naming it, its records checked against their count), or
    /// else read here, where its entry must be there and count the records the target
    /// index holds for it (`Reader::claim_records`).
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
            let (recs, kind) = match self.loaded.remove(&x) {
                Some(read) => read,
                None => ix(self.r.claim_records(x))?,
            };
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

    /// Records named by several target pairs come out once each, in node order; two pairs
    /// giving one record two kinds are damage, not a choice between them.
    #[test]
    fn each_record_once_keeps_one_kind_per_record() {
        let mut records = vec![
            (9, Kind::Verification),
            (3, Kind::Falsification),
            (9, Kind::Verification),
        ];
        each_record_once(&mut records).unwrap();
        assert_eq!(
            records,
            vec![(3, Kind::Falsification), (9, Kind::Verification)]
        );
        let mut records = vec![(4, Kind::Verification), (4, Kind::Falsification)];
        let err = each_record_once(&mut records).unwrap_err();
        assert!(err.to_string().contains("different kinds"), "{err}");
    }

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

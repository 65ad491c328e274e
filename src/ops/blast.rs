//! `blast`: what a falsification of a claim revokes, layer by layer, or (`invert`) what the
//! claim rests on.

use super::ids::{require_claim_ids, resolve_claim_id};
use super::picture::{shown, Shown};
use super::tree::{tree_dir, tree_ids_at};
use super::{Context, Failure};
use crate::anchor::AtTree;
use crate::claim::Gist;
use crate::fold::{ClaimSource, Compromise, Fold};
use crate::graph::{blast_bulk, rests_on, BulkBlast};
use crate::store::Store;
use crate::tree::Selection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// What `blast` is asked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BlastInput {
    /// The claim id (whole, or a unique prefix).
    pub id: String,
    /// Only this many layers of dependents (inverted: of premises).
    pub depth: Option<usize>,
    /// What the claim rests on instead: its premises, theirs, and so on, in the same
    /// layers (`affected` is then empty).
    #[serde(default)]
    pub invert: bool,
    /// Also read each claim's text and premises from the log (for people: the tree of the
    /// radius; costs a read per claim).
    pub with_texts: bool,
    /// Statuses at the tree in this directory (only the observations that apply there
    /// count); None: log-wide.
    #[serde(default)]
    pub at: Option<PathBuf>,
    /// With `at`: keep the files ignore rules leave out of the tree.
    #[serde(default)]
    pub no_ignore: bool,
    /// Also what a picture of the answer shows, at most this many claims (the root, the
    /// layers in order, then the affected claims and the records deciding each).
    #[serde(default)]
    pub picture: Option<usize>,
}

/// What `blast` answers: its JSON (`root`, `count`, `layers`, `affected`, …) is the
/// command's `data`, and [`BulkBlast::write_json`] writes the same bytes without building
/// a value.
#[derive(Debug, Clone)]
pub struct BlastOutput {
    pub bulk: BulkBlast,
    /// Whether it is what the root rests on (`invert`).
    pub inverted: bool,
    /// With `with_texts`: the `assertion.text` of each member and affected claim that has
    /// one.
    pub texts: HashMap<String, Value>,
    /// With `with_texts`: each member's premises (`dependsOn`), read in the same snapshot.
    pub premises: HashMap<String, Vec<String>>,
    /// With `picture`: the claims a picture of the answer shows.
    pub picture: Option<Shown>,
}

impl Serialize for BlastOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.bulk.to_blast().serialize(s)
    }
}

/// The blast radius of a claim (or what it rests on), as one snapshot of the log.
pub fn blast(ctx: &Context, input: &BlastInput) -> Result<BlastOutput, Failure> {
    require_claim_ids([&input.id])?;
    let store = ctx.open_store()?;
    // One read transaction for the whole answer: a snapshot as of one state of the log.
    let _snapshot = store.pin()?;
    let id = resolve_claim_id(&store, &input.id)?;
    let (bulk, picture) = match &input.at {
        None => {
            let mut fold = Fold::new(&store);
            let bulk = if input.invert {
                bulk_of(&rests_on(&mut fold, &id, input.depth)?)?
            } else if fold.has_compromise() {
                // A compromise declared by the team's trust policy decides statuses the bulk
                // reading does not see: the reference blast through the fold then.
                bulk_of(&crate::graph::blast(&mut fold, &id, input.depth)?)?
            } else {
                // Log-wide: the radius read from the index in bulk.
                blast_bulk(&store, &id, input.depth)?
            };
            let picture = picture_of(&store, &mut fold, &bulk, input.picture)?;
            (bulk, picture)
        }
        Some(at) => {
            // At a tree: through the fold over what applies there (the reference blast).
            let dir = tree_dir(Some(at))?;
            let selection = Selection::from_no_ignore(input.no_ignore);
            let ids = tree_ids_at(&dir, selection, ctx.observer())?;
            let view = AtTree::new(&store, ids, &dir, selection);
            let mut fold = Fold::new(&view);
            let b = if input.invert {
                rests_on(&mut fold, &id, input.depth)?
            } else {
                crate::graph::blast(&mut fold, &id, input.depth)?
            };
            let bulk = bulk_of(&b)?;
            let picture = picture_of(&store, &mut fold, &bulk, input.picture)?;
            (bulk, picture)
        }
    };
    let mut texts = HashMap::new();
    let mut premises = HashMap::new();
    if input.with_texts {
        // Claim texts live in the log; read only when asked.
        let b = bulk.to_blast();
        let members = b.layers.iter().flat_map(|l| l.claims.iter().map(|m| &m.id));
        for (id, member) in members
            .map(|id| (id, true))
            .chain(b.affected.iter().map(|x| (&x.id, false)))
        {
            if texts.contains_key(id) || premises.contains_key(id) {
                continue;
            }
            let Some(c) = store.get(id)? else {
                continue;
            };
            if let Some(t) = c.body.text_value() {
                texts.insert(id.clone(), t.clone());
            }
            if member {
                premises.insert(id.clone(), c.claim.depends_on);
            }
        }
    }
    Ok(BlastOutput {
        bulk,
        inverted: input.invert,
        texts,
        premises,
        picture,
    })
}

fn bulk_of(b: &crate::graph::Blast) -> Result<BulkBlast, Failure> {
    BulkBlast::from_blast(b)
        .ok_or_else(|| Failure::Internal("blast: a member is not a claim".into()))
}

/// What a picture of `bulk` shows, its statuses folded by `fold`: the root, the layers in
/// order (a cap cuts the deepest), then the affected claims, and the records deciding each.
fn picture_of<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    bulk: &BulkBlast,
    max: Option<usize>,
) -> Result<Option<Shown>, Failure> {
    let Some(max) = max else {
        return Ok(None);
    };
    let b = bulk.to_blast();
    let ids: Vec<String> = b
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| m.id.clone()))
        .chain(b.affected.iter().map(|a| a.id.clone()))
        .collect();
    Ok(Some(shown(store, fold, &ids, max, true)?))
}

// ---------------------------------------------------------------------------------------------
// What a compromise of one key would take down

/// What `blast` is asked of a key: what a compromise of it would take down, before anyone
/// declares it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SignerBlastInput {
    /// The key: its keyid, a unique prefix of it, or its name (as `keys list` shows them).
    pub signer: String,
    /// Only this many layers of dependents below the key's claims.
    pub depth: Option<usize>,
    /// Also read each claim's text and premises from the log (for people).
    pub with_texts: bool,
    /// Statuses at the tree in this directory; None: log-wide.
    #[serde(default)]
    pub at: Option<PathBuf>,
    /// With `at`: keep the files ignore rules leave out of the tree.
    #[serde(default)]
    pub no_ignore: bool,
    /// Also what a picture of the answer shows, at most this many claims.
    #[serde(default)]
    pub picture: Option<usize>,
}

/// The key a compromise would be declared of.
#[derive(Debug, Clone, Serialize)]
pub struct SignerKey {
    pub keyid: String,
    pub role: crate::keys::Role,
    pub name: String,
    pub retired: bool,
    /// Whether the trust policy in force already declares it compromised.
    pub compromised: bool,
}

/// What a compromise of a key would take down: layer 0 holds the claims whose authorising
/// signatures are all by that key (or by keys already declared compromised), the next
/// layers what rests on them through `dependsOn`, each claim once at its shortest depth;
/// `affected` the claims outside whose own status a record in the layers decides (a
/// verification the key signed, say). Statuses are today's.
#[derive(Debug, Clone, Serialize)]
pub struct SignerBlast {
    pub signer: SignerKey,
    /// How many claims it alone signed (layer 0).
    pub signed: usize,
    /// How many claims rest on them (the layers below 0).
    pub count: usize,
    pub layers: Vec<crate::graph::Layer>,
    pub affected: Vec<crate::graph::Affected>,
    /// Whether the depth asked left dependents out.
    pub truncated: bool,
    /// With `with_texts`: each claim's `assertion.text`.
    #[serde(skip)]
    pub texts: HashMap<String, Value>,
    /// With `with_texts`: each member's premises.
    #[serde(skip)]
    pub premises: HashMap<String, Vec<String>>,
    /// With `picture`: the claims a picture of the answer shows.
    #[serde(skip)]
    pub picture: Option<Shown>,
}

impl SignerBlast {
    /// The same layers as a [`crate::graph::Blast`] whose root is the keyid (its `count`:
    /// every claim taken down), for the renderers of a blast radius.
    pub fn as_blast(&self) -> crate::graph::Blast {
        crate::graph::Blast {
            root: self.signer.keyid.clone(),
            count: self.signed + self.count,
            layers: self.layers.clone(),
            affected: self.affected.clone(),
            truncated: self.truncated,
        }
    }
}

/// Fewest hex digits a keyid prefix must have.
const MIN_KEY_PREFIX: usize = 4;

/// The trusted key `arg` names: its keyid, a unique prefix of at least [`MIN_KEY_PREFIX`]
/// hex digits, or its name. KEY_NOT_FOUND if none; a usage error naming the candidates if
/// several.
pub fn resolve_key(store: &Store, arg: &str) -> Result<crate::store::StoredKey, Failure> {
    let keys = store.list_keys()?;
    if let Some(k) = keys.iter().find(|k| k.keyid == arg) {
        return Ok(k.clone());
    }
    let is_prefix = arg.len() >= MIN_KEY_PREFIX
        && arg.len() < 64
        && arg.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let mut found: Vec<&crate::store::StoredKey> = keys
        .iter()
        .filter(|k| k.name == arg || (is_prefix && k.keyid.starts_with(arg)))
        .collect();
    found.sort_by(|a, b| a.keyid.cmp(&b.keyid));
    found.dedup_by(|a, b| a.keyid == b.keyid);
    match found.as_slice() {
        [] => Err(Failure::NotFound {
            code: crate::error::Code::KeyNotFound,
            message: format!(
                "no trusted key is {arg:?}: give a keyid, a unique prefix of one (at least \
                 {MIN_KEY_PREFIX} hex digits) or a key's name, as `elench keys list` shows them"
            ),
        }),
        [one] => Ok((*one).clone()),
        many => Err(Failure::usage(
            None,
            format!(
                "{arg:?} names {} trusted keys: {}; give more digits of the keyid",
                many.len(),
                many.iter()
                    .map(|k| format!("{} ({} {:?})", k.keyid, k.role, k.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// What a compromise of the key `input.signer` would take down, as one snapshot of the log:
/// the claims the fold's compromise rule would falsify were the key declared compromised
/// beside those the policy in force already names, and everything resting on them. Finding
/// the key's claims reads every claim's index entry once.
pub fn signer_blast(ctx: &Context, input: &SignerBlastInput) -> Result<SignerBlast, Failure> {
    let store = ctx.open_store()?;
    let _snapshot = store.pin()?;
    let key = resolve_key(&store, &input.signer)?;
    let declared = ClaimSource::compromise(&store);
    let mut keys = declared
        .as_ref()
        .map(|c| c.keys.clone())
        .unwrap_or_default();
    let compromised = keys.contains(&key.keyid);
    keys.insert(key.keyid.clone());
    let would = Compromise {
        policy: String::new(),
        keys,
    };
    let mut roots = Vec::new();
    for id in store.claim_ids()? {
        let Some(c) = store.get_fold(&id)? else {
            continue;
        };
        if c.signers.iter().any(|s| s.keyid == key.keyid) && would.takes_down(&c.signers) {
            roots.push(id);
        }
    }
    let (radius, picture) = match &input.at {
        None => {
            let mut fold = Fold::new(&store);
            let r = radius(&mut fold, &roots, input.depth)?;
            let picture = picture_of_radius(&store, &mut fold, &r, input.picture)?;
            (r, picture)
        }
        Some(at) => {
            let dir = tree_dir(Some(at))?;
            let selection = Selection::from_no_ignore(input.no_ignore);
            let ids = tree_ids_at(&dir, selection, ctx.observer())?;
            let view = AtTree::new(&store, ids, &dir, selection);
            let mut fold = Fold::new(&view);
            let r = radius(&mut fold, &roots, input.depth)?;
            let picture = picture_of_radius(&store, &mut fold, &r, input.picture)?;
            (r, picture)
        }
    };
    let mut texts = HashMap::new();
    let mut premises = HashMap::new();
    if input.with_texts {
        let members = radius.layers.iter().flat_map(|l| l.claims.iter());
        let ids = members
            .map(|m| (&m.id, true))
            .chain(radius.affected.iter().map(|a| (&a.id, false)));
        for (id, member) in ids {
            let Some(c) = store.get(id)? else {
                continue;
            };
            if let Some(t) = c.body.text_value() {
                texts.insert(id.clone(), t.clone());
            }
            if member {
                premises.insert(id.clone(), c.claim.depends_on);
            }
        }
    }
    let signed = radius.layers.first().map_or(0, |l| l.claims.len());
    let total: usize = radius.layers.iter().map(|l| l.claims.len()).sum();
    Ok(SignerBlast {
        signer: SignerKey {
            keyid: key.keyid,
            role: key.role,
            name: key.name,
            retired: key.retired,
            compromised,
        },
        signed,
        count: total - signed,
        layers: radius.layers,
        affected: radius.affected,
        truncated: radius.truncated,
        texts,
        premises,
        picture,
    })
}

/// The layers, affected claims and cut of a radius from several roots.
struct Radius {
    layers: Vec<crate::graph::Layer>,
    affected: Vec<crate::graph::Affected>,
    truncated: bool,
}

/// What rests on `roots` (sorted ids of stored claims) through `dependsOn`, breadth-first
/// from all of them at once: each claim once, at its shortest depth, `via` the smallest-id
/// premise one layer up; at most `max_depth` layers below the roots. Then the claims outside
/// whose own status a record inside decides.
fn radius<S: ClaimSource>(
    fold: &mut Fold<'_, S>,
    roots: &[String],
    max_depth: Option<usize>,
) -> Result<Radius, Failure> {
    use crate::graph::{Layer, Member};
    use std::collections::{BTreeMap, BTreeSet};
    let src = fold.source();
    let mut seen: BTreeSet<String> = roots.iter().cloned().collect();
    let mut layers = Vec::new();
    let mut this: BTreeMap<String, Option<String>> =
        roots.iter().map(|r| (r.clone(), None)).collect();
    let mut depth = 0;
    let mut truncated = false;
    while !this.is_empty() {
        let mut claims = Vec::with_capacity(this.len());
        for (id, via) in &this {
            let c = if depth == 0 {
                fold.require(id)?
            } else {
                fold.require_named(id)?
            };
            claims.push(Member {
                id: id.clone(),
                kind: c.claim.kind.as_str(),
                status: fold.effective(id)?.status,
                via: via.clone(),
            });
        }
        layers.push(Layer { depth, claims });
        // The next layer: dependents not met yet, each with the smallest-id premise here
        // (this layer is walked in id order, so the first to reach it).
        let mut next: BTreeMap<String, Option<String>> = BTreeMap::new();
        for id in this.keys() {
            for d in src.dependents(id)? {
                if !seen.contains(&d) {
                    next.entry(d).or_insert_with(|| Some(id.clone()));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        if max_depth.is_some_and(|m| depth >= m) {
            truncated = true;
            break;
        }
        seen.extend(next.keys().cloned());
        this = next;
        depth += 1;
    }
    let members: BTreeSet<String> = layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| m.id.clone()))
        .collect();
    let affected = crate::graph::affected_by(fold, &members)?;
    Ok(Radius {
        layers,
        affected,
        truncated,
    })
}

/// What a picture of a radius shows: the layers in order, then the affected claims.
fn picture_of_radius<S: ClaimSource>(
    store: &Store,
    fold: &mut Fold<'_, S>,
    r: &Radius,
    max: Option<usize>,
) -> Result<Option<Shown>, Failure> {
    let Some(max) = max else {
        return Ok(None);
    };
    let ids: Vec<String> = r
        .layers
        .iter()
        .flat_map(|l| l.claims.iter().map(|m| m.id.clone()))
        .chain(r.affected.iter().map(|a| a.id.clone()))
        .collect();
    Ok(Some(shown(store, fold, &ids, max, true)?))
}

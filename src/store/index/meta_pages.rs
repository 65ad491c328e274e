//! LMDB's own two meta pages, checked before LMDB reads them.
//!
//! LMDB keeps, in the first two pages of `data.mdb`, where everything else is: the page size,
//! the root of each tree, the last page in use and the transaction that wrote it; the page
//! written by the later transaction is the one in force. LMDB checks only a magic number and
//! a version there. A flipped bit elsewhere in one of them makes LMDB map terabytes (and fail
//! for want of memory, as if the machine were short of it), read pages at the wrong size (and
//! fault), or take the older page for the newer one. Since this module checks what LMDB
//! itself never breaks, such a file is known for damage before it is opened: the index is
//! rebuilt, never reported as a lack of memory, nor as damage to the log.
//!
//! What always holds of a file LMDB wrote (liblmdb's `MDB_meta`, data version 1, 64-bit):
//! - each page says it is meta page 0 or 1, with the magic number and version;
//! - both name the same page size (a power of two from 512 to 64 KiB) and environment flags;
//! - transactions alternate between them: page 0 holds an even transaction id, page 1 an odd
//!   one, and the two are consecutive (or both 0, in a file no transaction has written);
//! - the last page in use never shrinks from one transaction to the next, and every tree's
//!   root lies within it;
//! - the pages in use fit in far less than twice the file (LMDB allows the file to end a few
//!   freed pages short of the last page).

use std::io::Read;
use std::path::Path;

const MAGIC: u32 = 0xBEEF_C0DE;
const VERSION: u32 = 1;
const P_META: u16 = 0x08;
/// No tree: an empty table's root.
const P_INVALID: u64 = u64::MAX;
/// Bytes of a page header, then of `MDB_meta` up to its transaction id (inclusive).
const HEADER: usize = 16;
const META_END: usize = HEADER + 4 + 4 + 8 + 8 + 2 * DB + 8 + 8;
/// One `MDB_db`: pad (the page size, in the free-space tree's), flags, depth, three page
/// counts, entries, root.
const DB: usize = 48;
/// Where the free-space tree's and the main tree's records start in a meta page.
const FREE_DB: usize = HEADER + 4 + 4 + 8 + 8;
const MAIN_DB: usize = FREE_DB + DB;
const LAST_PG: usize = MAIN_DB + DB;
const TXNID: usize = LAST_PG + 8;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// One meta page, as far as the checks read it.
struct Meta {
    psize: u32,
    flags: u16,
    roots: [u64; 2],
    depths: [u16; 2],
    last_pg: u64,
    txnid: u64,
}

fn read_meta(page: &[u8], number: u64) -> Result<Meta, String> {
    let bad = |what: &str| Err(format!("its meta page {number} {what}"));
    if u64_at(page, 0) != number || u16_at(page, 10) & P_META == 0 {
        return bad("is not marked as one");
    }
    if u32_at(page, HEADER) != MAGIC || u32_at(page, HEADER + 4) != VERSION {
        return bad("has another magic number or version");
    }
    Ok(Meta {
        psize: u32_at(page, FREE_DB),
        flags: u16_at(page, FREE_DB + 4),
        roots: [u64_at(page, FREE_DB + 40), u64_at(page, MAIN_DB + 40)],
        depths: [u16_at(page, FREE_DB + 6), u16_at(page, MAIN_DB + 6)],
        last_pg: u64_at(page, LAST_PG),
        txnid: u64_at(page, TXNID),
    })
}

/// What is wrong with the meta pages of `bytes` (the start of a data file of `len` bytes).
fn problem(bytes: &[u8], len: u64) -> Option<String> {
    let first = match read_meta(&bytes[..META_END], 0) {
        Ok(m) => m,
        Err(why) => return Some(why),
    };
    let psize = first.psize as usize;
    if !psize.is_power_of_two() || !(512..=65536).contains(&psize) {
        return Some(format!("its page size reads as {psize} bytes"));
    }
    let Some(second) = bytes.get(psize..psize + META_END) else {
        return Some("it ends inside its second meta page".into());
    };
    let second = match read_meta(second, 1) {
        Ok(m) => m,
        Err(why) => return Some(why),
    };
    if second.psize != first.psize || second.flags != first.flags {
        return Some("its meta pages name different page sizes or flags".into());
    }
    let alternating = first.txnid.is_multiple_of(2)
        && (!second.txnid.is_multiple_of(2) || (first.txnid == 0 && second.txnid == 0))
        && first.txnid.abs_diff(second.txnid) <= 1;
    if !alternating {
        return Some(format!(
            "its meta pages name transactions {} and {}, which LMDB never writes",
            first.txnid, second.txnid
        ));
    }
    let (newer, older) = if second.txnid > first.txnid {
        (&second, &first)
    } else {
        (&first, &second)
    };
    if newer.last_pg < older.last_pg {
        return Some(format!(
            "its last page in use went from {} to {}",
            older.last_pg, newer.last_pg
        ));
    }
    let pages = newer.last_pg.saturating_add(1);
    let room = len.saturating_mul(2).max(len.saturating_add(1 << 30)) / psize as u64;
    if pages > room {
        return Some(format!(
            "it names {pages} pages in use, far more than its {len} bytes hold"
        ));
    }
    for meta in [newer, older] {
        for (root, depth) in meta.roots.iter().zip(meta.depths) {
            if *root != P_INVALID && (*root < 2 || *root > meta.last_pg) {
                return Some(format!("a tree's root is page {root}, outside the file"));
            }
            // Deeper than LMDB's cursors go.
            if depth > 32 {
                return Some(format!("a tree is {depth} pages deep"));
            }
        }
    }
    None
}

/// Why the data file `data` cannot be what LMDB wrote (see the module comment); None when it
/// can, or when there is no file yet (LMDB makes one). A check that fails is read again
/// (twice, a few milliseconds apart) before it is believed: a writer of another process
/// may be writing a meta page while it is read.
pub fn damage(data: &Path) -> Option<String> {
    let mut why = None;
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let Ok(file) = std::fs::File::open(data) else {
            return None;
        };
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return None;
        };
        if len == 0 {
            return None;
        }
        let mut bytes = Vec::with_capacity(65536 + META_END);
        if file
            .take(65536 + META_END as u64)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return None;
        }
        if bytes.len() < META_END {
            why = Some("it ends inside its first meta page".to_owned());
            continue;
        }
        why = Some(problem(&bytes, len)?);
    }
    why.map(|w| format!("the index's file is damaged: {w}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_lmdb_wrote_passes_and_a_flip_in_what_is_checked_fails() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let envs = super::super::Environments::new();
        let index = super::super::Index::open(&envs, &dir).unwrap();
        for _ in 0..3 {
            index.write().unwrap().commit().unwrap();
        }
        envs.forget(&dir);
        drop(index);
        let data = dir.join("data.mdb");
        assert_eq!(damage(&data), None);
        let bytes = std::fs::read(&data).unwrap();
        let psize = u32_at(&bytes, FREE_DB) as usize;
        // The page size, the transaction id and the last page (its high bytes), in either
        // meta page; the page number and the magic number.
        for at in [FREE_DB + 1, TXNID, LAST_PG + 7, 0, HEADER] {
            for page in [0, psize] {
                let mut damaged = bytes.clone();
                damaged[page + at] ^= 0x40;
                std::fs::write(&data, &damaged).unwrap();
                assert!(damage(&data).is_some(), "byte {at} of page {page}");
            }
        }
        std::fs::write(&data, b"").unwrap();
        assert_eq!(damage(&data), None);
    }
}

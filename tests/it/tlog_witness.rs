//! A tlog-witness witness for the tests, written from the C2SP texts alone (tlog-witness,
//! tlog-checkpoint, signed-note, tlog-cosignature, and RFC 6962's consistency proofs) and
//! sharing no code with elench: it parses notes, checks the log's signature, checks the
//! consistency proof with a recursive reading of RFC 6962 section 2.1.2 (elench checks them
//! with RFC 9162's iterative algorithm) and answers `add-checkpoint` as the text says:
//! 200 with a cosignature line, 409 with `text/x.tlog.size`, 403, 404, 400 or 422.
//!
//! It listens on loopback, one thread per connection, `Connection: close`. Modes make it
//! misbehave for the client's tests: never answer, redirect, answer too much.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How the witness behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// As tlog-witness says.
    Honest,
    /// Reads the request and never answers (until the client gives up).
    Silent,
    /// Answers 302 to this location.
    Redirect(String),
    /// Answers 200 with this many bytes of signature lines.
    Flood(usize),
    /// Answers 409 without the `text/x.tlog.size` content type.
    UntypedConflict,
}

#[derive(Default)]
struct State {
    /// origin -> (size, root) of the latest checkpoint cosigned.
    latest: HashMap<String, (u64, [u8; 32])>,
    /// Every request body received, in order.
    requests: Vec<String>,
    /// Run once, before the next honest answer (the world changing while a client waits).
    before_answer: Option<Box<dyn FnOnce() + Send>>,
}

pub struct TestWitness {
    pub url: String,
    pub name: String,
    key: SigningKey,
    state: Arc<Mutex<State>>,
    mode: Arc<Mutex<Mode>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn key_id(name: &str, kind: u8, key: &[u8]) -> [u8; 4] {
    let d = sha256(&[name.as_bytes(), b"\n", &[kind], key]);
    [d[0], d[1], d[2], d[3]]
}

/// A verifier key string as signed-note writes it.
pub fn vkey(name: &str, kind: u8, key: &VerifyingKey) -> String {
    let mut raw = vec![kind];
    raw.extend_from_slice(key.as_bytes());
    format!(
        "{name}+{}+{}",
        hex::encode(key_id(name, kind, key.as_bytes())),
        B64.encode(raw)
    )
}

fn node(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    sha256(&[&[1u8], l, r])
}

/// The old and new roots a consistency proof from `m` to `n` leaves stands for, read from
/// RFC 6962's definition (PROOF and SUBPROOF) backwards: each SUBPROOF ends with the hash
/// its split adds, so the proof is eaten from its end. `b` says whether the old tree is
/// still the whole left part (its root is then the old root itself, not in the proof).
fn roots(
    m: u64,
    n: u64,
    b: bool,
    old: &[u8; 32],
    proof: &mut Vec<[u8; 32]>,
) -> Option<([u8; 32], [u8; 32])> {
    if m == n {
        if b {
            return Some((*old, *old));
        }
        let h = proof.pop()?;
        return Some((h, h));
    }
    let mut k = 1u64;
    while k * 2 < n {
        k *= 2;
    }
    if m <= k {
        let right = proof.pop()?;
        let (o, l) = roots(m, k, b, old, proof)?;
        Some((o, node(&l, &right)))
    } else {
        let left = proof.pop()?;
        let (o, r) = roots(m - k, n - k, false, old, proof)?;
        Some((node(&left, &o), node(&left, &r)))
    }
}

fn consistent(m: u64, n: u64, old: &[u8; 32], new: &[u8; 32], proof: &[[u8; 32]]) -> bool {
    if m == 0 {
        return proof.is_empty();
    }
    if m == n {
        return proof.is_empty() && old == new;
    }
    let mut p = proof.to_vec();
    match roots(m, n, true, old, &mut p) {
        Some((o, r)) => p.is_empty() && &o == old && &r == new,
        None => false,
    }
}

struct Reply {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    extra: String,
    body: Vec<u8>,
}

fn reply(status: u16, reason: &'static str, body: &str) -> Reply {
    Reply {
        status,
        reason,
        content_type: "text/plain; charset=utf-8",
        extra: String::new(),
        body: body.as_bytes().to_vec(),
    }
}

impl TestWitness {
    /// A witness named `name` whose key comes from `seed`, trusting these logs (origin and
    /// Ed25519 public key).
    pub fn start(name: &str, seed: u8, logs: Vec<(String, VerifyingKey)>) -> TestWitness {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let key = SigningKey::from_bytes(&[seed; 32]);
        let state = Arc::new(Mutex::new(State::default()));
        let mode = Arc::new(Mutex::new(Mode::Honest));
        let stop = Arc::new(AtomicBool::new(false));
        let logs = Arc::new(logs);
        {
            let (state, mode, stop, key, name) = (
                state.clone(),
                mode.clone(),
                stop.clone(),
                key.clone(),
                name.to_owned(),
            );
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (state, mode, stop, key, name, logs) = (
                        state.clone(),
                        mode.clone(),
                        stop.clone(),
                        key.clone(),
                        name.clone(),
                        logs.clone(),
                    );
                    std::thread::spawn(move || {
                        serve(conn, &state, &mode, &stop, &key, &name, &logs);
                    });
                }
            });
        }
        TestWitness {
            url: format!("http://{addr}"),
            name: name.to_owned(),
            key,
            state,
            mode,
            stop,
            addr,
        }
    }

    /// The witness's cosignature vkey (type 0x04).
    pub fn vkey(&self) -> String {
        vkey(&self.name, 0x04, &self.key.verifying_key())
    }

    pub fn set_mode(&self, m: Mode) {
        *self.mode.lock().unwrap() = m;
    }

    /// What the witness last cosigned for `origin`.
    pub fn latest(&self, origin: &str) -> Option<(u64, [u8; 32])> {
        self.state.lock().unwrap().latest.get(origin).copied()
    }

    /// Makes the witness believe it cosigned this tree last.
    pub fn set_latest(&self, origin: &str, size: u64, root: [u8; 32]) {
        self.state
            .lock()
            .unwrap()
            .latest
            .insert(origin.to_owned(), (size, root));
    }

    /// Runs `f` once, when the next request has arrived and before it is answered.
    pub fn before_next_answer(&self, f: impl FnOnce() + Send + 'static) {
        self.state.lock().unwrap().before_answer = Some(Box::new(f));
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }
}

impl Drop for TestWitness {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve(
    mut conn: TcpStream,
    state: &Mutex<State>,
    mode: &Mutex<Mode>,
    stop: &AtomicBool,
    key: &SigningKey,
    name: &str,
    logs: &[(String, VerifyingKey)],
) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    // The head, up to the blank line.
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if buf.len() > 16 * 1024 || conn.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("").to_owned();
    let mut length = 0usize;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    if length > 1024 * 1024 {
        return;
    }
    let mut body = vec![0u8; length];
    if conn.read_exact(&mut body).is_err() {
        return;
    }
    let m = mode.lock().unwrap().clone();
    let r = match m {
        Mode::Silent => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        Mode::Redirect(to) => Reply {
            extra: format!("Location: {to}\r\n"),
            ..reply(302, "Found", "")
        },
        Mode::Flood(n) => {
            let line = format!("\u{2014} {name} {}\n", B64.encode([0u8; 76]));
            let mut body = Vec::new();
            while body.len() < n {
                body.extend_from_slice(line.as_bytes());
            }
            Reply {
                body,
                ..reply(200, "OK", "")
            }
        }
        Mode::UntypedConflict => reply(409, "Conflict", "0\n"),
        Mode::Honest => {
            if !request_line.starts_with("POST ")
                || request_line.split(' ').nth(1) != Some("/add-checkpoint")
            {
                reply(404, "Not Found", "no such endpoint\n")
            } else {
                let body = String::from_utf8_lossy(&body).into_owned();
                let hook = state.lock().unwrap().before_answer.take();
                if let Some(f) = hook {
                    f();
                }
                state.lock().unwrap().requests.push(body.clone());
                add_checkpoint(&body, state, key, name, logs)
            }
        }
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
        r.status,
        r.reason,
        r.content_type,
        r.body.len(),
        r.extra
    )
    .into_bytes();
    out.extend_from_slice(&r.body);
    let _ = conn.write_all(&out);
    let _ = conn.flush();
}

fn add_checkpoint(
    body: &str,
    state: &Mutex<State>,
    key: &SigningKey,
    name: &str,
    logs: &[(String, VerifyingKey)],
) -> Reply {
    let bad = |why: &str| reply(400, "Bad Request", &format!("{why}\n"));
    // old N, proof lines, a blank line, the checkpoint.
    let Some((head, note)) = body.split_once("\n\n") else {
        return bad("no empty line");
    };
    let mut head_lines = head.split('\n');
    let Some(old) = head_lines
        .next()
        .and_then(|l| l.strip_prefix("old "))
        .filter(|n| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n == &"0" || !n.starts_with('0'))
        })
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return bad("no old size line");
    };
    let mut proof = Vec::new();
    for l in head_lines {
        match B64
            .decode(l)
            .ok()
            .and_then(|v| <[u8; 32]>::try_from(v).ok())
        {
            Some(h) => proof.push(h),
            None => return bad("a proof line is not a base64 hash"),
        }
    }
    if proof.len() > 63 {
        return bad("more than 63 proof lines");
    }
    // The note: text, then the signatures after its last blank line.
    let Some(split) = note.rfind("\n\n") else {
        return bad("the checkpoint is not a signed note");
    };
    let (text, sigs) = (&note[..=split], &note[split + 2..]);
    let lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
    if lines.len() < 3 {
        return bad("the checkpoint has fewer than three lines");
    }
    let origin = lines[0];
    let Some(size) = lines[1].parse::<u64>().ok() else {
        return bad("bad tree size");
    };
    let Some(root) = B64
        .decode(lines[2])
        .ok()
        .and_then(|v| <[u8; 32]>::try_from(v).ok())
    else {
        return bad("bad root hash");
    };
    let Some((_, log_key)) = logs.iter().find(|(o, _)| o == origin) else {
        return reply(404, "Not Found", "unknown log\n");
    };
    let want_id = key_id(origin, 0x01, log_key.as_bytes());
    let mut verified = false;
    for line in sigs.lines() {
        let Some(rest) = line.strip_prefix("\u{2014} ") else {
            return bad("a signature line without its em dash");
        };
        let Some((who, sig)) = rest.split_once(' ') else {
            return bad("a signature line without a signature");
        };
        let Ok(sig) = B64.decode(sig) else {
            return bad("a signature that is not base64");
        };
        if who != origin || sig.len() < 4 || sig[..4] != want_id {
            continue;
        }
        let ok = ed25519_dalek::Signature::from_slice(&sig[4..])
            .map(|s| log_key.verify(text.as_bytes(), &s).is_ok())
            .unwrap_or(false);
        if !ok {
            return reply(403, "Forbidden", "a log signature fails\n");
        }
        verified = true;
    }
    if !verified {
        return reply(403, "Forbidden", "no signature by the log's key\n");
    }
    if old > size {
        return bad("old size beyond the checkpoint's");
    }
    // Check and update under one lock, so two requests cannot roll the size back.
    let mut st = state.lock().unwrap();
    let (have, have_root) = st.latest.get(origin).copied().unwrap_or((0, sha256(&[])));
    if old != have {
        return Reply {
            content_type: "text/x.tlog.size",
            ..reply(409, "Conflict", &format!("{have}\n"))
        };
    }
    if size == 0 && root != sha256(&[]) {
        return reply(
            422,
            "Unprocessable Entity",
            "an empty tree with another root\n",
        );
    }
    if !consistent(old, size, &have_root, &root, &proof) {
        return reply(422, "Unprocessable Entity", "not consistent\n");
    }
    st.latest.insert(origin.to_owned(), (size, root));
    drop(st);
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let message = format!("cosignature/v1\ntime {time}\n{text}");
    let mut sig = key_id(name, 0x04, key.verifying_key().as_bytes()).to_vec();
    sig.extend_from_slice(&time.to_be_bytes());
    sig.extend_from_slice(&key.sign(message.as_bytes()).to_bytes());
    reply(200, "OK", &format!("\u{2014} {name} {}\n", B64.encode(sig)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(i: u32) -> [u8; 32] {
        sha256(&[&[0u8], &i.to_be_bytes()])
    }

    /// The root of leaves 0..n, by RFC 6962's definition, recursively.
    fn mth(lo: u32, hi: u32) -> [u8; 32] {
        if hi - lo == 1 {
            return leaf(lo);
        }
        let mut k = 1;
        while k * 2 < hi - lo {
            k *= 2;
        }
        node(&mth(lo, lo + k), &mth(lo + k, hi))
    }

    /// PROOF(m, D[0:n]) from RFC 6962 section 2.1.2, written out directly.
    fn proof(m: u32, lo: u32, hi: u32, b: bool, out: &mut Vec<[u8; 32]>) {
        let n = hi - lo;
        if m == n {
            if !b {
                out.push(mth(lo, hi));
            }
            return;
        }
        let mut k = 1;
        while k * 2 < n {
            k *= 2;
        }
        if m <= k {
            proof(m, lo, lo + k, b, out);
            out.push(mth(lo + k, hi));
        } else {
            proof(m - k, lo + k, hi, false, out);
            out.push(mth(lo, lo + k));
        }
    }

    #[test]
    fn the_test_witness_checks_proofs_by_rfc_6962() {
        for n in 1..40u32 {
            for m in 1..=n {
                let mut p = Vec::new();
                if m < n {
                    proof(m, 0, n, true, &mut p);
                }
                let (a, b) = (mth(0, m), mth(0, n));
                assert!(consistent(m as u64, n as u64, &a, &b, &p), "{m} -> {n}");
                if m < n {
                    assert!(!consistent(m as u64, n as u64, &b, &b, &p));
                    let mut q = p.clone();
                    q[0][0] ^= 1;
                    assert!(!consistent(m as u64, n as u64, &a, &b, &q));
                }
            }
        }
    }
}

//! The client side of C2SP tlog-witness: `POST <prefix>/add-checkpoint`, and the exchange
//! that gets one witness's cosignature (starting from the size the caller believes the
//! witness last cosigned, again from the size a 409 names).
//!
//! Every request is bounded: one time limit covers the whole request (connecting, sending,
//! reading), no redirect is followed (a 3xx is an answer like any other), and an answer's
//! body is read up to [`MAX_ANSWER_BYTES`].

use super::checkpoint::{add_checkpoint_body, parse_decimal, Checkpoint};
use super::merkle::Hash;
use super::note::{Note, NoteSignature, Vkey};
use std::time::Duration;

/// The most bytes of a witness's answer read.
pub const MAX_ANSWER_BYTES: u64 = 256 * 1024;

/// How many requests one exchange makes at most (the first, and again from the size a 409
/// names, twice).
const MAX_ATTEMPTS: usize = 3;

/// What a witness answered to `add-checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 200: the signature lines of the body.
    Cosigned(Vec<NoteSignature>),
    /// 409: the size of the latest checkpoint the witness cosigned for this log.
    Conflict(u64),
    /// 403: no signature by a log key the witness trusts, or one that fails.
    Forbidden(String),
    /// 404: the witness does not know the log's origin.
    UnknownLog(String),
    /// 400: the old size is larger than the checkpoint's.
    BadRequest(String),
    /// 422: the proof does not verify, or the same size with another root.
    Inconsistent(String),
    /// Any other status (a redirect included), with the start of the body.
    Other(u16, String),
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Transport(String),
    #[error("the answer is not what tlog-witness says: {0}")]
    BadAnswer(String),
}

/// A blocking client for witness requests, with one time limit per request.
pub struct Client {
    agent: ureq::Agent,
    timeout: Duration,
}

/// The start of a body, as text fit for a message.
fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(&body[..body.len().min(200)]);
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

impl Client {
    pub fn new(timeout: Duration) -> Client {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(concat!("elench/", env!("CARGO_PKG_VERSION")))
            .build();
        Client {
            agent: config.into(),
            timeout,
        }
    }

    /// Sends one `add-checkpoint` request to the witness at submission prefix `prefix`.
    pub fn add_checkpoint(&self, prefix: &str, body: &str) -> Result<Answer, ClientError> {
        if !(prefix.starts_with("https://") || prefix.starts_with("http://")) {
            return Err(ClientError::Transport(format!(
                "witness URL {prefix:?} is not http:// or https://"
            )));
        }
        let url = format!("{}/add-checkpoint", prefix.trim_end_matches('/'));
        let response = self
            .agent
            .post(&url)
            .header("Content-Type", "text/plain; charset=utf-8")
            .send(body.as_bytes());
        let mut response = match response {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => return Err(ClientError::Timeout(self.timeout)),
            Err(e) => return Err(ClientError::Transport(format!("POST {url}: {e}"))),
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            });
        let bytes = match response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
        {
            Ok(b) => b,
            Err(ureq::Error::Timeout(_)) => return Err(ClientError::Timeout(self.timeout)),
            Err(ureq::Error::BodyExceedsLimit(_)) => {
                return Err(ClientError::BadAnswer(format!(
                    "{url} answered {status} with a body over {MAX_ANSWER_BYTES} bytes"
                )))
            }
            Err(e) => return Err(ClientError::Transport(format!("POST {url}: {e}"))),
        };
        Ok(match status {
            200 => {
                let text = std::str::from_utf8(&bytes).map_err(|_| {
                    ClientError::BadAnswer(format!("{url} answered 200 with a body not UTF-8"))
                })?;
                Answer::Cosigned(
                    NoteSignature::parse_lines(text)
                        .map_err(|e| ClientError::BadAnswer(format!("{url} answered 200: {e}")))?,
                )
            }
            409 => {
                if content_type.as_deref() != Some("text/x.tlog.size") {
                    return Err(ClientError::BadAnswer(format!(
                        "{url} answered 409 with content type {:?}, not text/x.tlog.size",
                        content_type.unwrap_or_default()
                    )));
                }
                let size = std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|s| s.strip_suffix('\n'))
                    .and_then(parse_decimal)
                    .ok_or_else(|| {
                        ClientError::BadAnswer(format!(
                            "{url} answered 409 with {:?}, not a tree size and a newline",
                            snippet(&bytes)
                        ))
                    })?;
                Answer::Conflict(size)
            }
            403 => Answer::Forbidden(snippet(&bytes)),
            404 => Answer::UnknownLog(snippet(&bytes)),
            400 => Answer::BadRequest(snippet(&bytes)),
            422 => Answer::Inconsistent(snippet(&bytes)),
            other => Answer::Other(other, snippet(&bytes)),
        })
    }
}

/// How one witness's exchange ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The witness cosigned: its verified cosignature and timestamp, and the old size the
    /// accepted request gave.
    Cosigned {
        signature: NoteSignature,
        time: u64,
        old: u64,
    },
    /// The witness has cosigned a larger tree of this log than the checkpoint's: the log
    /// was rewound, or this is not the log the witness saw.
    Ahead { witness_size: u64 },
    /// 422: the checkpoint is not consistent with what the witness cosigned (another root
    /// at the same size, or a proof that does not verify).
    Inconsistent { message: String },
    /// No cosignature for another reason: the message says which.
    Failed { message: String },
}

/// One witness of a policy: its name there, its cosignature key and its submission prefix.
#[derive(Debug, Clone)]
pub struct Witness<'a> {
    pub name: &'a str,
    pub vkey: &'a Vkey,
    pub url: &'a str,
}

/// Asks `witness` to cosign `signed` (the log-signed checkpoint `checkpoint`), starting from
/// `old`, the size the caller believes the witness last cosigned; `proof(m)` gives the
/// consistency proof from size `m` to the checkpoint's size, or None when the caller holds
/// no tree of that size.
pub fn cosign(
    client: &Client,
    witness: &Witness<'_>,
    checkpoint: &Checkpoint,
    signed: &Note,
    mut old: u64,
    proof: &dyn Fn(u64) -> Option<Vec<Hash>>,
) -> Outcome {
    let failed = |message: String| Outcome::Failed { message };
    let mut tried = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        if old > checkpoint.size {
            return Outcome::Ahead { witness_size: old };
        }
        let Some(p) = proof(old) else {
            return failed(format!(
                "no consistency proof from size {old} to {} can be made",
                checkpoint.size
            ));
        };
        let body = match add_checkpoint_body(old, &p, signed) {
            Ok(b) => b,
            Err(e) => return failed(e),
        };
        tried.push(old);
        match client.add_checkpoint(witness.url, &body) {
            Err(e) => return failed(e.to_string()),
            Ok(Answer::Cosigned(sigs)) => {
                let text = checkpoint.body();
                let mine = sigs.iter().filter(|s| witness.vkey.names(s));
                for s in mine {
                    if let Ok(Some(time)) = witness.vkey.verify(&text, s) {
                        return Outcome::Cosigned {
                            signature: s.clone(),
                            time,
                            old,
                        };
                    }
                }
                return failed(format!(
                    "answered 200 without a valid cosignature by {}+{:08x}",
                    witness.vkey.name, witness.vkey.key_id
                ));
            }
            Ok(Answer::Conflict(size)) => {
                if size > checkpoint.size {
                    return Outcome::Ahead { witness_size: size };
                }
                if tried.contains(&size) {
                    return failed(format!(
                        "answered 409 naming size {size}, the size just sent"
                    ));
                }
                old = size;
            }
            Ok(Answer::Inconsistent(m)) => return Outcome::Inconsistent { message: m },
            Ok(Answer::Forbidden(m)) => {
                return failed(format!(
                    "403: the witness does not trust the log's key for this origin ({m})"
                ))
            }
            Ok(Answer::UnknownLog(m)) => {
                return failed(format!(
                    "404: the witness does not know the origin {} ({m})",
                    checkpoint.origin
                ))
            }
            Ok(Answer::BadRequest(m)) => return failed(format!("400: {m}")),
            Ok(Answer::Other(status, m)) => return failed(format!("answered {status}: {m}")),
        }
    }
    failed(format!(
        "still answering 409 after {MAX_ATTEMPTS} requests (sizes {tried:?})"
    ))
}

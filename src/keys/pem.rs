//! PEM key files: PKCS#8 private keys and SubjectPublicKeyInfo public keys, as openssl writes
//! them (`openssl genpkey -algorithm ed25519`, `openssl pkey -pubout`).

use crate::error::{Code, Rejection};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, KeypairBytes,
};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// keyid = lowercase hex SHA-256 of the 32 raw public key bytes.
pub fn keyid(key: &VerifyingKey) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The text of a key file. A PEM file is ASCII: bytes that are not UTF-8 are not a key
/// (BAD_KEY, like any other file that is not one), not a failure to read.
pub fn pem_text(bytes: &[u8]) -> Result<&str, Rejection> {
    std::str::from_utf8(bytes).map_err(|e| {
        Rejection::new(
            Code::BadKey,
            format!(
                "not a PEM key: the file is not text (byte {} is not UTF-8)",
                e.valid_up_to()
            ),
        )
    })
}

pub fn read_public_key_pem(text: &str) -> Result<VerifyingKey, Rejection> {
    VerifyingKey::from_public_key_pem(text.trim()).map_err(|e| {
        Rejection::new(
            Code::BadKey,
            format!("not a PEM Ed25519 public key (SubjectPublicKeyInfo): {e}"),
        )
    })
}

pub fn read_signing_key_pem(text: &str) -> Result<SigningKey, Rejection> {
    SigningKey::from_pkcs8_pem(text.trim()).map_err(|e| {
        Rejection::new(
            Code::BadKey,
            format!("not a PEM Ed25519 private key (PKCS#8): {e}"),
        )
    })
}

pub fn public_key_pem(key: &VerifyingKey) -> Result<String, Rejection> {
    key.to_public_key_pem(LineEnding::LF)
        .map_err(|e| Rejection::new(Code::BadKey, format!("cannot encode public key: {e}")))
}

/// The private key as PEM PKCS#8 v1 (RFC 8410: the seed alone, no public key), the form
/// `openssl genpkey -algorithm ed25519` writes. ed25519-dalek's own encoding is v2 (with the
/// public key), which OpenSSL 3.0 and Python's `cryptography` refuse. Both forms are read.
pub fn signing_key_pem(key: &SigningKey) -> Result<String, Rejection> {
    let v1 = KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    };
    v1.to_pkcs8_pem(LineEnding::LF)
        .map(|z| z.to_string())
        .map_err(|e| Rejection::new(Code::BadKey, format!("cannot encode private key: {e}")))
}

/// A new key from the operating system's random source.
pub fn generate_signing_key() -> SigningKey {
    SigningKey::generate(&mut rand_core::OsRng)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trip_and_keyid() {
        let sk = SigningKey::from_bytes(&[1u8; 32]);
        let pem = signing_key_pem(&sk).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_eq!(
            read_signing_key_pem(&pem).unwrap().to_bytes(),
            sk.to_bytes()
        );
        let vk = sk.verifying_key();
        let pub_pem = public_key_pem(&vk).unwrap();
        assert!(pub_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
        assert_eq!(read_public_key_pem(&pub_pem).unwrap(), vk);
        assert_eq!(keyid(&vk), hex::encode(Sha256::digest(vk.as_bytes())));
        assert_eq!(read_public_key_pem("junk").unwrap_err().code, Code::BadKey);
    }

    #[test]
    fn private_keys_are_written_as_pkcs8_v1_and_both_versions_are_read() {
        let sk = SigningKey::from_bytes(&[7u8; 32]);
        let pem = signing_key_pem(&sk).unwrap();
        use base64::Engine;
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        // RFC 8410's example layout: SEQUENCE { INTEGER 0, AlgorithmIdentifier, OCTET STRING },
        // 48 bytes, version 0 (v1), no public key.
        assert_eq!(der.len(), 48, "{der:02x?}");
        assert_eq!(&der[..5], &[0x30, 0x2e, 0x02, 0x01, 0x00]);
        let v2 = sk.to_pkcs8_pem(LineEnding::LF).unwrap();
        for text in [pem.as_str(), v2.as_str()] {
            assert_eq!(
                read_signing_key_pem(text).unwrap().to_bytes(),
                sk.to_bytes()
            );
        }
    }
}

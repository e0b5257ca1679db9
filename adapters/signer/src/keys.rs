//! Ed25519 keys: the active signing key, retired verification keys, the JWKS, key files.

use std::fmt;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use svc_ports::{ArtifactSignature, Signer};
use zeroize::Zeroizing;

use crate::ALG;

/// Signs with one active Ed25519 key; publishes it and any retired keys in the JWKS.
///
/// Retired keys never sign. They stay in the JWKS so that artifacts they signed still verify.
/// `Debug` shows key ids only.
pub struct Ed25519Signer {
    active: SigningKey,
    active_kid: String,
    retired: Vec<RetiredKey>,
}

/// A key that no longer signs but whose public half is still served: built from a public key
/// (the usual case, the private half can be destroyed) or from an old seed.
#[derive(Clone, PartialEq, Eq)]
pub struct RetiredKey {
    public: VerifyingKey,
    kid: String,
}

impl RetiredKey {
    /// The retired key whose seed was `seed` (only its public half is kept).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self::from_verifying_key(SigningKey::from_bytes(&seed).verifying_key())
    }

    /// A retired key from its 32-byte public key (the JWK's decoded `x`). Fails if the bytes
    /// are not a valid Ed25519 point or are a weak (small-order) key.
    pub fn from_public_key(public: [u8; 32]) -> anyhow::Result<Self> {
        let public = VerifyingKey::from_bytes(&public).context("not a valid Ed25519 public key")?;
        if public.is_weak() {
            bail!("weak (small-order) Ed25519 public key");
        }
        Ok(Self::from_verifying_key(public))
    }

    fn from_verifying_key(public: VerifyingKey) -> Self {
        Self {
            kid: thumbprint(&public),
            public,
        }
    }

    /// The key's `kid` (its RFC 7638 thumbprint).
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.public.to_bytes()
    }
}

impl fmt::Debug for RetiredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetiredKey")
            .field("kid", &self.kid)
            .finish()
    }
}

impl Ed25519Signer {
    /// A signer whose active key is derived from `seed` (the RFC 8032 32-byte private key).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let active = SigningKey::from_bytes(&seed);
        Self {
            active_kid: thumbprint(&active.verifying_key()),
            active,
            retired: Vec::new(),
        }
    }

    /// A signer with a fresh key from the operating system's randomness. Artifacts it signs
    /// cannot be verified after a restart unless the seed is kept: see
    /// [`load_or_create_key_file`].
    pub fn generate() -> Self {
        Self::from_seed(random_seed())
    }

    /// Adds keys that are served in the JWKS but never sign. A key equal to the active key or
    /// to one already added is skipped.
    #[must_use]
    pub fn with_retired(mut self, retired: impl IntoIterator<Item = RetiredKey>) -> Self {
        for key in retired {
            if key.kid != self.active_kid && !self.retired.iter().any(|k| k.kid == key.kid) {
                self.retired.push(key);
            }
        }
        self
    }

    /// A signer from configuration strings: `active` is a 32-byte seed in base64url without
    /// padding (padded base64url and standard base64 are accepted too); each `retired` entry is
    /// either such a seed or `pub:` followed by the base64url public key (the JWK's `x`).
    ///
    /// Errors name what is wrong and which entry, but never echo key material.
    pub fn from_settings(active: &str, retired: &[String]) -> anyhow::Result<Self> {
        let seed = parse_seed(active).context("the active signing key")?;
        let mut retired_keys = Vec::with_capacity(retired.len());
        for (i, entry) in retired.iter().enumerate() {
            let key = match entry.trim().strip_prefix("pub:") {
                Some(public) => decode_32(public)
                    .context("expected a 32-byte Ed25519 public key in base64url")
                    .and_then(RetiredKey::from_public_key),
                None => parse_seed(entry).map(RetiredKey::from_seed),
            }
            .with_context(|| format!("retired signing key #{}", i + 1))?;
            retired_keys.push(key);
        }
        Ok(Self::from_seed(seed).with_retired(retired_keys))
    }

    /// The active key's `kid`.
    pub fn kid(&self) -> &str {
        &self.active_kid
    }

    /// The active key's 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.active.verifying_key().to_bytes()
    }

    /// The retired keys, in the order they were added.
    pub fn retired(&self) -> &[RetiredKey] {
        &self.retired
    }

    /// A signer for the next key period: `seed` becomes the active key and the current active
    /// key joins the retired ones (public half only).
    #[must_use]
    pub fn rotate(self, seed: [u8; 32]) -> Self {
        let previous = RetiredKey::from_verifying_key(self.active.verifying_key());
        Self::from_seed(seed).with_retired(std::iter::once(previous).chain(self.retired))
    }
}

impl Ed25519Signer {
    /// Signs raw bytes with the active key.
    pub fn sign_bytes(&self, message: &[u8]) -> ArtifactSignature {
        let signature = self.active.sign(message);
        ArtifactSignature {
            alg: ALG.to_owned(),
            kid: self.active_kid.clone(),
            value: URL_SAFE_NO_PAD.encode(signature.to_bytes()),
        }
    }
}

impl Signer for Ed25519Signer {
    fn sign(&self, unsigned: &Value) -> ArtifactSignature {
        self.sign_bytes(&crate::signing_bytes(unsigned))
    }

    fn jwks(&self) -> Value {
        let keys: Vec<Value> = std::iter::once((&self.active_kid, self.active.verifying_key()))
            .chain(self.retired.iter().map(|k| (&k.kid, k.public)))
            .map(|(kid, public)| {
                json!({
                    "kty": "OKP",
                    "crv": "Ed25519",
                    "x": URL_SAFE_NO_PAD.encode(public.as_bytes()),
                    "kid": kid,
                    "use": "sig",
                    "alg": ALG,
                })
            })
            .collect();
        json!({ "keys": keys })
    }

    fn verify(&self, artifact: &Value) -> Result<(), String> {
        crate::verify_artifact(artifact, &self.jwks()).map_err(|e| e.to_string())
    }
}

impl fmt::Debug for Ed25519Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ed25519Signer")
            .field("kid", &self.active_kid)
            .field("retired", &self.retired)
            .finish_non_exhaustive()
    }
}

/// The RFC 7638 JWK thumbprint of an Ed25519 key (RFC 8037 section 2): base64url, without
/// padding, of SHA-256 over `{"crv":"Ed25519","kty":"OKP","x":"..."}`.
fn thumbprint(public: &VerifyingKey) -> String {
    let x = URL_SAFE_NO_PAD.encode(public.as_bytes());
    // The required members, lexicographically ordered, no whitespace; `x` is base64url, which
    // needs no JSON escaping.
    let input = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(input.as_bytes()))
}

fn random_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).expect("the operating system's random number generator failed");
    seed
}

/// Decodes exactly 32 bytes of base64url (unpadded or padded) or standard base64.
fn decode_32(text: &str) -> anyhow::Result<[u8; 32]> {
    let text = text.trim();
    let decoded = [URL_SAFE_NO_PAD, URL_SAFE, STANDARD, STANDARD_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())
        .map(Zeroizing::new)
        .context("not base64url (or base64)")?;
    let bytes: [u8; 32] = decoded
        .as_slice()
        .try_into()
        .map_err(|_| anyhow::anyhow!("decodes to {} bytes, not 32", decoded.len()))?;
    Ok(bytes)
}

/// Parses a 32-byte Ed25519 seed: base64url without padding as written by
/// [`seed_to_string`]; padded base64url and standard base64 are accepted too.
pub fn parse_seed(text: &str) -> anyhow::Result<[u8; 32]> {
    if text.trim().is_empty() {
        bail!("empty; expected a 32-byte Ed25519 seed in base64url");
    }
    decode_32(text).context("expected a 32-byte Ed25519 seed in base64url")
}

/// The text form of a seed: base64url without padding.
pub fn seed_to_string(seed: &[u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(seed)
}

/// Reads the seed stored at `path`, or, if there is no file, generates one and stores it there
/// (base64url and a newline; mode 0600 on Unix; missing parent directories are created).
///
/// An existing file that does not hold exactly one seed is an error, never overwritten. The new
/// file appears atomically (written in full to a temporary file, then linked into place), so a
/// crash cannot leave a truncated key behind and two processes starting together end up with
/// the same key.
pub fn load_or_create_key_file(path: &Path) -> anyhow::Result<[u8; 32]> {
    match std::fs::read_to_string(path) {
        Ok(text) => return parse_key_file(path, &Zeroizing::new(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("reading signing key file {}", path.display()));
        }
    }

    let seed = random_seed();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the directory of {}", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(
        path.file_name()
            .context("the signing key path has no file name")?,
    );
    tmp_name.push(format!(".{}.{}.tmp", std::process::id(), hex_suffix()));
    let tmp = dir.join(tmp_name);

    let result = write_new_file(&tmp, seed_to_string(&seed).as_bytes())
        .and_then(|()| link_no_clobber(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match result {
        Ok(()) => {
            sync_dir(dir);
            Ok(seed)
        }
        // Someone else created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading signing key file {}", path.display()))?;
            parse_key_file(path, &Zeroizing::new(text))
        }
        Err(e) => Err(e).with_context(|| format!("creating signing key file {}", path.display())),
    }
}

fn parse_key_file(path: &Path, text: &str) -> anyhow::Result<[u8; 32]> {
    parse_seed(text).with_context(|| {
        format!(
            "refusing to use the malformed signing key file {} (it must hold one 32-byte \
             base64url seed; move it aside to have a new key generated)",
            path.display()
        )
    })
}

fn write_new_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// Puts `from` at `to` unless `to` exists (`AlreadyExists` then). A hard link does that
/// atomically; where hard links are unsupported, a rename after a check is the fallback.
fn link_no_clobber(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(std::io::ErrorKind::AlreadyExists.into());
            }
            std::fs::rename(from, to)
        }
        other => other,
    }
}

fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn hex_suffix() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 32] = [0xAB; 32];

    #[test]
    fn kid_is_the_rfc7638_thumbprint() {
        let signer = Ed25519Signer::from_seed(SEED);
        let x = URL_SAFE_NO_PAD.encode(signer.public_key());
        let canonical = crate::canonical_json(&json!({"kty": "OKP", "crv": "Ed25519", "x": x}));
        assert_eq!(
            signer.kid(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(&canonical))
        );
        assert_eq!(signer.kid().len(), 43);
        assert_eq!(signer.kid(), RetiredKey::from_seed(SEED).kid());
    }

    #[test]
    fn from_settings_accepts_the_base64_spellings_of_a_seed() {
        let expected = Ed25519Signer::from_seed(SEED).kid().to_owned();
        for text in [
            URL_SAFE_NO_PAD.encode(SEED),
            URL_SAFE.encode(SEED),
            STANDARD.encode(SEED),
            STANDARD_NO_PAD.encode(SEED),
            format!("  {}\n", URL_SAFE_NO_PAD.encode(SEED)),
        ] {
            let signer = Ed25519Signer::from_settings(&text, &[]).unwrap();
            assert_eq!(signer.kid(), expected, "{text:?}");
        }
        // A seed whose encodings differ between the two alphabets.
        let seed = [0xFB; 32];
        assert!(URL_SAFE_NO_PAD.encode(seed).contains('_'));
        assert_eq!(parse_seed(&STANDARD.encode(seed)).unwrap(), seed);
        assert_eq!(parse_seed(&seed_to_string(&seed)).unwrap(), seed);
    }

    #[test]
    fn from_settings_with_retired_seeds_and_public_keys() {
        let old = Ed25519Signer::from_seed([1; 32]);
        let older = Ed25519Signer::from_seed([2; 32]);
        let signer = Ed25519Signer::from_settings(
            &seed_to_string(&SEED),
            &[
                seed_to_string(&[1; 32]),
                format!("pub:{}", URL_SAFE_NO_PAD.encode(older.public_key())),
            ],
        )
        .unwrap();
        let kids: Vec<&str> = signer.retired().iter().map(RetiredKey::kid).collect();
        assert_eq!(kids, [old.kid(), older.kid()]);
    }

    #[test]
    fn from_settings_rejects_bad_keys_without_echoing_them() {
        let secretish = "c2VjcmV0LXNlY3JldC1zZWNyZXQ"; // 20 bytes
        let cases: Vec<(String, Vec<String>, &str)> = vec![
            (String::new(), vec![], "empty"),
            ("   ".into(), vec![], "empty"),
            (secretish.into(), vec![], "20 bytes, not 32"),
            (
                URL_SAFE_NO_PAD.encode([0u8; 64]),
                vec![],
                "64 bytes, not 32",
            ),
            ("not base64 at all!".into(), vec![], "not base64url"),
            (
                format!("{}-+", URL_SAFE_NO_PAD.encode(SEED)),
                vec![],
                "not base64url",
            ),
            (
                seed_to_string(&SEED),
                vec![secretish.into()],
                "retired signing key #1",
            ),
            (
                seed_to_string(&SEED),
                vec![seed_to_string(&[1; 32]), "pub:AAAA".into()],
                "retired signing key #2",
            ),
        ];
        for (active, retired, expected) in cases {
            let err = Ed25519Signer::from_settings(&active, &retired).unwrap_err();
            let message = format!("{err:#}");
            assert!(message.contains(expected), "{message}");
            assert!(!message.contains(secretish), "{message}");
            if !active.trim().is_empty() {
                assert!(!message.contains(active.trim()), "{message}");
            }
        }
        // Bytes that are not a curve point (about half of all y coordinates are not).
        let off_curve = (2u8..=255)
            .map(|y| {
                let mut bytes = [0u8; 32];
                bytes[0] = y;
                bytes
            })
            .find(|bytes| VerifyingKey::from_bytes(bytes).is_err())
            .expect("some small y is off the curve");
        assert!(RetiredKey::from_public_key(off_curve).is_err());
        // The identity point is a weak (small-order) key.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(RetiredKey::from_public_key(identity).is_err());
    }

    #[test]
    fn debug_never_shows_key_material() {
        let signer = Ed25519Signer::from_seed(SEED).with_retired([RetiredKey::from_seed([1; 32])]);
        let debug = format!("{signer:?} {:#?}", signer.retired());
        assert!(debug.contains(signer.kid()), "{debug}");
        for secret in [
            seed_to_string(&SEED),
            STANDARD.encode(SEED),
            format!("{SEED:?}"),
            "171".to_owned(), // 0xAB in decimal, as `[u8]` Debug would print it
            seed_to_string(&[1; 32]),
            URL_SAFE_NO_PAD.encode(signer.public_key()),
        ] {
            assert!(!debug.contains(&secret), "{debug} contains {secret}");
        }
    }

    #[test]
    fn generated_keys_differ() {
        assert_ne!(
            Ed25519Signer::generate().kid(),
            Ed25519Signer::generate().kid()
        );
    }

    #[test]
    fn key_file_is_created_once_with_mode_0600_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/signing.key");
        let seed = load_or_create_key_file(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\n", seed_to_string(&seed)));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(load_or_create_key_file(&path).unwrap(), seed);
        // No temporary files left behind.
        let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);

        // A file written by hand (another spelling, no newline) is read as it is.
        let other = dir.path().join("other.key");
        std::fs::write(&other, STANDARD.encode(SEED)).unwrap();
        assert_eq!(load_or_create_key_file(&other).unwrap(), SEED);
    }

    #[test]
    fn malformed_key_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        for (name, contents) in [
            ("empty.key", ""),
            ("short.key", "c2VjcmV0LXNlY3JldC1zZWNyZXQ\n"),
            ("garbage.key", "-----BEGIN PRIVATE KEY-----\n"),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, contents).unwrap();
            let err = load_or_create_key_file(&path).unwrap_err();
            let message = format!("{err:#}");
            assert!(
                message.contains("refusing to use the malformed signing key file"),
                "{message}"
            );
            assert!(message.contains(name), "{message}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), contents);
        }
    }

    #[test]
    fn concurrent_creation_agrees_on_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let seeds: Vec<[u8; 32]> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| load_or_create_key_file(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(seeds.iter().all(|s| *s == seeds[0]));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

//! Secrets at rest: the one key BotCraft seals them with, and the sealing.
//!
//! - [`SecretKey::load`] takes the key from `BOTCRAFT_SECRET_KEY` (the value itself) or
//!   `BOTCRAFT_SECRET_KEY_FILE` (a file holding it), never both; with neither, from
//!   `<data-dir>/secret.key`, generated on first use (32 random bytes, hex, mode 0600), so an
//!   embedded install works out of the box and a deployment sets its own. A value shorter
//!   than [`MIN_KEY_CHARS`] is refused. The 256-bit key is SHA-256 of a domain tag and the
//!   value, so any passphrase-like string or hex or base64 key works.
//! - [`Sealer::seal`] encrypts with ChaCha20-Poly1305 under a fresh random nonce and binds
//!   the record to a `context` (e.g. the server id it belongs to) as associated data: a
//!   sealed record copied onto another row does not open. The text form is
//!   `v1.<base64url(nonce ‖ ciphertext)>`.
//! - [`SecretKey::bound_to`] mixes in a second secret kept elsewhere (BotCraft keeps one in
//!   its store), so neither the key file nor the database alone is enough to unseal a record
//!   or forge an approval. [`Sealer::with_previous`] still opens what the unbound key sealed
//!   (records from before), sealing anew with the bound key only.
//! - Nothing here prints a key or a plaintext: `Debug` of both types is redacted, and
//!   errors say what failed, never with what.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

/// The variable holding the key itself.
pub const KEY_VAR: &str = "BOTCRAFT_SECRET_KEY";
/// The variable naming a file that holds the key.
pub const KEY_FILE_VAR: &str = "BOTCRAFT_SECRET_KEY_FILE";
/// The key file generated in the data directory when neither variable is set.
pub const GENERATED_KEY_FILE: &str = "secret.key";
/// The shortest key value accepted (characters, after trimming whitespace).
pub const MIN_KEY_CHARS: usize = 16;

const VERSION_PREFIX: &str = "v1.";
const NONCE_BYTES: usize = 12;
const DOMAIN: &[u8] = b"botcraft secret key v1\0";

/// Why the key could not be had, or a record not opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("set only one of {KEY_VAR} and {KEY_FILE_VAR}")]
    BothSet,
    #[error("the secret key from {source_name} is shorter than {MIN_KEY_CHARS} characters")]
    TooShort { source_name: String },
    #[error("the secret key file {path} could not be read: {error}")]
    ReadKeyFile {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("the secret key file {path} could not be created: {error}")]
    WriteKeyFile {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "no secret key: set {KEY_VAR} or {KEY_FILE_VAR} (there is no data directory to keep a generated one in)"
    )]
    NoKey,
    #[error("the sealed record is not in a known format")]
    Malformed,
    #[error(
        "the sealed record does not open with this key (another key, another owner, or altered)"
    )]
    WrongKey,
}

/// Where the key was found (for the startup log line; never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Variable,
    File(PathBuf),
    Generated(PathBuf),
}

/// The key secrets are sealed with.
#[derive(Clone)]
pub struct SecretKey {
    key: [u8; 32],
    source: KeySource,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretKey")
            .field("key", &"[hidden]")
            .field("source", &self.source)
            .finish()
    }
}

impl SecretKey {
    /// The key as the environment (`lookup`) and the data directory say; see the crate docs.
    pub fn load(
        lookup: impl Fn(&str) -> Option<String>,
        data_dir: Option<&Path>,
    ) -> Result<Self, SecretsError> {
        let value = lookup(KEY_VAR).filter(|v| !v.is_empty());
        let file = lookup(KEY_FILE_VAR).filter(|v| !v.is_empty());
        match (value, file, data_dir) {
            (Some(_), Some(_), _) => Err(SecretsError::BothSet),
            (Some(value), None, _) => Self::from_value(&value, KEY_VAR, KeySource::Variable),
            (None, Some(path), _) => {
                let path = PathBuf::from(path);
                let value = read_key_file(&path)?;
                Self::from_value(&value, &path.display().to_string(), KeySource::File(path))
            }
            (None, None, Some(dir)) => {
                let path = dir.join(GENERATED_KEY_FILE);
                let value = match read_key_file(&path) {
                    Ok(value) => value,
                    Err(SecretsError::ReadKeyFile { error, .. })
                        if error.kind() == std::io::ErrorKind::NotFound =>
                    {
                        generate_key_file(&path)?
                    }
                    Err(error) => return Err(error),
                };
                Self::from_value(
                    &value,
                    &path.display().to_string(),
                    KeySource::Generated(path),
                )
            }
            (None, None, None) => Err(SecretsError::NoKey),
        }
    }

    /// A key from its text value (`source_name` names where it came from, for errors).
    pub fn from_value(
        value: &str,
        source_name: &str,
        source: KeySource,
    ) -> Result<Self, SecretsError> {
        let value = value.trim();
        if value.chars().count() < MIN_KEY_CHARS {
            return Err(SecretsError::TooShort {
                source_name: source_name.to_owned(),
            });
        }
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        hasher.update(value.as_bytes());
        Ok(Self {
            key: hasher.finalize().into(),
            source,
        })
    }

    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// A key for one `purpose` (say `"approvals"`), derived from this one: the same on every
    /// process with the same key, and telling nothing of it or of another purpose's key.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(b"botcraft derived key v1\0");
        hasher.update((purpose.len() as u64).to_be_bytes());
        hasher.update(purpose.as_bytes());
        hasher.update(self.key);
        hasher.finalize().into()
    }

    /// This key bound to `share`, a second secret kept apart from it (the store's): what it
    /// seals or signs needs both. The same key and share give the same key everywhere.
    pub fn bound_to(&self, share: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"botcraft key bound to a share v1\0");
        hasher.update(self.key);
        hasher.update((share.len() as u64).to_be_bytes());
        hasher.update(share);
        Self {
            key: hasher.finalize().into(),
            source: self.source.clone(),
        }
    }

    /// The sealer for this key.
    pub fn sealer(&self) -> Sealer {
        Sealer {
            cipher: ChaCha20Poly1305::new(&Key::from(self.key)),
            previous: None,
        }
    }
}

fn read_key_file(path: &Path) -> Result<String, SecretsError> {
    std::fs::read_to_string(path).map_err(|error| SecretsError::ReadKeyFile {
        path: path.to_owned(),
        error,
    })
}

/// Create `path` holding a new random key, readable by its owner only; an existing file is
/// never overwritten (two processes starting at once agree on the first one written).
fn generate_key_file(path: &Path) -> Result<String, SecretsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let value = hex::encode(rand::random::<[u8; 32]>());
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| {
            file.write_all(value.as_bytes())?;
            file.sync_all()
        });
    match written {
        Ok(()) => Ok(value),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => read_key_file(path),
        Err(error) => Err(SecretsError::WriteKeyFile {
            path: path.to_owned(),
            error,
        }),
    }
}

/// Seals and opens records with one key (and opens those of a previous one, when given).
#[derive(Clone)]
pub struct Sealer {
    cipher: ChaCha20Poly1305,
    previous: Option<ChaCha20Poly1305>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer([hidden])")
    }
}

impl Sealer {
    /// This sealer, also opening records sealed with `previous` (never sealing with it).
    pub fn with_previous(mut self, previous: &SecretKey) -> Self {
        self.previous = Some(ChaCha20Poly1305::new(&Key::from(previous.key)));
        self
    }

    /// `plaintext` encrypted and bound to `context`, as text.
    pub fn seal(&self, plaintext: &[u8], context: &str) -> String {
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let payload = Payload {
            msg: plaintext,
            aad: context.as_bytes(),
        };
        // Encryption fails only for inputs past ChaCha20's 256 GiB limit.
        let ciphertext = self
            .cipher
            .encrypt(&Nonce::from(nonce), payload)
            .unwrap_or_default();
        let mut body = Vec::with_capacity(NONCE_BYTES + ciphertext.len());
        body.extend_from_slice(&nonce);
        body.extend_from_slice(&ciphertext);
        format!("{VERSION_PREFIX}{}", URL_SAFE_NO_PAD.encode(body))
    }

    /// The plaintext of `sealed`, if it was sealed with this key for `context` and not altered.
    pub fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SecretsError> {
        let body = sealed
            .strip_prefix(VERSION_PREFIX)
            .ok_or(SecretsError::Malformed)?;
        let body = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SecretsError::Malformed)?;
        if body.len() < NONCE_BYTES + 16 {
            return Err(SecretsError::Malformed);
        }
        let (nonce, ciphertext) = body.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| SecretsError::Malformed)?;
        let payload = || Payload {
            msg: ciphertext,
            aad: context.as_bytes(),
        };
        self.cipher
            .decrypt(&Nonce::from(nonce), payload())
            .or_else(|_| match &self.previous {
                Some(previous) => previous.decrypt(&Nonce::from(nonce), payload()),
                None => Err(chacha20poly1305::aead::Error),
            })
            .map_err(|_| SecretsError::WrongKey)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn derived_keys_depend_on_the_key_and_the_purpose() {
        let key = |value: &str| {
            SecretKey::from_value(value, "test", KeySource::Variable)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let a = key("a key of twenty-four chars");
        let again = key("a key of twenty-four chars");
        let b = key("another key, long enough");
        assert_eq!(a.derive("approvals"), again.derive("approvals"));
        assert_ne!(a.derive("approvals"), b.derive("approvals"));
        assert_ne!(a.derive("approvals"), a.derive("other"));
        assert_ne!(a.derive("approvals"), a.key);
    }

    #[test]
    fn a_bound_key_needs_both_secrets_and_still_opens_what_the_unbound_one_sealed() {
        let key = SecretKey::from_value("a key of twenty-four chars", "test", KeySource::Variable)
            .unwrap_or_else(|e| panic!("{e}"));
        let bound = key.bound_to(b"the store's share");
        assert_ne!(bound.key, key.key);
        assert_eq!(bound.key, key.bound_to(b"the store's share").key);
        assert_ne!(bound.key, key.bound_to(b"another share").key);
        assert_ne!(bound.derive("tool approvals"), key.derive("tool approvals"));
        let old = key.sealer().seal(b"token", "server-1");
        let new = bound.sealer().seal(b"token", "server-1");
        let upgraded = bound.sealer().with_previous(&key);
        assert_eq!(
            upgraded.open(&old, "server-1").ok(),
            Some(b"token".to_vec())
        );
        assert_eq!(
            upgraded.open(&new, "server-1").ok(),
            Some(b"token".to_vec())
        );
        // The key file alone opens nothing the bound key sealed.
        assert!(matches!(
            key.sealer().open(&new, "server-1"),
            Err(SecretsError::WrongKey)
        ));
        assert!(matches!(
            upgraded.open(&old, "server-2"),
            Err(SecretsError::WrongKey)
        ));
    }

    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use pretty_assertions::assert_eq;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn key(value: &str) -> SecretKey {
        SecretKey::from_value(value, "test", KeySource::Variable).expect("key")
    }

    #[test]
    fn a_sealed_record_opens_only_with_its_key_and_context() {
        let sealer = key("correct horse battery staple").sealer();
        let sealed = sealer.seal(b"{\"access_token\":\"tok\"}", "server-1");
        assert!(sealed.starts_with("v1."), "{sealed}");
        assert!(!sealed.contains("tok"), "{sealed}");
        assert_eq!(
            sealer.open(&sealed, "server-1").expect("opens"),
            b"{\"access_token\":\"tok\"}".to_vec()
        );
        assert_ne!(
            sealed,
            sealer.seal(b"{\"access_token\":\"tok\"}", "server-1")
        );
        let other_context = sealer.open(&sealed, "server-2");
        assert!(
            matches!(other_context, Err(SecretsError::WrongKey)),
            "{other_context:?}"
        );
        let other_key = key("another key of enough length")
            .sealer()
            .open(&sealed, "server-1");
        assert!(
            matches!(other_key, Err(SecretsError::WrongKey)),
            "{other_key:?}"
        );
        // A character in the middle carries six whole bits (the last one may carry unused
        // bits, whose change is a decoding error, not an altered record).
        let mut altered = sealed.clone().into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).expect("ascii");
        assert!(matches!(
            sealer.open(&altered, "server-1"),
            Err(SecretsError::WrongKey)
        ));
        for malformed in ["", "v2.abc", "v1.", "v1.!!!", "v1.AAAA"] {
            assert!(
                matches!(
                    sealer.open(malformed, "server-1"),
                    Err(SecretsError::Malformed)
                ),
                "{malformed}"
            );
        }
    }

    #[test]
    fn the_key_comes_from_one_source() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("key");
        std::fs::write(&file, "from-a-file-of-enough-length\n").expect("write");
        let file_name = file.display().to_string();
        let from_var = SecretKey::load(env(&[(KEY_VAR, "from-a-file-of-enough-length")]), None)
            .expect("variable");
        let from_file = SecretKey::load(env(&[(KEY_FILE_VAR, &file_name)]), None).expect("file");
        assert_eq!(from_var.key, from_file.key);
        assert_eq!(from_file.source(), &KeySource::File(file.clone()));
        assert!(matches!(
            SecretKey::load(
                env(&[
                    (KEY_VAR, "x".repeat(16).as_str()),
                    (KEY_FILE_VAR, &file_name)
                ]),
                None
            ),
            Err(SecretsError::BothSet)
        ));
        assert!(matches!(
            SecretKey::load(env(&[(KEY_VAR, "short")]), None),
            Err(SecretsError::TooShort { .. })
        ));
        assert!(matches!(
            SecretKey::load(env(&[]), None),
            Err(SecretsError::NoKey)
        ));
        let missing = SecretKey::load(env(&[(KEY_FILE_VAR, "/nonexistent/key")]), None);
        assert!(
            matches!(missing, Err(SecretsError::ReadKeyFile { .. })),
            "{missing:?}"
        );
    }

    #[test]
    fn with_no_variable_a_key_file_is_generated_once_for_its_owner_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = SecretKey::load(env(&[]), Some(dir.path())).expect("generated");
        let path = dir.path().join(GENERATED_KEY_FILE);
        assert_eq!(first.source(), &KeySource::Generated(path.clone()));
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let again = SecretKey::load(env(&[]), Some(dir.path())).expect("read back");
        assert_eq!(first.key, again.key);
        let sealed = first.sealer().seal(b"x", "c");
        assert_eq!(
            again.sealer().open(&sealed, "c").expect("opens"),
            b"x".to_vec()
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key = key("a-very-secret-value-123");
        let shown = format!("{key:?} {:?}", key.sealer());
        assert!(!shown.contains("secret-value"), "{shown}");
        assert!(!shown.contains(&hex::encode(key.key)), "{shown}");
    }
}

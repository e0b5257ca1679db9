//! One key set per database: at start, the signing key, the connection-sealing key and the Web
//! Bot Auth key this instance was given are checked against the record of the keys the instances sharing its
//! store use (`svc_ports::key_set`). A process-local key (the sandbox's, tests') is not checked:
//! nothing it signs or seals outlives it.

use anyhow::Context;
use svc_ports::{Clock, KeyFingerprint, KeyKind, KeySetStore};
use svc_services::key_set::{KeyCheck, KeySetError, check_key};
use svc_services::reseal::{Mode, Resealed, reseal_all};

use super::{Sealing, Signing, bot_auth::BotKeys, signer};

/// An instance's key of one kind, by identity, and where it came from (for the message).
struct Identity {
    current: KeyFingerprint,
    retired: Vec<KeyFingerprint>,
    from_file: Option<std::path::PathBuf>,
}

impl Identity {
    /// Where the key came from, for a message: ` (VARIABLE)` or ` (read from FILE, ...)`.
    fn source(&self, variable: &str) -> String {
        match &self.from_file {
            Some(path) => format!(" (read from {}, as {variable} is unset)", path.display()),
            None => format!(" ({variable})"),
        }
    }
}

fn signing_identity(signing: &Signing) -> anyhow::Result<Option<Identity>> {
    let from_file = match signing {
        Signing::Ephemeral => return Ok(None),
        Signing::Seed { .. } => None,
        Signing::KeyFile { path, .. } => Some(path.clone()),
    };
    let signer = signer(signing)?;
    let kid = |k: &str| KeyFingerprint::parse(k).context("a signing key's kid");
    Ok(Some(Identity {
        current: kid(signer.kid())?,
        retired: signer
            .retired()
            .iter()
            .map(|r| kid(r.kid()))
            .collect::<anyhow::Result<_>>()?,
        from_file,
    }))
}

fn connection_identity(sealing: &Sealing) -> anyhow::Result<Option<Identity>> {
    let (active, retired, from_file) = match sealing {
        Sealing::Ephemeral => return Ok(None),
        Sealing::Key { active, retired } => (active.clone(), retired, None),
        Sealing::KeyFile { path, retired } => (
            svc_oauth::load_or_create_key_file(path)
                .with_context(|| format!("connection key file {}", path.display()))?,
            retired,
            Some(path.clone()),
        ),
    };
    let (current, retired) = svc_oauth::key_fingerprints(&active, retired)
        .map_err(|e| anyhow::anyhow!("SVC_CONNECTION_KEY / SVC_CONNECTION_KEYS_RETIRED: {e}"))?;
    Ok(Some(Identity {
        current,
        retired,
        from_file,
    }))
}

fn web_bot_auth_identity(keys: &BotKeys) -> anyhow::Result<Option<Identity>> {
    let from_file = match keys {
        BotKeys::Off | BotKeys::Ephemeral => return Ok(None),
        BotKeys::Seed { .. } => None,
        BotKeys::KeyFile { path, .. } => Some(path.clone()),
    };
    // The keyids do not depend on the agent the identity signs as.
    let Some(bot) = super::bot_auth::identity(
        keys,
        "https://key-set.invalid",
        std::time::Duration::from_secs(60),
    )?
    else {
        return Ok(None);
    };
    let kid = |k: &str| KeyFingerprint::parse(k).context("a Web Bot Auth keyid");
    Ok(Some(Identity {
        current: kid(bot.keyid())?,
        retired: bot
            .previous_keyids()
            .into_iter()
            .map(kid)
            .collect::<anyhow::Result<_>>()?,
        from_file,
    }))
}

/// What the operator reads when a key is refused: the variables to set and the keys by short
/// identity (a kid or a fingerprint; never key material).
fn refusal(kind: KeyKind, identity: &Identity, recorded: &[KeyFingerprint]) -> anyhow::Error {
    let (variable, retired_variable, what, id) = match kind {
        KeyKind::Signing => (
            "SVC_SIGNING_KEY",
            "SVC_SIGNING_KEYS_RETIRED",
            "signing key",
            "kid",
        ),
        KeyKind::Connection => (
            "SVC_CONNECTION_KEY",
            "SVC_CONNECTION_KEYS_RETIRED",
            "connection key",
            "fingerprint",
        ),
        KeyKind::WebBotAuth => (
            "SVC_WEB_BOT_AUTH_KEY",
            "SVC_WEB_BOT_AUTH_KEYS_RETIRED",
            "Web Bot Auth key",
            "keyid",
        ),
    };
    let source = identity.source(variable);
    let recorded: Vec<String> = recorded
        .iter()
        .map(|k| format!("{id} {}…", k.short()))
        .collect();
    // A request signature lives a minute: a lost Web Bot Auth key leaves nothing unverifiable
    // behind, so starting over is allowed (a lost signing key would strand its artifacts).
    let start_over = if kind == KeyKind::WebBotAuth {
        ". If the recorded key is lost, stop every instance and delete the record \
         (DELETE FROM key_set WHERE kind = 'web_bot_auth'); the next start records its key"
    } else {
        ""
    };
    anyhow::anyhow!(
        "{variable}: this instance's {what}{source}, {id} {}…, is not one the instances sharing \
         this database use (recorded: {}). Set {variable} to the {what} every instance shares; to \
         rotate, set the new key in {variable} and keep the recorded one in \
         {retired_variable}{start_over}",
        identity.current.short(),
        recorded.join(", "),
    )
}

async fn check(
    store: &dyn KeySetStore,
    clock: &dyn Clock,
    kind: KeyKind,
    identity: Option<Identity>,
) -> anyhow::Result<()> {
    let Some(identity) = identity else {
        return Ok(());
    };
    match check_key(store, clock, kind, &identity.current, &identity.retired).await {
        Ok(KeyCheck::Known) => Ok(()),
        Ok(KeyCheck::Recorded) => {
            tracing::info!(
                kind = kind.as_str(),
                key = identity.current.short(),
                "key recorded as the store's"
            );
            Ok(())
        }
        Ok(KeyCheck::Rotated) => {
            tracing::warn!(
                kind = kind.as_str(),
                key = identity.current.short(),
                "rotated: the new key joined the store's record"
            );
            Ok(())
        }
        Err(KeySetError::Mismatch { recorded, .. }) => Err(refusal(kind, &identity, &recorded)),
        Err(KeySetError::Store(e)) => {
            Err(anyhow::Error::new(e).context("checking the keys against the store's record"))
        }
    }
}

/// Refuses to start (naming the variable to set) when this instance's signing, connection or
/// Web Bot Auth key is not one the instances sharing the store use; records it on the store's
/// first start and on a rotation.
pub(super) async fn check_key_set(
    store: &dyn KeySetStore,
    clock: &dyn Clock,
    signing: &Signing,
    sealing: &Sealing,
    bot_keys: &BotKeys,
) -> anyhow::Result<()> {
    check(store, clock, KeyKind::Signing, signing_identity(signing)?).await?;
    check(
        store,
        clock,
        KeyKind::Connection,
        connection_identity(sealing)?,
    )
    .await?;
    check(
        store,
        clock,
        KeyKind::WebBotAuth,
        web_bot_auth_identity(bot_keys)?,
    )
    .await
}

/// Which recorded keys `svc reseal` may seal with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResealKey {
    /// Only the newest key recorded: the one the instances rotated to last.
    Newest,
    /// Any recorded key (a rollback to an older key the instances use again).
    AnyRecorded,
}

/// `svc reseal`: seals every stored secret not sealed the current way (by the active connection
/// key, bound to its record) again, or with [`Mode::Check`] only counts them. Nothing is created:
/// not a database (a SQLite file must exist), not a key file. The active key must be the newest
/// one the store's instances recorded at their start (or, with [`ResealKey::AnyRecorded`], any
/// recorded one), so a wrong directory, a stale configuration or a key no instance started with
/// is refused before anything is sealed. That the instances all hold the key is the operator's
/// part: run it once every instance runs with it as its current key.
pub async fn reseal(
    database_url: &str,
    sealing: &Sealing,
    mode: Mode,
    allowed: ResealKey,
) -> anyhow::Result<Resealed> {
    if let Some(path) = sqlite_path(database_url)
        && !path.exists()
    {
        anyhow::bail!(
            "SVC_DATABASE_URL: there is no database at {} (the instances' SVC_DATABASE_URL, \
             or run from their directory)",
            path.display()
        );
    }
    let (active, retired, from_file) = match sealing {
        Sealing::Ephemeral => anyhow::bail!(
            "SVC_CONNECTION_KEY: resealing needs the connection key the instances use"
        ),
        Sealing::Key { active, retired } => (active.clone(), retired.clone(), None),
        Sealing::KeyFile { path, retired } => {
            let key = std::fs::read_to_string(path).with_context(|| {
                format!(
                    "SVC_CONNECTION_KEY is unset and the key file {} cannot be read",
                    path.display()
                )
            })?;
            (key.trim().to_owned(), retired.clone(), Some(path.clone()))
        }
    };
    let (current, retired_fingerprints) = svc_oauth::key_fingerprints(&active, &retired)
        .map_err(|e| anyhow::anyhow!("SVC_CONNECTION_KEY / SVC_CONNECTION_KEYS_RETIRED: {e}"))?;
    let stores = super::Stores::open(database_url, 2).await?;
    let recorded = stores
        .key_set
        .recorded_keys(KeyKind::Connection)
        .await
        .context("reading the store's record of keys")?;
    let admitted = match allowed {
        ResealKey::Newest => recorded.last() == Some(&current),
        ResealKey::AnyRecorded => recorded.contains(&current),
    };
    if !admitted {
        let identity = Identity {
            current,
            retired: retired_fingerprints,
            from_file,
        };
        return Err(reseal_refusal(&identity, &recorded, allowed));
    }
    let sealer = svc_oauth::AesGcmSealer::from_settings(&active, &retired)
        .map_err(|e| anyhow::anyhow!("SVC_CONNECTION_KEY: {e}"))?;
    Ok(reseal_all(stores.sealed.as_ref(), &sealer, mode).await)
}

/// Why a key may not reseal, naming where it came from and the recorded keys by fingerprint.
fn reseal_refusal(
    identity: &Identity,
    recorded: &[KeyFingerprint],
    allowed: ResealKey,
) -> anyhow::Error {
    let source = identity.source("SVC_CONNECTION_KEY");
    if recorded.is_empty() {
        return anyhow::anyhow!(
            "SVC_DATABASE_URL: no instance has recorded a connection key in this database, so \
             it seals nothing yet; is it the instances' database?"
        );
    }
    let recorded: Vec<String> = recorded
        .iter()
        .map(|k| format!("fingerprint {}…", k.short()))
        .collect();
    let which = match allowed {
        ResealKey::Newest => "the newest connection key the instances recorded",
        ResealKey::AnyRecorded => "a connection key the instances recorded",
    };
    anyhow::anyhow!(
        "SVC_CONNECTION_KEY: this connection key{source}, fingerprint {}…, is not {which} \
         (recorded, oldest first: {}). Start the instances with it as their key first (the \
         old one in SVC_CONNECTION_KEYS_RETIRED), then reseal; after a rollback to an older \
         key, pass --allow-older-key",
        identity.current.short(),
        recorded.join(", ")
    )
}

/// The file of a `sqlite:` URL (`sqlite://PATH` or `sqlite:PATH`, options after `?`), if it
/// names one.
fn sqlite_path(database_url: &str) -> Option<std::path::PathBuf> {
    let rest = database_url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::sqlite_path;

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(sqlite_path("sqlite://./svc.db"), Some("./svc.db".into()));
        assert_eq!(
            sqlite_path("sqlite:///var/lib/svc.db?mode=rwc"),
            Some("/var/lib/svc.db".into())
        );
        assert_eq!(sqlite_path("sqlite:svc.db"), Some("svc.db".into()));
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(sqlite_path("postgres://u@h/db"), None);
    }
}

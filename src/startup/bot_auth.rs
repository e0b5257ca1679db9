//! The Web Bot Auth identity: the Ed25519 key that signs every outbound request, from
//! `SVC_WEB_BOT_AUTH_KEY`, its key file, or a fresh one for this process (the sandbox, tests),
//! and the keys still published while a rotation settles.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD},
};
use svc_fetch::bot_auth::{BotAuth, PreviousKey};

/// Where the Web Bot Auth key comes from.
#[derive(Debug, Clone, Default)]
pub enum BotKeys {
    /// Outbound requests are not signed and no directory is served (`SVC_WEB_BOT_AUTH=off`).
    Off,
    /// A fresh key for this process: the sandbox's and tests' (its directory is served by the
    /// same process, so its signatures verify while it runs).
    #[default]
    Ephemeral,
    /// `SVC_WEB_BOT_AUTH_KEY` (base64url seed) and the previous keys still published.
    Seed {
        active: String,
        retired: Vec<String>,
    },
    /// A key file, created (mode 0600) on first start: `svc serve`'s default.
    KeyFile {
        path: std::path::PathBuf,
        retired: Vec<String>,
    },
}

fn previous(retired: &[String]) -> anyhow::Result<Vec<PreviousKey>> {
    retired
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let key = match entry.trim().strip_prefix("pub:") {
                Some(public) => [URL_SAFE_NO_PAD, URL_SAFE, STANDARD]
                    .iter()
                    .find_map(|e| e.decode(public.trim()).ok())
                    .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
                    .map(PreviousKey::Public)
                    .context("expected a 32-byte Ed25519 public key in base64url"),
                None => svc_signer::parse_seed(entry).map(PreviousKey::Seed),
            };
            key.with_context(|| format!("SVC_WEB_BOT_AUTH_KEYS_RETIRED: retired key #{}", i + 1))
        })
        .collect()
}

/// The identity `keys` describe, signing as `agent` (the site's origin, which serves the
/// directory); `None` when Web Bot Auth is off.
pub fn identity(
    keys: &BotKeys,
    agent: &str,
    lifetime: Duration,
) -> anyhow::Result<Option<Arc<BotAuth>>> {
    let (seed, retired) = match keys {
        BotKeys::Off => return Ok(None),
        BotKeys::Ephemeral => {
            let mut seed = [0u8; 32];
            getrandom::fill(&mut seed).context("no randomness for a Web Bot Auth key")?;
            (seed, Vec::new())
        }
        BotKeys::Seed { active, retired } => (
            svc_signer::parse_seed(active).context("SVC_WEB_BOT_AUTH_KEY")?,
            previous(retired)?,
        ),
        BotKeys::KeyFile { path, retired } => (
            svc_signer::load_or_create_key_file(path)
                .with_context(|| format!("SVC_WEB_BOT_AUTH_KEY_FILE {}", path.display()))?,
            previous(retired)?,
        ),
    };
    let identity = BotAuth::new(seed, retired, agent, lifetime).context("SVC_SITE_URL")?;
    tracing::info!(
        keyid = identity.keyid(),
        agent,
        "outbound requests are signed (Web Bot Auth)"
    );
    Ok(Some(Arc::new(identity)))
}

/// The identity one-shot commands (`svc maps learn`, `svc scan URL`, `svc read URL`) sign with:
/// the served one when this machine is configured as the service is (`SVC_SITE_URL` or
/// `SVC_BASE_URL`, and `SVC_WEB_BOT_AUTH_KEY` or an existing key file), so their requests
/// verify against the service's own directory. Otherwise none: a key nobody publishes proves
/// nothing, and a command never creates a key file.
pub fn for_command() -> anyhow::Result<Option<Arc<BotAuth>>> {
    for_command_in(|name| std::env::var(name).ok())
}

/// [`for_command`] with the settings looked up by `lookup` (the environment, or a test's).
fn for_command_in(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<Arc<BotAuth>>> {
    let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    if let Some(switch) = var("SVC_WEB_BOT_AUTH") {
        match switch.trim().to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => {}
            "off" | "false" | "0" => return Ok(None),
            other => anyhow::bail!("SVC_WEB_BOT_AUTH must be `on` or `off`, got {other:?}"),
        }
    }
    let Some(agent) = var("SVC_SITE_URL").or_else(|| var("SVC_BASE_URL")) else {
        return Ok(None);
    };
    let retired: Vec<String> = var("SVC_WEB_BOT_AUTH_KEYS_RETIRED")
        .map(|r| r.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let keys = match var("SVC_WEB_BOT_AUTH_KEY") {
        Some(active) => BotKeys::Seed { active, retired },
        None => {
            let path = std::path::PathBuf::from(
                var("SVC_WEB_BOT_AUTH_KEY_FILE").unwrap_or_else(|| "./svc-web-bot-auth.key".into()),
            );
            if !path.exists() {
                return Ok(None);
            }
            BotKeys::KeyFile { path, retired }
        }
    };
    let lifetime = match var("SVC_WEB_BOT_AUTH_LIFETIME_SECONDS") {
        Some(s) => s
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|s| (10..=3600).contains(s))
            .context("SVC_WEB_BOT_AUTH_LIFETIME_SECONDS must be between 10 and 3600")?,
        None => svc_fetch::bot_auth::DEFAULT_LIFETIME.as_secs(),
    };
    identity(
        &keys,
        agent.trim_end_matches('/'),
        Duration::from_secs(lifetime),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    const SEED: &str = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU";

    #[test]
    fn commands_sign_only_as_the_configured_service() {
        let signed = for_command_in(settings(&[
            ("SVC_SITE_URL", "https://svc.example/"),
            ("SVC_WEB_BOT_AUTH_KEY", SEED),
        ]))
        .unwrap()
        .expect("configured as the service: signed");
        assert_eq!(
            signed.keyid(),
            "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"
        );
        // No public origin, or no key (and no key file): nobody could verify, so unsigned.
        assert!(
            for_command_in(settings(&[("SVC_WEB_BOT_AUTH_KEY", SEED)]))
                .unwrap()
                .is_none()
        );
        assert!(
            for_command_in(settings(&[
                ("SVC_SITE_URL", "https://svc.example"),
                (
                    "SVC_WEB_BOT_AUTH_KEY_FILE",
                    "/nonexistent/svc-web-bot-auth.key"
                ),
            ]))
            .unwrap()
            .is_none()
        );
        assert!(
            for_command_in(settings(&[
                ("SVC_SITE_URL", "https://svc.example"),
                ("SVC_WEB_BOT_AUTH_KEY", SEED),
                ("SVC_WEB_BOT_AUTH", "off"),
            ]))
            .unwrap()
            .is_none()
        );
        let bad = for_command_in(settings(&[("SVC_WEB_BOT_AUTH", "sometimes")])).unwrap_err();
        assert!(bad.to_string().contains("SVC_WEB_BOT_AUTH"), "{bad}");
        let lifetime = for_command_in(settings(&[
            ("SVC_SITE_URL", "https://svc.example"),
            ("SVC_WEB_BOT_AUTH_KEY", SEED),
            ("SVC_WEB_BOT_AUTH_LIFETIME_SECONDS", "5"),
        ]))
        .unwrap_err();
        assert!(
            lifetime
                .to_string()
                .contains("SVC_WEB_BOT_AUTH_LIFETIME_SECONDS"),
            "{lifetime}"
        );
        let retired = for_command_in(settings(&[
            ("SVC_SITE_URL", "https://svc.example"),
            ("SVC_WEB_BOT_AUTH_KEY", SEED),
            ("SVC_WEB_BOT_AUTH_KEYS_RETIRED", "pub:not-a-key"),
        ]))
        .unwrap_err();
        assert!(
            format!("{retired:#}").contains("SVC_WEB_BOT_AUTH_KEYS_RETIRED"),
            "{retired:#}"
        );
    }
}

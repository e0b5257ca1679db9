//! Target-site connections, the outside half: the OAuth 2.0 authorization-code flow with PKCE
//! against each configured provider (through the `oauth2` crate), and AES-256-GCM sealing of
//! the credentials and verifiers the store keeps.

use std::{collections::HashMap, time::Duration};

use aes_gcm::{
    Aes256Gcm, Key, Nonce,
    aead::{Aead, KeyInit, Payload},
};
use async_trait::async_trait;
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::Utc;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
    basic::BasicClient,
};
use serde::Deserialize;
use svc_ports::{
    ConnectionProvider, ConnectionProviderError, CredentialKind, KeyFingerprint, ProviderGrant,
    ProviderId, SealError, SealedSecret, SecretSealer,
};

/// One provider's endpoints and this service's client registration there.
#[derive(Clone, Deserialize)]
pub struct ProviderConfig {
    pub id: ProviderId,
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    pub authorize_url: String,
    pub token_url: String,
    /// Answers `{"account": ...}` (or `email`, `preferred_username`, `sub`) for the token.
    pub userinfo_url: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default = "bearer")]
    pub credential: CredentialKind,
    /// The sites its credentials are sent to (their subdomains too); no others.
    #[serde(default)]
    pub hosts: Vec<String>,
}

fn bearer() -> CredentialKind {
    CredentialKind::Bearer
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("id", &self.id)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("authorize_url", &self.authorize_url)
            .finish()
    }
}

/// The configured providers, over HTTP.
pub struct OAuthProviders {
    providers: HashMap<ProviderId, ProviderConfig>,
    http: reqwest::Client,
}

impl OAuthProviders {
    pub fn new(providers: Vec<ProviderConfig>) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            // The token endpoint must answer itself: a redirect there is never followed.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()?;
        Ok(Self {
            providers: providers.into_iter().map(|p| (p.id.clone(), p)).collect(),
            http,
        })
    }

    /// Providers from a JSON array of [`ProviderConfig`] (`SVC_CONNECTION_PROVIDERS`).
    pub fn from_json(json: &str) -> Result<Vec<ProviderConfig>, serde_json::Error> {
        serde_json::from_str(json)
    }

    fn config(&self, provider: &ProviderId) -> Result<&ProviderConfig, ConnectionProviderError> {
        self.providers
            .get(provider)
            .ok_or_else(|| ConnectionProviderError::UnknownProvider(provider.to_string()))
    }

    async fn grant<R: TokenResponse>(
        &self,
        config: &ProviderConfig,
        token: &R,
        previous_refresh: Option<&str>,
    ) -> Result<ProviderGrant, ConnectionProviderError> {
        let access_token = token.access_token().secret();
        let upstream_account = self.upstream_account(config, access_token).await?;
        Ok(self.grant_as(config, token, previous_refresh, upstream_account))
    }

    /// The grant of a token response, as `upstream_account`'s.
    fn grant_as<R: TokenResponse>(
        &self,
        config: &ProviderConfig,
        token: &R,
        previous_refresh: Option<&str>,
        upstream_account: String,
    ) -> ProviderGrant {
        ProviderGrant {
            kind: config.credential,
            refresh_token: token
                .refresh_token()
                .map(|r| r.secret().to_owned())
                .or_else(|| previous_refresh.map(str::to_owned)),
            expires_at: token
                .expires_in()
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .map(|d| Utc::now() + d),
            access_token: token.access_token().secret().to_owned(),
            upstream_account,
        }
    }

    /// Who the token belongs to, as the provider says.
    async fn upstream_account(
        &self,
        config: &ProviderConfig,
        access_token: &str,
    ) -> Result<String, ConnectionProviderError> {
        let resp = self
            .http
            .get(&config.userinfo_url)
            .bearer_auth(access_token)
            .send()
            .await
            .map_err(|e| ConnectionProviderError::Unavailable(format!("userinfo: {e}")))?;
        if !resp.status().is_success() {
            return Err(ConnectionProviderError::Unavailable(format!(
                "userinfo answered {}",
                resp.status()
            )));
        }
        let info: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| ConnectionProviderError::Unavailable(format!("userinfo: {e}")))?;
        ["account", "email", "preferred_username", "sub"]
            .iter()
            .find_map(|k| info[*k].as_str().map(str::to_owned))
            .ok_or_else(|| ConnectionProviderError::Unavailable("userinfo names no account".into()))
    }
}

fn client(
    config: &ProviderConfig,
) -> Result<
    BasicClient<
        oauth2::EndpointSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointSet,
    >,
    ConnectionProviderError,
> {
    let bad = |e: oauth2::url::ParseError| {
        ConnectionProviderError::Unavailable(format!(
            "provider {} is misconfigured: {e}",
            config.id
        ))
    };
    let mut client = BasicClient::new(ClientId::new(config.client_id.clone()))
        .set_auth_uri(AuthUrl::new(config.authorize_url.clone()).map_err(bad)?)
        .set_token_uri(TokenUrl::new(config.token_url.clone()).map_err(bad)?);
    if let Some(secret) = &config.client_secret {
        client = client.set_client_secret(ClientSecret::new(secret.clone()));
    }
    Ok(client)
}

fn token_error<RE>(
    e: RequestTokenError<RE, oauth2::basic::BasicErrorResponse>,
) -> ConnectionProviderError
where
    RE: std::error::Error + 'static,
{
    match e {
        // Only `invalid_grant` says the code or refresh token is dead; `invalid_client`,
        // `server_error` and the rest are the provider's or our configuration's trouble, and
        // must not end anyone's connection.
        RequestTokenError::ServerResponse(r)
            if *r.error() == oauth2::basic::BasicErrorResponseType::InvalidGrant =>
        {
            ConnectionProviderError::Refused(r.to_string())
        }
        other => ConnectionProviderError::Unavailable(other.to_string()),
    }
}

#[async_trait]
impl ConnectionProvider for OAuthProviders {
    fn serves(&self, provider: &ProviderId) -> bool {
        self.providers.contains_key(provider)
    }

    fn may_receive(&self, provider: &ProviderId, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.providers.get(provider).is_some_and(|p| {
            p.hosts.iter().any(|allowed| {
                let allowed = allowed.trim_end_matches('.').to_ascii_lowercase();
                !allowed.is_empty() && (host == allowed || host.ends_with(&format!(".{allowed}")))
            })
        })
    }

    fn authorization_url(
        &self,
        provider: &ProviderId,
        state: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
        login_hint: Option<String>,
    ) -> Result<String, ConnectionProviderError> {
        let config = self.config(provider)?;
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|e| ConnectionProviderError::Unavailable(e.to_string()))?;
        let challenge = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(
            pkce_verifier.to_owned(),
        ));
        let client = client(config)?.set_redirect_uri(redirect);
        let state = state.to_owned();
        let mut request = client
            .authorize_url(move || CsrfToken::new(state))
            .set_pkce_challenge(challenge)
            .add_scopes(config.scopes.iter().cloned().map(Scope::new));
        if let Some(hint) = login_hint {
            request = request.add_extra_param("login_hint", hint);
        }
        Ok(request.url().0.to_string())
    }

    async fn exchange_code(
        &self,
        provider: &ProviderId,
        code: &str,
        pkce_verifier: &str,
        redirect_uri: &str,
    ) -> Result<ProviderGrant, ConnectionProviderError> {
        let config = self.config(provider)?;
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|e| ConnectionProviderError::Unavailable(e.to_string()))?;
        let token = client(config)?
            .set_redirect_uri(redirect)
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&self.http)
            .await
            .map_err(token_error)?;
        self.grant(config, &token, None).await
    }

    async fn refresh(
        &self,
        provider: &ProviderId,
        refresh_token: &str,
        account: &str,
    ) -> Result<ProviderGrant, ConnectionProviderError> {
        let config = self.config(provider)?;
        let token = client(config)?
            .exchange_refresh_token(&RefreshToken::new(refresh_token.to_owned()))
            .request_async(&self.http)
            .await
            .map_err(token_error)?;
        match self.grant(config, &token, Some(refresh_token)).await {
            // The refresh token is spent at the provider: keep what it gave.
            Err(ConnectionProviderError::Unavailable(why)) => {
                tracing::warn!(provider = %provider, reason = %why, "userinfo failed after a refresh: the new tokens are kept as the connection's account's");
                Ok(self.grant_as(config, &token, Some(refresh_token), account.to_owned()))
            }
            other => other,
        }
    }
}

/// AES-256-GCM with a random 96-bit nonce per seal: `version (1) || nonce (12) || ciphertext`,
/// the context bound as associated data (version 2). Version 1, sealed before contexts, had
/// none and still opens under any. Opens with the active key or any retired one, so keys can
/// be rotated.
pub struct AesGcmSealer {
    active: Aes256Gcm,
    retired: Vec<Aes256Gcm>,
}

/// Sealed with the context as associated data.
const SEAL_VERSION: u8 = 2;
/// Sealed without associated data, before contexts.
const SEAL_VERSION_UNBOUND: u8 = 1;

/// A connection key setting: 32 bytes, base64url without padding.
fn key_bytes(setting: &str) -> Result<[u8; 32], String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(setting.trim())
        .map_err(|_| "a connection key is 32 bytes in base64url".to_owned())?;
    bytes
        .try_into()
        .map_err(|_| "a connection key is 32 bytes in base64url".to_owned())
}

/// The fingerprints (HMAC-SHA256 of a fixed label under each key, never the key) of the active
/// and the retired connection keys, as the store's key-set record holds them.
pub fn key_fingerprints(
    active: &str,
    retired: &[String],
) -> Result<(KeyFingerprint, Vec<KeyFingerprint>), String> {
    let fingerprint = |s: &str| key_bytes(s).map(|k| KeyFingerprint::of_secret_key(&k));
    Ok((
        fingerprint(active)?,
        retired
            .iter()
            .map(|r| fingerprint(r))
            .collect::<Result<_, _>>()?,
    ))
}

impl AesGcmSealer {
    /// Keys are 32 bytes, base64url without padding (`SVC_CONNECTION_KEY`).
    pub fn from_settings(active: &str, retired: &[String]) -> Result<Self, String> {
        let key = |s: &str| -> Result<Aes256Gcm, String> {
            Ok(Aes256Gcm::new(&Key::<Aes256Gcm>::from(key_bytes(s)?)))
        };
        Ok(Self {
            active: key(active)?,
            retired: retired.iter().map(|r| key(r)).collect::<Result<_, _>>()?,
        })
    }

    /// A fresh random key (the sandbox's; sealed data dies with the process).
    pub fn generate() -> Self {
        Self {
            active: Aes256Gcm::new(&Aes256Gcm::generate_key(aes_gcm::aead::OsRng)),
            retired: Vec::new(),
        }
    }

    /// A new random key in the settings format.
    pub fn new_key() -> String {
        let key = Aes256Gcm::generate_key(aes_gcm::aead::OsRng);
        URL_SAFE_NO_PAD.encode(key)
    }
}

impl SecretSealer for AesGcmSealer {
    fn seal(&self, plaintext: &[u8], context: &str) -> SealedSecret {
        let nonce_bytes: [u8; 12] = rand::random();
        let nonce = Nonce::from(nonce_bytes);
        let payload = Payload {
            msg: plaintext,
            aad: context.as_bytes(),
        };
        // Encryption with a valid key and a 12-byte nonce cannot fail for in-memory sizes.
        let ciphertext = self.active.encrypt(&nonce, payload).unwrap_or_default();
        let mut out = Vec::with_capacity(1 + 12 + ciphertext.len());
        out.push(SEAL_VERSION);
        out.extend_from_slice(&nonce_bytes);
        out.extend_from_slice(&ciphertext);
        SealedSecret::new(out)
    }

    fn open(&self, sealed: &SealedSecret, context: &str) -> Result<Vec<u8>, SealError> {
        self.opened(sealed, context).map(|(plaintext, _)| plaintext)
    }

    fn reseal(
        &self,
        sealed: &SealedSecret,
        context: &str,
    ) -> Result<Option<SealedSecret>, SealError> {
        match self.opened(sealed, context)? {
            (_, Current::Yes) => Ok(None),
            (plaintext, Current::No) => Ok(Some(self.seal(&plaintext, context))),
        }
    }
}

/// Whether a value opened was sealed the current way: the active key, bound to its context.
enum Current {
    Yes,
    No,
}

impl AesGcmSealer {
    fn opened(
        &self,
        sealed: &SealedSecret,
        context: &str,
    ) -> Result<(Vec<u8>, Current), SealError> {
        let bytes = sealed.as_bytes();
        let aad = match bytes.first() {
            Some(&SEAL_VERSION) => context.as_bytes(),
            Some(&SEAL_VERSION_UNBOUND) => b"",
            _ => return Err(SealError("not a sealed secret of this service".into())),
        };
        if bytes.len() < 1 + 12 + 16 {
            return Err(SealError("not a sealed secret of this service".into()));
        }
        let mut nonce_bytes = [0u8; 12];
        nonce_bytes.copy_from_slice(&bytes[1..13]);
        let nonce = Nonce::from(nonce_bytes);
        let payload = || Payload {
            msg: &bytes[13..],
            aad,
        };
        if let Ok(plaintext) = self.active.decrypt(&nonce, payload()) {
            let current = if bytes[0] == SEAL_VERSION {
                Current::Yes
            } else {
                Current::No
            };
            return Ok((plaintext, current));
        }
        self.retired
            .iter()
            .find_map(|key| key.decrypt(&nonce, payload()).ok())
            .map(|plaintext| (plaintext, Current::No))
            .ok_or_else(|| SealError("no key opens it for this record, or it was altered".into()))
    }
}

/// The connection key in `path`, created (random, mode 0600) when the file does not exist.
pub fn load_or_create_key_file(path: &std::path::Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(key) => Ok(key.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = AesGcmSealer::new_key();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            use std::io::Write;
            options.open(path)?.write_all(key.as_bytes())?;
            Ok(key)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_their_key_and_unaltered() {
        const FOR: &str = "connection:c1:credentials";
        let sealer = AesGcmSealer::generate();
        let sealed = sealer.seal(b"refresh-token-123", FOR);
        assert_eq!(sealed.as_bytes()[0], SEAL_VERSION);
        assert!(!sealed.as_bytes().windows(7).any(|w| w == b"refresh"));
        assert_eq!(sealer.open(&sealed, FOR).unwrap(), b"refresh-token-123");
        assert_ne!(
            sealer.seal(b"x", FOR).as_bytes(),
            sealer.seal(b"x", FOR).as_bytes(),
            "fresh nonces"
        );
        let mut bytes = sealed.as_bytes().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(sealer.open(&SealedSecret::new(bytes), FOR).is_err());
        assert!(AesGcmSealer::generate().open(&sealed, FOR).is_err());
        assert!(sealer.open(&SealedSecret::new(vec![1, 2, 3]), FOR).is_err());
        assert!(sealer.open(&SealedSecret::new(vec![2]), FOR).is_err());
        // Another record's, or another field's, context: refused.
        assert!(sealer.open(&sealed, "connection:c2:credentials").is_err());
        assert!(sealer.open(&sealed, "connection:c1:pkce_verifier").is_err());
        assert!(sealer.open(&sealed, "").is_err());
        // Downgraded to the unbound version: refused too (the tag covers the context).
        let mut downgraded = sealed.as_bytes().to_vec();
        downgraded[0] = SEAL_VERSION_UNBOUND;
        assert!(sealer.open(&SealedSecret::new(downgraded), FOR).is_err());
    }

    /// The first format, as earlier versions wrote it: no associated data.
    fn sealed_unbound(sealer: &AesGcmSealer, plaintext: &[u8]) -> SealedSecret {
        let nonce_bytes: [u8; 12] = rand::random();
        let ciphertext = sealer
            .active
            .encrypt(&Nonce::from(nonce_bytes), plaintext)
            .unwrap();
        let mut bytes = vec![SEAL_VERSION_UNBOUND];
        bytes.extend_from_slice(&nonce_bytes);
        bytes.extend_from_slice(&ciphertext);
        SealedSecret::new(bytes)
    }

    #[test]
    fn secrets_sealed_before_contexts_still_open() {
        let sealer = AesGcmSealer::generate();
        let old = sealed_unbound(&sealer, b"old-token");
        assert_eq!(
            sealer.open(&old, "webhook_endpoint:e1:secret").unwrap(),
            b"old-token"
        );
        // Marked as bound, it does not open: the version byte is not a free choice.
        let mut upgraded = old.as_bytes().to_vec();
        upgraded[0] = SEAL_VERSION;
        assert!(
            sealer
                .open(&SealedSecret::new(upgraded), "webhook_endpoint:e1:secret")
                .is_err()
        );
    }

    #[test]
    fn rotated_keys_still_open_old_secrets() {
        let old = AesGcmSealer::new_key();
        let new = AesGcmSealer::new_key();
        let before = AesGcmSealer::from_settings(&old, &[]).unwrap();
        let sealed = before.seal(b"token", "c");
        let after = AesGcmSealer::from_settings(&new, &[old]).unwrap();
        assert_eq!(after.open(&sealed, "c").unwrap(), b"token");
        assert!(AesGcmSealer::from_settings("short", &[]).is_err());
    }

    #[test]
    fn resealing_rewrites_only_what_is_not_sealed_the_current_way() {
        const FOR: &str = "webhook_endpoint:e1:secret";
        let old_key = AesGcmSealer::new_key();
        let new_key = AesGcmSealer::new_key();
        let before = AesGcmSealer::from_settings(&old_key, &[]).unwrap();
        let after = AesGcmSealer::from_settings(&new_key, std::slice::from_ref(&old_key)).unwrap();
        let only_new = AesGcmSealer::from_settings(&new_key, &[]).unwrap();

        // Current: left alone.
        let current = after.seal(b"whsec", FOR);
        assert_eq!(after.reseal(&current, FOR).unwrap(), None);
        // By a retired key: sealed again by the active one, which alone then opens it.
        let by_retired = before.seal(b"whsec", FOR);
        assert!(only_new.open(&by_retired, FOR).is_err());
        let resealed = after.reseal(&by_retired, FOR).unwrap().expect("resealed");
        assert_eq!(only_new.open(&resealed, FOR).unwrap(), b"whsec");
        assert_eq!(after.reseal(&resealed, FOR).unwrap(), None);
        // Unbound (the first format), even by the active key: bound to its context now.
        for sealer in [&before, &after] {
            let unbound = sealed_unbound(sealer, b"whsec");
            let bound = after.reseal(&unbound, FOR).unwrap().expect("resealed");
            assert_eq!(bound.as_bytes()[0], SEAL_VERSION);
            assert_eq!(only_new.open(&bound, FOR).unwrap(), b"whsec");
            assert!(only_new.open(&bound, "webhook_endpoint:e2:secret").is_err());
        }
        // What does not open is not resealed: the same refusal as `open`'s.
        assert!(
            after
                .reseal(&current, "webhook_endpoint:e2:secret")
                .is_err()
        );
        assert!(only_new.reseal(&by_retired, FOR).is_err());
        assert!(after.reseal(&SealedSecret::new(vec![2; 40]), FOR).is_err());
    }

    proptest::proptest! {
        #[test]
        fn reseal_fails_exactly_when_open_does(
            flip in proptest::option::of((0usize..64, 1u8..=255)),
            version in proptest::option::of(0u8..4),
            unbound: bool,
            context in "[a-c]{0,2}",
        ) {
            let sealer = AesGcmSealer::generate();
            let sealed = if unbound {
                sealed_unbound(&sealer, b"secret")
            } else {
                sealer.seal(b"secret", "ab")
            };
            let mut bytes = sealed.into_bytes();
            if let Some((at, mask)) = flip {
                let at = at % bytes.len();
                bytes[at] ^= mask;
            }
            if let Some(v) = version {
                bytes[0] = v;
            }
            let sealed = SealedSecret::new(bytes);
            let opened = sealer.open(&sealed, &context);
            let resealed = sealer.reseal(&sealed, &context);
            proptest::prop_assert_eq!(opened.is_err(), resealed.is_err());
            if let Ok(Some(again)) = resealed {
                proptest::prop_assert_eq!(sealer.open(&again, &context).ok(), opened.ok());
            }
        }
    }

    #[test]
    fn fingerprints_tell_keys_apart_without_showing_them() {
        let (a, b) = (AesGcmSealer::new_key(), AesGcmSealer::new_key());
        let (fa, retired) = key_fingerprints(&a, std::slice::from_ref(&b)).unwrap();
        let (fb, _) = key_fingerprints(&b, &[]).unwrap();
        assert_eq!(retired, std::slice::from_ref(&fb));
        assert_ne!(fa, fb);
        assert_eq!(key_fingerprints(&a, &[]).unwrap().0, fa, "stable");
        for (key, f) in [(&a, &fa), (&b, &fb)] {
            let raw = URL_SAFE_NO_PAD.decode(key).unwrap();
            let hex: String = raw.iter().map(|x| format!("{x:02x}")).collect();
            assert!(!f.as_str().contains(key.as_str()) && !f.as_str().contains(&hex[..16]));
        }
        assert!(key_fingerprints("short", &[]).is_err());
    }
}

//! Emailed codes: the API-key signup fallback and the web sign-in both send a 6-digit code and
//! check it (per code and per IP, both in the store).

use std::time::Duration;

use svc_ports::{
    ChallengeId, ChallengePurpose, ClientAddress, Email, EmailChallenge, KeyHash, KnownBrowser,
    MailError, MailMessage,
    identity::{EMAIL_CODE_LEN, MAX_CODE_ATTEMPTS},
    keys::BASE62,
    store::IdentityError,
};

use super::{
    IdentityFailure, IdentityService, MAX_AGENT_NAME_LEN, SignedIn, SignupKey, chrono_of,
    clean_text,
};

/// Whether `raw` is an e-mail address as JSON Schema's `format: email` has it (the check the
/// OpenAPI document's clients run).
pub fn is_email_format(raw: &str) -> bool {
    static CHECK: std::sync::LazyLock<Option<jsonschema::Validator>> =
        std::sync::LazyLock::new(|| {
            jsonschema::options()
                .should_validate_formats(true)
                .build(&serde_json::json!({"type": "string", "format": "email"}))
                .ok()
        });
    CHECK
        .as_ref()
        .is_some_and(|v| v.is_valid(&serde_json::Value::from(raw)))
}

/// How long a browser that signed in with a code is remembered as the address's own.
pub const KNOWN_BROWSER_TTL: Duration = Duration::from_secs(180 * 24 * 3600);

/// How many times the per-address code cap a browser that signed in as the address before may
/// ask for: strangers fill only the first share, so the person's own browser always gets a code.
const KNOWN_BROWSER_CODES: u32 = 4;

const KNOWN_BROWSER_TOKEN_LEN: usize = 43;

/// Wrong codes on one address in a day, across its challenges, before its codes stop: a
/// person mistypes a few; a guesser gets at most this many of a million a day.
pub const MAX_WRONG_CODES_PER_ADDRESS_PER_DAY: u32 = 10;

impl IdentityService {
    /// Sends a 6-digit code to `email` and returns the challenge id (`deviceId`).
    pub async fn start_email(
        &self,
        purpose: ChallengePurpose,
        email: &str,
        agent_name: Option<&str>,
        scope: Option<&str>,
        face: crate::telemetry::Face,
    ) -> Result<ChallengeId, IdentityFailure> {
        self.send_code(purpose, email, agent_name, scope, face, None)
            .await
    }

    /// The web sign-in's code. `known_browser` is the browser's mark from an earlier sign-in
    /// (its cookie): when it is this address's, the browser may ask for
    /// [`KNOWN_BROWSER_CODES`] times the cap, and its challenge's wrong codes are counted
    /// apart from strangers' (see `try_code`). Anyone may ask for codes to any address with
    /// no credentials, so without the mark five strangers' requests an hour would hold the
    /// person's own sign-in, and their guesses would lock it for the day.
    pub async fn start_sign_in(
        &self,
        email: &str,
        known_browser: Option<&str>,
    ) -> Result<ChallengeId, IdentityFailure> {
        self.send_code(
            ChallengePurpose::SignIn,
            email,
            None,
            None,
            crate::telemetry::Face::Web,
            known_browser,
        )
        .await
    }

    async fn send_code(
        &self,
        purpose: ChallengePurpose,
        email: &str,
        agent_name: Option<&str>,
        scope: Option<&str>,
        face: crate::telemetry::Face,
        known_browser: Option<&str>,
    ) -> Result<ChallengeId, IdentityFailure> {
        // An agent's signup takes exactly what the OpenAPI document declares (`format: email`,
        // as JSON Schema checks it); the web form keeps trimming what a person typed.
        if purpose == ChallengePurpose::ApiKey && !is_email_format(email) {
            return Err(IdentityFailure::InvalidRequest(
                "email: not an e-mail address (RFC 5321: name@domain, no spaces around it)".into(),
            ));
        }
        // The address names the account and is shown back on pages (the device approval,
        // a handoff link's masked address): it must read as what it is, so no invisible or
        // direction-changing characters (`ana@example.com\u{202e}` was an account of its own).
        if svc_ports::text::misleads(email.trim()) {
            return Err(IdentityFailure::InvalidRequest(
                "email: invisible or direction-changing characters are not allowed".into(),
            ));
        }
        let email = Email::parse(email.trim())
            .map_err(|e| IdentityFailure::InvalidRequest(format!("email: {e}")))?;
        let agent_name = clean_text(agent_name, MAX_AGENT_NAME_LEN, "agent name")?;
        let scopes = self.signup_scopes(scope, false)?;
        let now = self.now();
        let hour_ago = now - chrono::Duration::hours(1);
        let id = ChallengeId::from_ulid(self.ports.entropy.ulid());
        let code = self.ports.entropy.pick(b"0123456789", EMAIL_CODE_LEN);
        let challenge = EmailChallenge {
            code_hash: EmailChallenge::code_hash_of(&id, &code),
            id: id.clone(),
            purpose,
            email: email.clone(),
            agent_name: agent_name.clone(),
            scopes,
            attempts: 0,
            created_at: now,
            expires_at: now + chrono_of(self.settings.email_code_ttl),
            consumed_at: None,
            known_browser: self.knows_browser(known_browser, &email).await,
        };
        // Counted per purpose: an agent's signups (anyone may ask for them, with no
        // credentials) never use up the person's own sign-in codes.
        let cap = self.settings.codes_per_address_per_hour;
        let mut stored = self.store_challenge(&challenge, hour_ago, cap).await?;
        if !stored && challenge.known_browser {
            let allowance = cap.saturating_mul(KNOWN_BROWSER_CODES);
            stored = self
                .store_challenge(&challenge, hour_ago, allowance)
                .await?;
        }
        if !stored {
            return Err(IdentityFailure::TooManyCodes {
                retry_after: Duration::from_secs(3600),
            });
        }
        let minutes = self.settings.email_code_ttl.as_secs() / 60;
        let (subject, text) = match purpose {
            ChallengePurpose::SignIn => (
                "Your svc sign-in code".to_owned(),
                format!(
                    "Your svc sign-in code is {code}\n\nEnter it on the sign-in page. It expires in {minutes} minutes.\n\
                     If you did not try to sign in, ignore this email.\n"
                ),
            ),
            ChallengePurpose::ApiKey => (
                "Your svc verification code".to_owned(),
                format!(
                    "An AI agent{} asked for an svc API key for this address.\n\n\
                     Verification code: {code}\n\nGive the code to the agent only if you asked it to sign you up. \
                     It expires in {minutes} minutes. Terms: {site}/terms  Privacy: {site}/privacy\n",
                    agent_name
                        .as_deref()
                        .filter(|n| plain_name(n))
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    site = self.settings.site_url,
                ),
            ),
        };
        let message = MailMessage {
            to: email,
            subject,
            text,
        };
        match self.ports.mailer.send(&message).await {
            Ok(()) => {
                tracing::info!(challenge_id = %id, purpose = purpose.as_str(), "email code sent");
                if purpose == ChallengePurpose::ApiKey {
                    self.funnel.record(
                        crate::telemetry::FunnelStep::new(
                            face,
                            "setup_session_created",
                            "signup",
                            id.as_str(),
                        )
                        .capability("register"),
                    );
                }
                Ok(id)
            }
            Err(MailError::Rejected(reason)) => Err(IdentityFailure::InvalidRequest(format!(
                "the address does not accept mail: {reason}"
            ))),
            Err(MailError::Unavailable(reason)) => {
                tracing::error!(challenge_id = %id, error = %reason, "mail relay unavailable");
                Err(IdentityFailure::MailUnavailable)
            }
        }
    }

    /// Stores the challenge unless `cap` were sent to its address for its purpose since `since`.
    async fn store_challenge(
        &self,
        challenge: &EmailChallenge,
        since: chrono::DateTime<chrono::Utc>,
        cap: u32,
    ) -> Result<bool, IdentityFailure> {
        Ok(self
            .ports
            .identity
            .insert_challenge_within(challenge, since, cap)
            .await
            .map_err(|e| anyhow::Error::new(e).context("storing email challenge"))?)
    }

    /// Whether `token` marks a browser that signed in as `email` before and is still
    /// remembered. A mark that cannot be read only costs the larger allowance: the browser is
    /// taken for a stranger's.
    async fn knows_browser(&self, token: Option<&str>, email: &Email) -> bool {
        let Some(token) = token.filter(|t| !t.is_empty() && t.len() <= 128) else {
            return false;
        };
        match self
            .ports
            .identity
            .known_browser(&KeyHash::of(token), self.now())
            .await
        {
            Ok(known) => known.is_some_and(|k| k.email == *email),
            Err(e) => {
                tracing::warn!(error = %e, "could not read the browser's sign-in mark");
                false
            }
        }
    }

    /// Marks this browser as one that signed in as `email`, for [`KNOWN_BROWSER_TTL`]; the
    /// token goes in its own cookie. A mark that cannot be stored costs only the larger code
    /// allowance, so the sign-in goes on without it.
    async fn remember_browser(&self, email: &Email) -> Option<String> {
        let now = self.now();
        let token = self.ports.entropy.pick(BASE62, KNOWN_BROWSER_TOKEN_LEN);
        let browser = KnownBrowser {
            token_hash: KeyHash::of(&token),
            email: email.clone(),
            created_at: now,
            expires_at: now + chrono_of(KNOWN_BROWSER_TTL),
        };
        match self.ports.identity.insert_known_browser(&browser).await {
            Ok(()) => Some(token),
            Err(e) => {
                tracing::warn!(error = %e, "could not remember the signed-in browser");
                None
            }
        }
    }

    /// Takes one try and compares the code in constant time. Wrong codes count per challenge
    /// and per IP (both in the store): the attempt holds a slot of the IP's lockout count,
    /// which it gives back unless it presented a wrong code.
    async fn check_code(
        &self,
        purpose: ChallengePurpose,
        challenge_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<EmailChallenge, IdentityFailure> {
        self.wrong_codes.take(ip).await?;
        let (outcome, wrong_code) = self.try_code(purpose, challenge_id, code).await;
        if !wrong_code {
            self.wrong_codes.give_back(ip).await;
        }
        outcome
    }

    /// One try of a code; the flag says whether a wrong code was presented.
    async fn try_code(
        &self,
        purpose: ChallengePurpose,
        challenge_id: &str,
        code: &str,
    ) -> (Result<EmailChallenge, IdentityFailure>, bool) {
        let unknown = || IdentityFailure::UnknownChallenge;
        let Ok(id) = ChallengeId::parse(challenge_id.trim()) else {
            return (Err(unknown()), false);
        };
        let now = self.now();
        let refused = |f: IdentityFailure| (Err(f), false);
        // A challenge of the other purpose is no challenge here, and takes none of its tries
        // (a review burned a sign-in code's five tries through /api/verify). A purpose never
        // changes, so reading it first is safe.
        match self.ports.identity.challenge(&id).await {
            Ok(Some(c)) if c.purpose == purpose => {}
            Ok(_) => return (Err(unknown()), true),
            Err(e) => {
                return refused(anyhow::Error::new(e).context("reading a challenge").into());
            }
        }
        let challenge = match self.ports.identity.attempt_challenge(&id, now).await {
            Ok(c) if c.purpose == purpose => c,
            Ok(_) | Err(IdentityError::NotFound) => return refused(unknown()),
            Err(IdentityError::Expired) => {
                return refused(IdentityFailure::CodeDead(
                    "the code expired; start again to get a new one",
                ));
            }
            Err(IdentityError::Exhausted) => {
                return refused(IdentityFailure::CodeDead(
                    "too many wrong codes; this code is dead, start again to get a new one",
                ));
            }
            Err(IdentityError::AlreadyUsed) => {
                return refused(IdentityFailure::CodeDead("this code was already used"));
            }
            Err(e) => {
                return refused(anyhow::Error::new(e).context("taking a code try").into());
            }
        };
        // Guesses at one address, whatever challenges and addresses they come from: a day's
        // worth stops every code for it (a review spread 50 an hour over fresh challenges and
        // /64s). The try just taken counts; nothing is compared past the limit. Challenges
        // the address's own browser started (its mark) are counted apart: anyone can ask for
        // codes to an address and guess them, and their guesses must not hold the person's
        // sign-in for the day; the browser's own guesses have a day's worth of their own.
        let since = now - chrono::Duration::hours(24);
        match self
            .ports
            .identity
            .wrong_code_tries(&challenge.email, since, challenge.known_browser)
            .await
        {
            Ok(wrong) if wrong > MAX_WRONG_CODES_PER_ADDRESS_PER_DAY => {
                tracing::warn!(challenge_id = %id, "codes for this address are locked for the day: too many wrong ones");
                return refused(IdentityFailure::AddressLocked);
            }
            Ok(_) => {}
            Err(e) => {
                return refused(anyhow::Error::new(e).context("counting wrong codes").into());
            }
        }
        let presented = EmailChallenge::code_hash_of(&id, code.trim());
        if presented.ct_eq(&challenge.code_hash) {
            return (Ok(challenge), false);
        }
        let tries_left = MAX_CODE_ATTEMPTS.saturating_sub(challenge.attempts);
        if tries_left == 0 {
            return (
                Err(IdentityFailure::CodeDead(
                    "too many wrong codes; this code is dead, start again to get a new one",
                )),
                true,
            );
        }
        (Err(IdentityFailure::WrongCode { tries_left }), true)
    }

    /// `/api/verify`: the right code proves the address, so the account is found or created
    /// now (never from the address alone) and the key is stored with the code's consumption.
    pub async fn verify_api_key_code(
        &self,
        device_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<SignupKey, IdentityFailure> {
        let challenge = self
            .check_code(ChallengePurpose::ApiKey, device_id, code, ip)
            .await?;
        let account = self.keys.signup_account(&challenge.email).await?;
        let label = challenge
            .agent_name
            .clone()
            .unwrap_or_else(|| "email signup".into());
        let (secret, record) = self.keys.draft_key(
            &account.id,
            challenge.scopes.clone(),
            format!("email: {label}"),
        )?;
        match self
            .ports
            .identity
            .consume_challenge(&challenge.id, self.now(), Some(&record))
            .await
        {
            Ok(_) => {
                tracing::info!(challenge_id = %challenge.id, account_id = %account.id, key_prefix = %record.prefix, "api key issued by email code");
                Ok(self.signup_key(secret, record, account))
            }
            Err(IdentityError::AlreadyUsed) => {
                Err(IdentityFailure::CodeDead("this code was already used"))
            }
            Err(IdentityError::Expired) => Err(IdentityFailure::CodeDead(
                "the code expired; start again to get a new one",
            )),
            Err(e) => Err(anyhow::Error::new(e)
                .context("issuing key for email code")
                .into()),
        }
    }

    /// Web sign-in: the right code proves the address; the session token goes in a cookie.
    pub async fn verify_sign_in_code(
        &self,
        challenge_id: &str,
        code: &str,
        ip: Option<ClientAddress>,
    ) -> Result<SignedIn, IdentityFailure> {
        let challenge = self
            .check_code(ChallengePurpose::SignIn, challenge_id, code, ip)
            .await?;
        let now = self.now();
        match self
            .ports
            .identity
            .consume_challenge(&challenge.id, now, None)
            .await
        {
            Ok(_) => {}
            Err(IdentityError::AlreadyUsed) => {
                return Err(IdentityFailure::CodeDead("this code was already used"));
            }
            Err(IdentityError::Expired) => {
                return Err(IdentityFailure::CodeDead(
                    "the code expired; start again to get a new one",
                ));
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context("consuming sign-in code")
                    .into());
            }
        }
        let account = self.keys.signup_account(&challenge.email).await?;
        let mut signed_in = self.start_session(account).await?;
        signed_in.known_browser = self.remember_browser(&challenge.email).await;
        Ok(signed_in)
    }
}

/// Whether an agent's name may go into the mail sent to an address anyone can name: a name,
/// not a link or an address ("Visit evil.example/claim to get 500 USD" from our own domain
/// would be phishing). Names with a web address, an e-mail address or a path stay out.
fn plain_name(name: &str) -> bool {
    const MAX: usize = 40;
    let lower = name.to_ascii_lowercase();
    let has_domain = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .any(|word| {
            let mut labels = word.split('.');
            let first = labels.next().unwrap_or("");
            let rest: Vec<&str> = labels.collect();
            !first.is_empty()
                && rest.last().is_some_and(|tld| {
                    tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
                })
        });
    name.chars().count() <= MAX
        && !has_domain
        && !["://", "www", "@", "/", "http"]
            .iter()
            .any(|s| lower.contains(s))
}

#[cfg(test)]
mod tests {
    use super::{is_email_format, plain_name};

    /// A review had the service mail "An AI agent (Visit https://evil.example/claim to get 500
    /// USD) asked for ..." to any address.
    #[test]
    fn only_plain_names_go_into_the_mail() {
        for ok in [
            "Claude",
            "Claude 3.5 Sonnet",
            "my-agent_2",
            "Agent (test)",
            "GPT-4o mini",
        ] {
            assert!(plain_name(ok), "{ok}");
        }
        for bad in [
            "Visit https://evil.example/claim to get 500 USD",
            "go to evil.example now",
            "EVIL.COM",
            "www dot evil",
            "mail me: a@b",
            "see /claim",
            "an agent whose name runs far past forty characters",
        ] {
            assert!(!plain_name(bad), "{bad}");
        }
    }

    /// The check JSON Schema's `format: email` makes, as the OpenAPI document's clients run it.
    #[test]
    fn email_format_is_json_schemas() {
        for ok in ["a@example.com", "A+b@x.co", "a@x", "\"a b\"@x.co"] {
            assert!(is_email_format(ok), "{ok}");
        }
        for bad in [
            "",
            " a@x.co",
            "a@x.co ",
            "a..b@x.co",
            "é@x.co",
            "a@-x.co",
            "a",
            "@x.co",
        ] {
            assert!(!is_email_format(bad), "{bad}");
        }
    }
}

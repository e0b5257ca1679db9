//! Outgoing email: the port, and the message it carries.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::account::Email;

/// One plain-text message. `Debug` leaves the body out: bodies carry one-time codes.
#[derive(Clone, PartialEq, Eq)]
pub struct MailMessage {
    pub to: Email,
    pub subject: String,
    pub text: String,
}

impl std::fmt::Debug for MailMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailMessage")
            .field("to", &self.to)
            .field("subject", &self.subject)
            .field("text", &"<withheld>")
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The relay refused the message for good (bad address, policy): sending again won't help.
    #[error("the mail relay refused the message: {0}")]
    Rejected(String),
    /// The relay could not be reached or failed for now.
    #[error("the mail relay is unavailable: {0}")]
    Unavailable(String),
}

/// Sends mail. Implementations MUST NOT log message bodies (they carry one-time codes), and
/// MUST return [`MailError::Rejected`] for permanent refusals and
/// [`MailError::Unavailable`] for transient failures.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait Mailer: Send + Sync {
    async fn send(&self, message: &MailMessage) -> Result<(), MailError>;
}

/// A message as the sandbox's outbox keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SentMail {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub sent_at: DateTime<Utc>,
}

/// A mailbox people may read: the sandbox's, served at `/sandbox/outbox`. Never in live.
pub trait Outbox: Send + Sync {
    /// Messages sent so far, newest first.
    fn sent(&self) -> Vec<SentMail>;
}

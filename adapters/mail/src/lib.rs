//! Mailer adapters: [`SmtpMailer`] speaks SMTP to a relay (`SVC_SMTP_URL`), [`LogMailer`] only
//! notes that a message would have gone out. Neither ever logs a message body: bodies carry
//! one-time codes.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use lettre::{
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
    message::{Mailbox, header::ContentType},
};
use svc_ports::{Email, MailError, MailMessage, Mailer};

/// How long one delivery to the relay may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(15);

/// Sends through an SMTP relay: `smtp://host:port` (plain, for a local relay),
/// `smtp://user:pass@host:587?tls=required` (STARTTLS) or `smtps://host:465` (TLS).
pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpMailer {
    /// Must be called inside a Tokio runtime (the connection pool runs on it).
    pub fn new(url: &str, from: &str) -> anyhow::Result<Self> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .context("SVC_SMTP_URL is not a valid smtp:// or smtps:// URL")?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let from = from
            .parse::<Mailbox>()
            .with_context(|| format!("SVC_MAIL_FROM `{from}` is not a mailbox"))?;
        Ok(Self { transport, from })
    }
}

#[async_trait]
impl Mailer for SmtpMailer {
    async fn send(&self, message: &MailMessage) -> Result<(), MailError> {
        let to = message
            .to
            .as_str()
            .parse::<Mailbox>()
            .map_err(|e| MailError::Rejected(format!("recipient address: {e}")))?;
        let email = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(message.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(message.text.clone())
            .map_err(|e| MailError::Rejected(e.to_string()))?;
        match self.transport.send(email).await {
            Ok(_) => {
                tracing::info!(to = %mask(&message.to), subject = %message.subject, "mail sent");
                Ok(())
            }
            Err(e) if e.is_permanent() => Err(MailError::Rejected(e.to_string())),
            Err(e) => Err(MailError::Unavailable(e.to_string())),
        }
    }
}

/// For `svc serve` without a relay: records that a message would have been sent, to whom
/// (masked) and about what, and withholds the body. Sign-in codes cannot arrive this way,
/// which `svc serve` says at start.
pub struct LogMailer;

#[async_trait]
impl Mailer for LogMailer {
    async fn send(&self, message: &MailMessage) -> Result<(), MailError> {
        tracing::warn!(
            to = %mask(&message.to),
            subject = %message.subject,
            "mail not delivered: no SVC_SMTP_URL is set (body withheld from the log)"
        );
        Ok(())
    }
}

/// `a***@example.com`: enough to tell messages apart in a log, not enough to harvest.
pub fn mask(email: &Email) -> String {
    let s = email.as_str();
    match s.split_once('@') {
        Some((local, domain)) => {
            let first = local.chars().next().unwrap_or('*');
            format!("{first}***@{domain}")
        }
        None => "***".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_local_part() {
        let e = Email::parse("alice@example.com").unwrap();
        assert_eq!(mask(&e), "a***@example.com");
    }

    // The connection pool lives on the Tokio runtime, so the mailer is built inside one.
    #[tokio::test]
    async fn refuses_bad_settings() {
        assert!(SmtpMailer::new("http://nope", "svc <no-reply@example.com>").is_err());
        assert!(SmtpMailer::new("smtp://127.0.0.1:2525", "not a mailbox").is_err());
        assert!(SmtpMailer::new("smtp://127.0.0.1:2525", "svc <no-reply@example.com>").is_ok());
    }
}

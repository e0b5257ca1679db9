//! The sandbox's mail outbox: a real `Mailer` that keeps what it sends in memory, readable at
//! `/sandbox/outbox` so agents and tests can pick up one-time codes.

use std::sync::Mutex;

use async_trait::async_trait;
use svc_ports::{Clock, MailError, MailMessage, Mailer, Outbox, SentMail};

/// Keeps at most this many messages (the oldest go first).
const OUTBOX_CAPACITY: usize = 500;

pub struct MemoryOutbox {
    clock: std::sync::Arc<dyn Clock>,
    sent: Mutex<Vec<SentMail>>,
}

impl MemoryOutbox {
    pub fn new(clock: std::sync::Arc<dyn Clock>) -> Self {
        Self {
            clock,
            sent: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl Mailer for MemoryOutbox {
    async fn send(&self, message: &MailMessage) -> Result<(), MailError> {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if sent.len() >= OUTBOX_CAPACITY {
            sent.remove(0);
        }
        sent.push(SentMail {
            to: message.to.to_string(),
            subject: message.subject.clone(),
            text: message.text.clone(),
            sent_at: self.clock.now(),
        });
        Ok(())
    }
}

impl Outbox for MemoryOutbox {
    fn sent(&self) -> Vec<SentMail> {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.iter().rev().cloned().collect()
    }
}

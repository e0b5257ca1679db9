//! Sending what the outbox holds: claim due deliveries under a lease, sign each per Standard
//! Webhooks, POST it through the guarded transport, and record the attempt under the lease
//! (delivered on a 2xx; else again after a backoff, for 72 hours after the event, then given
//! up and logged). Time is the Clock port's, so tests move it instead of waiting.

use chrono::{DateTime, Duration, Utc};
use futures_util::future::join_all;
use svc_ports::{
    ActionRequest, Attempt, AttemptResult, ClaimCaps, ClaimedDelivery, EndpointHealth, HookError,
    actions::HttpMethod, webhooks::WebhookSecret,
};

use super::HookService;

/// Retries stop this long after the event happened.
pub const GIVE_UP_AFTER_HOURS: i64 = 72;
/// How long a claimed delivery is this instance's: longer than one request may take (15 s),
/// so a live sender always records before another instance may claim it again.
pub const LEASE_SECONDS: i64 = 60;
/// Deliveries claimed by one [`HookService::deliver_due`].
pub const BATCH: u32 = 16;
/// The most deliveries one instance sends at once.
pub const SENDERS: u32 = 64;
/// Of those, the most to endpoints whose last attempt failed: endpoints that hang, however
/// many tenants own them, hold at most these and never the senders of those that answer.
pub const FAILING_SENDERS: u32 = 8;
/// The most deliveries in flight at once, on all instances, to one endpoint and for one
/// account: a slow or flooded endpoint holds at most 4 senders, and an account (up to 16
/// endpoints) at most 16, so every other tenant's deliveries go on. Claims endpoints whose
/// last attempt did not fail.
pub const CAPS: ClaimCaps = ClaimCaps {
    per_endpoint: 4,
    per_account: 16,
    endpoints: EndpointHealth::Answering,
};
/// The same for endpoints whose last attempt failed: one delivery at a time each (a retry
/// that succeeds makes the endpoint answering again), two per account.
pub const FAILING_CAPS: ClaimCaps = ClaimCaps {
    per_endpoint: 1,
    per_account: 2,
    endpoints: EndpointHealth::Failing,
};
/// The most of an endpoint's answer kept in the log.
const MAX_ERROR_LEN: usize = 200;

/// The wait before attempt `n + 1` after `n` failed attempts (Standard Webhooks' suggested
/// schedule: 5 s, 5 min, 30 min, 2 h, 5 h, then every 10 h).
pub fn retry_delay(failed_attempts: u32) -> Duration {
    match failed_attempts {
        0 | 1 => Duration::seconds(5),
        2 => Duration::minutes(5),
        3 => Duration::minutes(30),
        4 => Duration::hours(2),
        5 => Duration::hours(5),
        _ => Duration::hours(10),
    }
}

/// What follows a failed attempt at `now` that was the `attempts`-th: the next try, not later
/// than the end of the window that opened at `from` (one last try there), or giving up once
/// the window is over.
fn after_failure(from: DateTime<Utc>, attempts: u32, now: DateTime<Utc>) -> AttemptResult {
    let deadline = from + Duration::hours(GIVE_UP_AFTER_HOURS);
    if now >= deadline {
        return AttemptResult::GaveUp;
    }
    AttemptResult::RetryAt((now + retry_delay(attempts)).min(deadline))
}

impl HookService {
    /// Claims and sends the deliveries due now, at most one batch, and waits for every send;
    /// answers how many it tried. Safe to run on every instance at once: each delivery is
    /// claimed by one.
    pub async fn deliver_due(&self) -> Result<usize, svc_ports::StoreError> {
        let mut claimed = self.claim_due(BATCH, CAPS).await?;
        let room = BATCH.saturating_sub(u32::try_from(claimed.len()).unwrap_or(BATCH));
        claimed.extend(
            self.claim_due(room.min(FAILING_SENDERS), FAILING_CAPS)
                .await?,
        );
        let tried = claimed.len();
        join_all(claimed.into_iter().map(|c| self.attempt(c))).await;
        Ok(tried)
    }

    /// Claims at most `room` deliveries due now, within `caps` ([`CAPS`] for endpoints that
    /// answer, [`FAILING_CAPS`] for those that fail); the caller sends each with
    /// [`Self::attempt`] within the lease.
    pub async fn claim_due(
        &self,
        room: u32,
        caps: ClaimCaps,
    ) -> Result<Vec<ClaimedDelivery>, svc_ports::StoreError> {
        if room == 0 {
            return Ok(Vec::new());
        }
        let now = self.now();
        let lease = self.entropy.base62(24);
        self.store
            .claim_due(
                now,
                &lease,
                now + Duration::seconds(LEASE_SECONDS),
                room,
                caps,
            )
            .await
    }

    /// Sends one claimed delivery and records the attempt under its lease.
    pub async fn attempt(&self, claimed: ClaimedDelivery) {
        let d = &claimed.delivery;
        let sent_at = self.now();
        let (status_code, error) = match self.send(&claimed, sent_at).await {
            Ok(status) if (200..300).contains(&status) => (Some(status), None),
            Ok(status) => (
                Some(status),
                Some(format!("the endpoint answered HTTP {status}")),
            ),
            Err(e) => (None, Some(e)),
        };
        let at = self.now();
        let result = match &error {
            None => AttemptResult::Delivered,
            // A replay, asked for by a person, gets a window of its own from when it was
            // asked; the first delivery's runs from the event.
            Some(_) => {
                let window_start = if d.replay_of.is_some() {
                    d.created_at
                } else {
                    claimed.event_created_at
                };
                after_failure(window_start, d.attempts + 1, at)
            }
        };
        let attempt = Attempt {
            at,
            status_code,
            error: error.map(|e| e.chars().take(MAX_ERROR_LEN).collect()),
            result,
        };
        match self
            .store
            .record_attempt(&d.id, &claimed.lease, &attempt)
            .await
        {
            Ok(r) => match result {
                AttemptResult::GaveUp => tracing::warn!(
                    delivery_id = %r.id, event_id = %r.event_id, endpoint_id = %r.endpoint_id,
                    attempts = r.attempts, error = ?r.last_error,
                    "webhook delivery given up: no 2xx within {GIVE_UP_AFTER_HOURS} hours"
                ),
                AttemptResult::RetryAt(next) => tracing::info!(
                    delivery_id = %r.id, attempts = r.attempts, next_attempt_at = %next,
                    error = ?r.last_error, "webhook delivery failed; retrying later"
                ),
                AttemptResult::Delivered => tracing::info!(
                    delivery_id = %r.id, event_id = %r.event_id, attempts = r.attempts,
                    "webhook delivered"
                ),
            },
            // The lease ran out and another instance took the delivery over: its attempt
            // counts; this one was the at-least-once duplicate the receiver deduplicates.
            Err(HookError::LeaseLost) => {
                tracing::warn!(delivery_id = %d.id, "webhook attempt not recorded: the lease was lost")
            }
            Err(e) => {
                tracing::error!(delivery_id = %d.id, error = %e, "webhook attempt not recorded")
            }
        }
    }

    /// Signs and POSTs one delivery; the endpoint's status, or why nothing came back.
    async fn send(&self, claimed: &ClaimedDelivery, at: DateTime<Utc>) -> Result<u16, String> {
        let sealed = self
            .sealer
            .open(
                &claimed.secret,
                &super::secret_context(&claimed.delivery.endpoint_id),
            )
            .map_err(|e| format!("the endpoint's secret cannot be opened: {e}"))?;
        let secret = std::str::from_utf8(&sealed)
            .ok()
            .and_then(|s| WebhookSecret::parse(s).ok())
            .ok_or("the endpoint's secret is unreadable")?;
        let id = claimed.delivery.event_id.as_str();
        let timestamp = at.timestamp();
        let body = claimed.payload.as_bytes();
        let request = ActionRequest {
            method: HttpMethod::Post,
            url: claimed.delivery.endpoint_url.clone(),
            headers: vec![
                ("webhook-id".into(), id.to_owned()),
                ("webhook-timestamp".into(), timestamp.to_string()),
                ("webhook-signature".into(), secret.sign(id, timestamp, body)),
            ],
            body: Some(("application/json".into(), body.to_vec())),
        };
        // Redirects are not followed: a 3xx is a failed attempt, never a hop to another host.
        self.transport
            .send(&request)
            .await
            .map(|r| r.status)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_and_end_at_the_window_with_one_last_try() {
        let t0 = DateTime::<Utc>::from_timestamp(1_780_000_000, 0).unwrap();
        assert_eq!(
            after_failure(t0, 1, t0),
            AttemptResult::RetryAt(t0 + Duration::seconds(5))
        );
        assert_eq!(
            after_failure(t0, 2, t0 + Duration::seconds(5)),
            AttemptResult::RetryAt(t0 + Duration::seconds(305))
        );
        let late = t0 + Duration::hours(70);
        assert_eq!(
            after_failure(t0, 11, late),
            AttemptResult::RetryAt(t0 + Duration::hours(72))
        );
        assert_eq!(
            after_failure(t0, 12, t0 + Duration::hours(72)),
            AttemptResult::GaveUp
        );
        // The schedule only grows, and the window holds about a dozen tries.
        let mut at = t0;
        let mut tries = 1;
        while let AttemptResult::RetryAt(next) = after_failure(t0, tries, at) {
            assert!(next > at);
            at = next;
            tries += 1;
        }
        assert_eq!(at, t0 + Duration::hours(72));
        assert!((10..=14).contains(&tries), "{tries}");
    }
}

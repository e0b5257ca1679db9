//! The bound on a scan's requests in flight to one origin, shared by every scan of this
//! instance: two scans of one site together stay within it, so scanning a site in parallel
//! does not multiply the load on it. An origin's entry lives while a request to it is in flight
//! or waiting, and is dropped with the last one, so the map holds only origins being fetched.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(super) struct OriginLimits {
    per_origin: usize,
    in_use: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A request slot of one origin; the slot is given back when this is dropped.
pub(super) struct OriginPermit<'a> {
    // Declared first: dropped before the lease, so the lease sees the semaphore unshared.
    _permit: Option<OwnedSemaphorePermit>,
    _lease: Lease<'a>,
}

/// A hold on an origin's entry (while waiting for a slot and while holding one).
struct Lease<'a> {
    limits: &'a OriginLimits,
    origin: String,
    semaphore: Option<Arc<Semaphore>>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        drop(self.semaphore.take());
        let mut in_use = self.limits.map();
        // Only the map holds it now: no request of this origin is in flight or waiting.
        if in_use
            .get(&self.origin)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            in_use.remove(&self.origin);
        }
    }
}

impl OriginLimits {
    pub(super) fn new(per_origin: usize) -> Self {
        Self {
            per_origin,
            in_use: Mutex::new(HashMap::new()),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        // The map is consistent after any panic (one insert or remove), so poison is ignored.
        self.in_use.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot of `url`'s origin (a URL that does not parse is its own origin).
    pub(super) async fn acquire(&self, url: &str) -> OriginPermit<'_> {
        let origin = url::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| url.to_owned());
        let semaphore = self
            .map()
            .entry(origin.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_origin)))
            .clone();
        let lease = Lease {
            limits: self,
            origin,
            semaphore: Some(semaphore.clone()),
        };
        // Never closed, so this only waits; a cancelled wait drops the lease, and its entry.
        let permit = semaphore.acquire_owned().await.ok();
        OriginPermit {
            _permit: permit,
            _lease: lease,
        }
    }

    /// Origins with a request in flight or waiting.
    #[cfg(test)]
    pub(super) fn origins_in_use(&self) -> usize {
        self.map().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_origin_is_bounded_across_holders_and_forgotten_when_unused() {
        let limits = OriginLimits::new(2);
        let a = limits.acquire("https://a.example/x").await;
        let b = limits.acquire("https://a.example:443/y").await;
        let other = limits.acquire("https://b.example/").await;
        assert_eq!(limits.origins_in_use(), 2);
        // A third request to a.example waits; given up, it leaves nothing behind.
        let third = limits.acquire("https://a.example/z");
        tokio::pin!(third);
        assert!(futures_util::poll!(third.as_mut()).is_pending());
        drop(a);
        let c = third.await;
        drop((b, c, other));
        assert_eq!(limits.origins_in_use(), 0);

        let d = limits.acquire("https://a.example/").await;
        let e = limits.acquire("https://a.example/").await;
        {
            let waiting = limits.acquire("https://a.example/");
            tokio::pin!(waiting);
            assert!(futures_util::poll!(waiting.as_mut()).is_pending());
        }
        drop((d, e));
        assert_eq!(
            limits.origins_in_use(),
            0,
            "a cancelled wait does not pin the entry"
        );
    }
}

//! robots.txt decisions (RFC 9309), cached per origin for an hour (a minute when unreachable).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use robotxt::Robots;
use svc_ports::{FetchError, RobotsDecision};
use url::Url;

const TTL: Duration = Duration::from_secs(3600);
/// How long an unreachable robots.txt (a 5xx, a timeout) disallows its origin before it is
/// asked again: long enough that a stalled host is not asked once per request, short enough
/// that a passing failure does not close a site for an hour.
const UNREACHABLE_TTL: Duration = Duration::from_secs(60);
const MAX_ORIGINS: usize = 10_000;

/// What was learnt from one origin's robots.txt.
#[derive(Clone)]
pub enum RobotsFile {
    /// The rules of the file's group for our agent.
    Rules(std::sync::Arc<Robots>),
    /// 4xx: no restrictions.
    Missing,
    /// 5xx or unreachable: everything disallowed for now.
    Unreachable,
}

impl RobotsFile {
    fn ttl(&self) -> Duration {
        match self {
            RobotsFile::Unreachable => UNREACHABLE_TTL,
            _ => TTL,
        }
    }
}

/// One origin's robots.txt being fetched: every request that misses the cache meanwhile waits
/// for this one answer, errors included, so a batch or a page's fifty requests to one site ask
/// it once, not fifty times at once.
type Flight = std::sync::Arc<tokio::sync::OnceCell<Result<RobotsFile, FetchError>>>;

#[derive(Default)]
pub struct RobotsCache {
    entries: Mutex<HashMap<String, (Instant, RobotsFile)>>,
    flights: Mutex<HashMap<String, Flight>>,
}

impl RobotsCache {
    pub fn get(&self, origin: &str) -> Option<RobotsFile> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(origin)
            .filter(|(at, file)| at.elapsed() < file.ttl())
            .map(|(_, f)| f.clone())
    }

    pub fn put(&self, origin: String, file: RobotsFile) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MAX_ORIGINS {
            entries.retain(|_, (at, _)| at.elapsed() < TTL);
            if entries.len() >= MAX_ORIGINS {
                entries.clear();
            }
        }
        entries.insert(origin, (Instant::now(), file));
    }

    /// The cached file for `origin`, or the one answer of a single fetch by `fetch` shared by
    /// every caller that misses meanwhile. A fetched file is cached; an error is not (each
    /// waiter gets it, the next request asks again). Should the fetching caller be dropped,
    /// a waiter takes the fetch over.
    pub async fn get_or_fetch<F, Fut>(
        &self,
        origin: &str,
        fetch: F,
    ) -> Result<RobotsFile, FetchError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<RobotsFile, FetchError>>,
    {
        if let Some(file) = self.get(origin) {
            return Ok(file);
        }
        let flight = self
            .flights
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(origin.to_owned())
            .or_default()
            .clone();
        let answer = flight
            .get_or_init(|| async {
                // Landed between our look at the cache and our place in the flight.
                if let Some(file) = self.get(origin) {
                    return Ok(file);
                }
                let fetched = fetch().await;
                if let Ok(file) = &fetched {
                    self.put(origin.to_owned(), file.clone());
                }
                fetched
            })
            .await
            .clone();
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if flights
            .get(origin)
            .is_some_and(|f| std::sync::Arc::ptr_eq(f, &flight))
        {
            flights.remove(origin);
        }
        answer
    }
}

/// The rules for `agent` (matched as RFC 9309 says: the whole product token, any case). Lines
/// that do not parse are skipped (RFC 9309: parse what can be parsed); past 500 KiB the file
/// is cut.
pub fn parse(agent: &str, body: &[u8]) -> RobotsFile {
    RobotsFile::Rules(std::sync::Arc::new(Robots::parse(body, agent)))
}

pub fn decide(file: &RobotsFile, url: &str, robots_url: String) -> RobotsDecision {
    let (allowed, basis) = match file {
        // The fetcher names only URLs it parsed: one that does not parse is not fetched.
        RobotsFile::Rules(robots) => (
            Url::parse(url).is_ok_and(|u| robots.is_url_allowed(&u)),
            "rules",
        ),
        RobotsFile::Missing => (true, "no_robots_txt"),
        RobotsFile::Unreachable => (false, "unreachable"),
    };
    RobotsDecision {
        checked: true,
        allowed,
        robots_url,
        basis: basis.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_for_our_agent_apply() {
        let file = parse(
            "svc-reader",
            b"User-agent: svc-reader\nDisallow: /private\n\nUser-agent: *\nDisallow: /",
        );
        let d = decide(
            &file,
            "https://example.com/private/x",
            "https://example.com/robots.txt".into(),
        );
        assert!(!d.allowed);
        assert!(decide(&file, "https://example.com/public", String::new()).allowed);
        assert!(!decide(&RobotsFile::Unreachable, "https://e.com/", String::new()).allowed);
        assert!(decide(&RobotsFile::Missing, "https://e.com/", String::new()).allowed);
    }

    #[test]
    fn groups_match_the_product_token_and_the_longest_rule_wins() {
        let file = parse(
            "SVC-Reader",
            b"User-agent: svc-reader\nAllow: /shop/$\nDisallow: /shop/\nDisallow: /*.pdf$\n\n\
              User-agent: *\nDisallow: /",
        );
        let allowed =
            |path: &str| decide(&file, &format!("https://e.com{path}"), String::new()).allowed;
        assert!(
            allowed("/shop/"),
            "Allow /shop/$ is longer than Disallow /shop/"
        );
        assert!(!allowed("/shop/tea"));
        assert!(!allowed("/docs/a.pdf"));
        assert!(
            allowed("/docs/a.pdf?page=2"),
            "$ anchors at the end of path and query"
        );
        assert!(allowed("/other"), "the group of our agent, not *");
        assert!(allowed("/robots.txt"));
        // Another agent whose name only starts like ours falls to *.
        let other = parse(
            "svc-reader-images",
            b"User-agent: svc-reader\nDisallow: /\n",
        );
        assert!(decide(&other, "https://e.com/x", String::new()).allowed);
    }
}

//! robots.txt decisions (RFC 9309), cached per origin for an hour.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use svc_ports::RobotsDecision;
use texting_robots::Robot;

const TTL: Duration = Duration::from_secs(3600);
const MAX_ORIGINS: usize = 10_000;

/// What was learnt from one origin's robots.txt.
#[derive(Clone)]
pub enum RobotsFile {
    /// Parsed rules (the raw file, re-parsed on use: `Robot` is not `Clone`).
    Rules(std::sync::Arc<Robot>),
    /// 4xx: no restrictions.
    Missing,
    /// 5xx or unreachable: everything disallowed for now.
    Unreachable,
}

#[derive(Default)]
pub struct RobotsCache {
    entries: Mutex<HashMap<String, (Instant, RobotsFile)>>,
}

impl RobotsCache {
    pub fn get(&self, origin: &str) -> Option<RobotsFile> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(origin)
            .filter(|(at, _)| at.elapsed() < TTL)
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
}

pub fn parse(agent: &str, body: &[u8]) -> RobotsFile {
    match Robot::new(agent, body) {
        Ok(robot) => RobotsFile::Rules(std::sync::Arc::new(robot)),
        // An unparsable file restricts nothing (RFC 9309: parse what can be parsed).
        Err(_) => RobotsFile::Missing,
    }
}

pub fn decide(file: &RobotsFile, url: &str, robots_url: String) -> RobotsDecision {
    let (allowed, basis) = match file {
        RobotsFile::Rules(robot) => (robot.allowed(url), "rules"),
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
}

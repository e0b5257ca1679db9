//! Reading an `Accept` header (RFC 9110 section 12.5.1): the weight a caller gives a media type.

/// The highest q-value `accept` gives any of `wanted` (exact media types, lower case), or
/// `None` when it names none of them. A range without `q` weighs 1.
pub fn q_of(accept: &str, wanted: &[&str]) -> Option<f32> {
    accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            if !wanted.contains(&media.as_str()) {
                return None;
            }
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            Some(q)
        })
        .fold(None, |best: Option<f32>, q| {
            Some(best.map_or(q, |b| b.max(q)))
        })
}

/// Whether the caller is a browser asking for a page: it names HTML explicitly and ranks it at
/// least as high as any JSON it names. `*/*` alone (curl, SDKs) keeps problem+json.
pub fn prefers_html(accept: &str) -> bool {
    let html = q_of(accept, &["text/html", "application/xhtml+xml"]);
    let json = q_of(
        accept,
        &[
            "application/json",
            "application/problem+json",
            "text/event-stream",
        ],
    );
    match (html, json) {
        (Some(h), Some(j)) => h > 0.0 && h >= j,
        (Some(h), None) => h > 0.0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_get_pages_and_api_clients_get_json() {
        assert!(prefers_html(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        for api in [
            "*/*",
            "application/json",
            "application/json, text/plain, */*",
            "application/problem+json, text/html;q=0.5",
            "text/html;q=0",
            "",
        ] {
            assert!(!prefers_html(api), "{api}");
        }
        assert_eq!(
            q_of("text/html;q=0.4, TEXT/HTML;q=0.7", &["text/html"]),
            Some(0.7)
        );
    }
}

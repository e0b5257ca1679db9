//! Hostile URLs: every one is refused with a clear failure class, and no request reaches the
//! target. A trap listener on loopback counts connections; the hostile URLs aim at it in every
//! spelling, through names that resolve to it, and through redirects from an allowed host.

use std::{
    collections::HashMap,
    io::{Read, Write},
    net::{IpAddr, SocketAddr, TcpListener},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use svc_fetch::{FetcherConfig, GuardedFetcher, NameResolver};
use svc_ports::{FetchError, FetchRequest, PageFetcher, UrlRefusal};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

/// A listener that answers anything with a secret and counts who got through.
struct Trap {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn trap(addr: &str) -> Option<Trap> {
    let listener = TcpListener::bind(addr).ok()?;
    let port = listener.local_addr().ok()?.port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecret");
        }
    });
    Some(Trap { port, hits })
}

/// A table instead of DNS: names from the tests, nothing else resolves.
struct TableResolver(HashMap<&'static str, Vec<IpAddr>>);

#[async_trait]
impl NameResolver for TableResolver {
    async fn resolve(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.0
            .get(host)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "NXDOMAIN"))
    }
}

fn resolver() -> Arc<TableResolver> {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    Arc::new(TableResolver(HashMap::from([
        ("private.example.com", vec![ip("10.0.0.5")]),
        ("loopback.example.com", vec![ip("127.0.0.1")]),
        (
            "rebind.example.com",
            vec![ip("93.184.216.34"), ip("127.0.0.1")],
        ),
        ("metadata.example.com", vec![ip("169.254.169.254")]),
        ("mapped.example.com", vec![ip("::ffff:127.0.0.1")]),
        ("ula.example.com", vec![ip("fd12::1")]),
        ("cgnat.example.com", vec![ip("100.64.1.1")]),
        ("v6loop.example.com", vec![ip("::1")]),
    ])))
}

const SANDBOX: &str = "demo.sandbox.test";

async fn setup() -> (GuardedFetcher, MockServer, Trap, Option<Trap>) {
    let trap4 = trap("127.0.0.1:0").unwrap();
    let trap6 = trap("[::1]:0");
    let server = MockServer::start().await;
    let config = FetcherConfig {
        // Short, for the robots.txt that never answers (a third of it), yet room for a loaded
        // machine's answers to every other request.
        timeout: Duration::from_secs(6),
        sandbox_hosts: HashMap::from([(SANDBOX.to_owned(), *server.address())]),
        ..FetcherConfig::default()
    };
    let fetcher = GuardedFetcher::with_resolver(config, resolver()).unwrap();
    (fetcher, server, trap4, trap6)
}

fn req(url: impl Into<String>) -> FetchRequest {
    FetchRequest {
        url: url.into(),
        respect_robots: true,
        accept: None,
    }
}

fn class(e: &FetchError) -> String {
    match e {
        FetchError::Refused(r) => match r {
            UrlRefusal::Unparsable { .. } => "unparsable",
            UrlRefusal::Scheme { .. } => "scheme",
            UrlRefusal::Credentials => "credentials",
            UrlRefusal::InternalName { .. } => "internal_name",
            UrlRefusal::Address { .. } => "address",
            UrlRefusal::Port { .. } => "port",
        }
        .to_owned(),
        FetchError::Connect { .. } => "unreachable".to_owned(),
        other => format!("not refused: {other}"),
    }
}

#[tokio::test]
async fn hostile_urls_are_refused_before_any_request() {
    let (fetcher, server, trap4, trap6) = setup().await;
    let p = trap4.port;
    let p6 = trap6.as_ref().map(|t| t.port).unwrap_or(p);
    let redirect_to = |name: &str, target: String| {
        Mock::given(method("GET"))
            .and(path(format!("/to-{name}")))
            .respond_with(ResponseTemplate::new(302).insert_header("location", target.as_str()))
    };
    let sandbox = format!("http://{SANDBOX}:{}", server.address().port());
    let redirects = [
        ("loopback", format!("http://127.0.0.1:{p}/")),
        ("decimal", format!("http://2130706433:{p}/")),
        ("ipv6", format!("http://[::1]:{p6}/")),
        ("mapped", format!("http://[::ffff:127.0.0.1]:{p}/")),
        ("file", "file:///etc/passwd".to_owned()),
        ("private-name", format!("http://loopback.example.com:{p}/")),
        (
            "metadata",
            "http://169.254.169.254/latest/meta-data/".to_owned(),
        ),
        ("relative-userinfo", format!("//user:pw@127.0.0.1:{p}/")),
        ("smtp", "http://93.184.216.34:25/".to_owned()),
    ];
    for (name, target) in &redirects {
        redirect_to(name, target.clone()).mount(&server).await;
    }
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;

    let mut cases: Vec<(String, &str)> = vec![
        (format!("http://127.0.0.1:{p}/"), "address"),
        (format!("http://localhost:{p}/"), "internal_name"),
        (format!("http://2130706433:{p}/"), "address"),
        (format!("http://0x7f000001:{p}/"), "address"),
        (format!("http://0177.0.0.1:{p}/"), "address"),
        (format!("http://0x7f.0.0.1:{p}/"), "address"),
        (format!("http://017700000001:{p}/"), "address"),
        (format!("http://127.1:{p}/"), "address"),
        (format!("http://127.000.000.001:{p}/"), "address"),
        (format!("http://[::1]:{p6}/"), "address"),
        (format!("http://[0:0:0:0:0:0:0:1]:{p6}/"), "address"),
        (format!("http://[::ffff:127.0.0.1]:{p}/"), "address"),
        (format!("http://[::ffff:7f00:1]:{p}/"), "address"),
        (format!("http://[::127.0.0.1]:{p}/"), "address"),
        (format!("http://0.0.0.0:{p}/"), "address"),
        (format!("http://0:{p}/"), "address"),
        (format!("http://[::]:{p}/"), "address"),
        ("http://169.254.169.254/latest/meta-data/".into(), "address"),
        ("http://[fd00:ec2::254]/latest/meta-data/".into(), "address"),
        ("http://100.100.100.200/latest/meta-data/".into(), "address"),
        (
            "http://metadata.google.internal/computeMetadata/v1/".into(),
            "internal_name",
        ),
        ("http://10.0.0.1/".into(), "address"),
        ("http://172.16.0.1/".into(), "address"),
        ("http://192.168.1.1/".into(), "address"),
        ("http://100.64.0.1/".into(), "address"),
        ("http://[fe80::1]/".into(), "address"),
        ("http://[fc00::1]/".into(), "address"),
        ("http://224.0.0.1/".into(), "address"),
        ("http://255.255.255.255/".into(), "address"),
        ("http://private.example.com/".into(), "address"),
        (format!("http://loopback.example.com:{p}/"), "address"),
        (format!("http://rebind.example.com:{p}/"), "address"),
        ("http://metadata.example.com/".into(), "address"),
        (format!("http://mapped.example.com:{p}/"), "address"),
        ("http://ula.example.com/".into(), "address"),
        ("http://cgnat.example.com/".into(), "address"),
        (format!("http://v6loop.example.com:{p6}/"), "address"),
        // Not refused: a site that cannot be reached now (502 upstream_unreachable, retryable).
        ("http://nxdomain.example.com/".into(), "unreachable"),
        (format!("http://intranet:{p}/"), "internal_name"),
        (format!("http://printer.local:{p}/"), "internal_name"),
        ("file:///etc/passwd".into(), "scheme"),
        ("ftp://example.com/".into(), "scheme"),
        (format!("gopher://127.0.0.1:{p}/"), "scheme"),
        ("data:text/html,hi".into(), "scheme"),
        ("javascript:alert(1)".into(), "scheme"),
        ("http://user:pass@example.com/".into(), "credentials"),
        // Public, but another protocol's port (mail, IRC, SIP): browsers refuse them too.
        ("http://nxdomain.example.com:25/".into(), "port"),
        ("https://93.184.216.34:6667/".into(), "port"),
        ("http://[2606:4700:4700::1111]:5060/".into(), "port"),
        ("not a url".into(), "unparsable"),
        // The sandbox's own name on another port would reach another local service.
        (format!("http://{SANDBOX}:{p}/"), "internal_name"),
        // Nor with the root's dot written out, which names the same host.
        (format!("http://{SANDBOX}.:{p}/"), "internal_name"),
        (format!("http://intranet.:{p}/"), "internal_name"),
    ];
    for (name, _) in &redirects {
        let expected = match *name {
            "file" => "scheme",
            "relative-userinfo" => "credentials",
            "smtp" => "port",
            _ => "address",
        };
        cases.push((format!("{sandbox}/to-{name}"), expected));
    }
    assert!(cases.len() >= 30);
    let mut wrong = Vec::new();
    for (url, expected) in &cases {
        let got = fetcher
            .fetch(&req(url.clone()))
            .await
            .err()
            .map(|e| class(&e));
        if got.as_deref() != Some(*expected) {
            wrong.push(format!("{url}: expected {expected}, got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} refused wrongly:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    assert_eq!(
        trap4.hits.load(Ordering::SeqCst),
        0,
        "a request reached the IPv4 loopback trap"
    );
    if let Some(t) = trap6 {
        assert_eq!(
            t.hits.load(Ordering::SeqCst),
            0,
            "a request reached the IPv6 loopback trap"
        );
    }
}

#[tokio::test]
async fn a_failed_fetch_does_not_repeat_the_url_and_its_query() {
    let (fetcher, _server, _trap4, _trap6) = setup().await;
    // The error's detail is logged and answered; the query may hold the caller's key.
    let url = "http://nxdomain.example.com/report?api_key=sk_SECRET";
    let request = FetchRequest {
        respect_robots: false,
        ..req(url)
    };
    let e = fetcher.fetch(&request).await.expect_err("no such host");
    assert_eq!(class(&e), "unreachable");
    let said = format!("{e} {e:?}");
    assert!(!said.contains("sk_SECRET"), "{said}");
}

#[tokio::test]
async fn allowed_pages_are_fetched_decoded_and_reported() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/start"))
        .respond_with(ResponseTemplate::new(301).insert_header("location", "/page"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html; charset=iso-8859-1")
                .set_body_bytes(b"<html><body>caf\xe9</body></html>".to_vec()),
        )
        .mount(&server)
        .await;
    let base = format!("http://{SANDBOX}:{}", server.address().port());
    let page = fetcher.fetch(&req(format!("{base}/start"))).await.unwrap();
    assert_eq!(page.status, 200);
    assert_eq!(page.final_url, format!("{base}/page"));
    assert_eq!(page.redirects, vec![format!("{base}/start")]);
    assert_eq!(page.charset, "windows-1252");
    assert!(page.body.contains("café"));
    assert!(!page.truncated);
    assert!(page.robots.checked && page.robots.allowed);
    assert_eq!(page.robots.basis, "no_robots_txt");
    let seen = server.received_requests().await.unwrap();
    let ua = seen
        .iter()
        .find(|r| r.url.path() == "/page")
        .unwrap()
        .headers
        .get("user-agent")
        .unwrap();
    assert!(ua.to_str().unwrap().contains("svc-reader/"));
}

#[tokio::test]
async fn bodies_are_capped_and_truncation_is_reported() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/huge"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'a'; 11 * 1024 * 1024]))
        .mount(&server)
        .await;
    let url = format!("http://{SANDBOX}:{}/huge", server.address().port());
    let page = fetcher
        .fetch(&FetchRequest {
            url,
            respect_robots: false,
            accept: None,
        })
        .await
        .unwrap();
    assert!(page.truncated);
    assert_eq!(page.body.len(), 10 * 1024 * 1024);
    assert!(!page.robots.checked);
}

#[tokio::test]
async fn redirect_loops_stop_at_the_cap() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/loop"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/loop"))
        .mount(&server)
        .await;
    let url = format!("http://{SANDBOX}:{}/loop", server.address().port());
    let err = fetcher
        .fetch(&FetchRequest {
            url,
            respect_robots: false,
            accept: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err, FetchError::TooManyRedirects { limit: 5 });
}

#[tokio::test]
async fn slow_servers_time_out() {
    // Headers at once, then one byte every 300 ms: only the deadline ends it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n");
                for _ in 0..1000 {
                    if s.write_all(b"x").is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
        }
    });
    let config = FetcherConfig {
        timeout: Duration::from_secs(1),
        sandbox_hosts: HashMap::from([("slow.sandbox.test".to_owned(), addr)]),
        ..FetcherConfig::default()
    };
    let fetcher = GuardedFetcher::with_resolver(config, resolver()).unwrap();
    let url = format!("http://slow.sandbox.test:{}/", addr.port());
    let started = std::time::Instant::now();
    let err = fetcher
        .fetch(&FetchRequest {
            url,
            respect_robots: false,
            accept: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err, FetchError::Timeout { seconds: 1 });
    // The trickle would last 300 s: the deadline, not the body's end, stopped the read.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn robots_txt_is_honoured_and_reported() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string("User-agent: svc-reader\nDisallow: /private\n"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/to-private"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/private/z"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let base = format!("http://{SANDBOX}:{}", server.address().port());
    match fetcher.fetch(&req(format!("{base}/private/x"))).await {
        Err(FetchError::RobotsDisallowed(d)) => {
            assert_eq!(
                (d.checked, d.allowed, d.basis.as_str()),
                (true, false, "rules")
            );
            assert_eq!(d.robots_url, format!("{base}/robots.txt"));
        }
        other => panic!("expected a robots refusal, got {other:?}"),
    }
    // Nor by way of a redirect to it.
    assert!(matches!(
        fetcher.fetch(&req(format!("{base}/to-private"))).await,
        Err(FetchError::RobotsDisallowed(_))
    ));
    let page = fetcher.fetch(&req(format!("{base}/public"))).await.unwrap();
    assert_eq!(page.robots.basis, "rules");
    // robots.txt was read once for the origin.
    let robots_reads = robots_reads(&server).await;
    assert_eq!(robots_reads, 1);
    // Opting out skips it.
    let page = fetcher
        .fetch(&FetchRequest {
            url: format!("{base}/private/y"),
            respect_robots: false,
            accept: None,
        })
        .await
        .unwrap();
    assert!(!page.robots.checked);
}

#[tokio::test]
async fn an_erroring_robots_txt_disallows_everything() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let url = format!("http://{SANDBOX}:{}/page", server.address().port());
    match fetcher.fetch(&req(url)).await {
        Err(FetchError::RobotsDisallowed(d)) => assert_eq!(d.basis, "unreachable"),
        other => panic!("expected a robots refusal, got {other:?}"),
    }
}

/// A robots.txt that never answers costs a third of the fetch's time once, and is then
/// remembered as unreachable (everything disallowed, RFC 9309), not asked again per request.
#[tokio::test]
async fn a_robots_txt_that_never_answers_is_unreachable_and_remembered() {
    let (fetcher, server, _, _) = setup().await;
    Mock::given(method("GET"))
        .and(path("/robots.txt"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(30)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let base = format!("http://{SANDBOX}:{}", server.address().port());
    for page in ["a", "b"] {
        match fetcher.fetch(&req(format!("{base}/{page}"))).await {
            Err(FetchError::RobotsDisallowed(d)) => assert_eq!(d.basis, "unreachable"),
            other => panic!("expected robots.txt unreachable, got {other:?}"),
        }
    }
    let robots_reads = robots_reads(&server).await;
    assert_eq!(robots_reads, 1);
}

/// How many times `server` was asked for its robots.txt.
async fn robots_reads(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/robots.txt")
        .count()
}

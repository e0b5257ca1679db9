//! The renderer in Debian's headless Chromium (`/usr/bin/chromium`, or `SVC_CHROMIUM`), with a
//! fetcher that serves a table of pages and refuses loopback and metadata addresses as the
//! guarded one does. A missing browser fails these tests: they are not skipped.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use svc_ports::{
    FetchError, FetchRequest, FetchedPage, PageFetcher, PageRenderer, RenderError, RenderRequest,
    RobotsDecision, UrlRefusal,
};
use svc_render::{ChromiumRenderer, RenderConfig};

const ORIGIN: &str = "http://spa.example";

/// Pages by URL; `hang` URLs never answer; loopback and metadata hosts are refused.
#[derive(Default)]
struct Table {
    pages: HashMap<String, (&'static str, String)>,
    hang: Vec<String>,
    asked: Mutex<Vec<String>>,
    /// Each answer takes this long, so that requests overlap.
    slow: Option<Duration>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl Table {
    fn page(mut self, path: &str, content_type: &'static str, body: &str) -> Self {
        self.pages
            .insert(format!("{ORIGIN}{path}"), (content_type, body.to_owned()));
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl PageFetcher for Table {
    async fn fetch(&self, request: &FetchRequest) -> Result<FetchedPage, FetchError> {
        assert!(request.respect_robots, "robots.txt is honoured");
        self.asked.lock().unwrap().push(request.url.clone());
        let host = url::Url::parse(&request.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        if host.starts_with("127.") || host == "169.254.169.254" || host == "localhost" {
            return Err(FetchError::Refused(UrlRefusal::Address {
                host: host.clone(),
                address: host,
                range: "loopback or metadata",
            }));
        }
        if self.hang.contains(&request.url) {
            std::future::pending::<()>().await;
        }
        if let Some(slow) = self.slow {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(slow).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        let (status, content_type, body) = match self.pages.get(&request.url) {
            Some((ct, body)) => (200, *ct, body.clone()),
            None => (404, "text/plain", "not here".to_owned()),
        };
        Ok(FetchedPage {
            requested_url: request.url.clone(),
            final_url: request.url.clone(),
            status,
            content_type: Some(content_type.into()),
            headers: Vec::new(),
            charset: "utf-8".into(),
            body,
            raw: None,
            truncated: false,
            redirects: Vec::new(),
            robots: RobotsDecision::not_checked(),
            fetched_at: chrono::Utc::now(),
        })
    }

    async fn robots(&self, _: &str) -> Result<RobotsDecision, FetchError> {
        Ok(RobotsDecision::not_checked())
    }
}

fn renderer(table: Arc<Table>) -> ChromiumRenderer {
    renderer_with(table, |_| {})
}

/// For tests of what the time limit does: 4 s, so that they wait for it briefly.
fn renderer_timed(table: Arc<Table>) -> ChromiumRenderer {
    renderer_with(table, |c| c.page_timeout = Duration::from_secs(4))
}

fn renderer_with(table: Arc<Table>, adjust: impl FnOnce(&mut RenderConfig)) -> ChromiumRenderer {
    let chromium = std::env::var("SVC_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    let mut config = RenderConfig::new(chromium);
    // Room for a loaded machine: tests of pages that should finish judge what they find.
    config.page_timeout = Duration::from_secs(20);
    adjust(&mut config);
    ChromiumRenderer::new(config, table)
}

fn shell(script: &str) -> RenderRequest {
    RenderRequest {
        url: format!("{ORIGIN}/app"),
        html: format!(
            "<!doctype html><html><head><title>App</title></head><body><div id=\"root\"></div>\
             <script>{script}</script></body></html>"
        ),
    }
}

#[tokio::test]
async fn a_bundle_that_fetches_its_story_is_rendered_with_every_request_through_the_fetcher() {
    let table = Arc::new(
        Table::default()
            .page(
                "/bundle.js",
                "text/javascript",
                "fetch('/api/story.json').then(r => r.json()).then(s => { \
                   document.getElementById('root').innerHTML = \
                     '<article><h1>' + s.title + '</h1><p>' + s.body + '</p></article>'; });",
            )
            .page(
                "/api/story.json",
                "application/json",
                r#"{"title": "Tides", "body": "Two high tides a day, built by a script."}"#,
            ),
    );
    let renderer = renderer(table.clone());
    let mut request = shell("");
    request.html = request.html.replace(
        "<script></script>",
        "<script src=\"/bundle.js\"></script><img src=\"/photo.jpg\">",
    );
    let page = renderer.render(&request).await.expect("rendered");
    assert!(page.html.contains("<h1>Tides</h1>"), "{}", page.html);
    assert!(page.html.contains("built by a script"));
    assert!(page.settled);
    assert_eq!(page.final_url, format!("{ORIGIN}/app"));
    // The document itself was handed over; the bundle and its data came through the fetcher;
    // the image was never fetched at all.
    assert_eq!(
        table.asked(),
        vec![
            format!("{ORIGIN}/bundle.js"),
            format!("{ORIGIN}/api/story.json")
        ]
    );
    // A second page in a fresh context: nothing of the first is left (its storage neither).
    let page = renderer
        .render(&shell(
            "document.getElementById('root').textContent = \
             'stored: ' + (localStorage.getItem('k') || 'nothing'); localStorage.setItem('k', 'v');",
        ))
        .await
        .unwrap();
    assert!(page.html.contains("stored: nothing"), "{}", page.html);
    let page = renderer
        .render(&shell(
            "document.getElementById('root').textContent = \
             'stored: ' + (localStorage.getItem('k') || 'nothing');",
        ))
        .await
        .unwrap();
    assert!(page.html.contains("stored: nothing"), "{}", page.html);
    renderer.shut_down().await;
}

#[tokio::test]
async fn a_page_that_asks_for_much_at_once_is_fetched_a_few_at_a_time() {
    let table = Arc::new(Table {
        slow: Some(Duration::from_millis(200)),
        ..Table::default()
    });
    let renderer = renderer(table.clone());
    let page = renderer
        .render(&shell(
            "for (let i = 0; i < 30; i++) fetch('http://h' + i + '.example/big').catch(() => {}); \
             document.getElementById('root').textContent = 'asked';",
        ))
        .await
        .expect("rendered");
    assert!(page.html.contains("asked"));
    let asked = table.asked().len();
    let most = table.most_in_flight.load(Ordering::SeqCst);
    assert!(asked > 6, "{asked} requests reached the fetcher");
    assert!(most <= 6, "{most} fetched at once");
    renderer.shut_down().await;
}

#[tokio::test]
async fn the_byte_budget_counts_the_document_and_only_what_was_handed_over() {
    // 10 000 bytes for the page: the document (6 000), then a 20 000-byte blob (refused for
    // its size, and so not spent), the story (fits), then 5 000 bytes more (past the budget
    // with the document counted).
    let table = Arc::new(
        Table::default()
            .page("/blob", "text/plain", &"b".repeat(20_000))
            .page(
                "/api/story.json",
                "application/json",
                r#"{"title": "Tides"}"#,
            )
            .page("/more", "text/plain", &"m".repeat(5_000)),
    );
    let renderer = renderer_with(table.clone(), |c| c.max_page_bytes = 10_000);
    let mut request = shell(
        "const got = (p) => fetch(p).then(r => r.text()).then(t => t.length).catch(() => 'refused');          (async () => { const blob = await got('/blob');            const story = await fetch('/api/story.json').then(r => r.json()).then(s => s.title, () => 'refused');            const more = await got('/more');            document.getElementById('root').textContent = `blob:${blob} story:${story} more:${more}`; })();",
    );
    request.html = request
        .html
        .replace("</body>", &format!("<!-- {} --></body>", "d".repeat(6_000)));
    let page = renderer.render(&request).await.expect("rendered");
    assert!(
        page.html.contains("blob:refused story:Tides more:refused"),
        "{}",
        page.html.split("<script>").next().unwrap_or_default()
    );
    renderer.shut_down().await;
}

#[tokio::test]
async fn a_cors_preflight_is_answered_without_counting_as_a_request() {
    let table = Arc::new(Table::default().page(
        "/api/story.json",
        "application/json",
        r#"{"title": "Tides"}"#,
    ));
    let renderer = renderer(table.clone());
    // A header that is not CORS-safelisted makes the browser ask first; the same request
    // without it is the count to compare with.
    let read = |headers: &'static str| {
        shell(&format!(
            "fetch('{ORIGIN}/api/story.json'.replace('spa.', 'api.spa.'), {{headers: {headers}}}) \
               .then(r => r.status, () => 'failed') \
               .then(s => document.getElementById('root').textContent = 'status:' + s);"
        ))
    };
    let plain = renderer.render(&read("{}")).await.expect("rendered");
    let asked_first = renderer
        .render(&read("{'X-Reader': '1'}"))
        .await
        .expect("rendered");
    for page in [&plain, &asked_first] {
        assert!(page.html.contains("status:404"), "{}", page.html);
    }
    assert_eq!(
        table.asked(),
        vec!["http://api.spa.example/api/story.json".to_owned(); 2]
    );
    assert_eq!(
        asked_first.requests, plain.requests,
        "the preflight is not a request"
    );
    renderer.shut_down().await;
}

#[tokio::test]
async fn requests_that_never_answer_keep_neither_their_turns_nor_the_page_waiting() {
    // Twelve scripts of other sites and two stylesheets that never answer, more than get turns
    // at once; the page's own data still arrives.
    let mut table = Table::default().page(
        "/api/story.json",
        "application/json",
        r#"{"title": "Tides", "body": "Two high tides a day."}"#,
    );
    let mut stalls = String::new();
    for i in 0..12 {
        table.hang.push(format!("http://t{i}.example/stall.js"));
        stalls.push_str(&format!(
            "<script async src=\"http://t{i}.example/stall.js\"></script>"
        ));
    }
    let mut styles = String::new();
    for i in 0..2 {
        table.hang.push(format!("http://s{i}.example/stall.css"));
        styles.push_str(&format!(
            "<link rel=\"stylesheet\" href=\"http://s{i}.example/stall.css\">"
        ));
    }
    let table = Arc::new(table);
    let renderer = renderer_timed(table.clone());
    let mut request = shell(
        "setTimeout(() => fetch('/api/story.json').then(r => r.json()).then(s => { \
           document.getElementById('root').innerHTML = '<h1>' + s.title + '</h1><p>' + s.body + '</p>'; \
         }), 300);",
    );
    request.html = request
        .html
        .replace("<div id=\"root\">", &format!("{stalls}<div id=\"root\">"))
        .replace("</body>", &format!("{styles}</body>"));
    let page = renderer.render(&request).await.expect("rendered");
    assert!(page.html.contains("<h1>Tides</h1>"), "{}", page.html);
    assert!(
        table.asked().contains(&format!("{ORIGIN}/api/story.json")),
        "{:?}",
        table.asked()
    );
    // A stalled request holds its turn half the page's time at most: the first two were given
    // up on, and the next two asked for.
    assert!(page.failed_requests >= 2, "{}", page.failed_requests);
    let stalls_asked = table
        .asked()
        .iter()
        .filter(|u| u.ends_with("/stall.js"))
        .count();
    assert!(stalls_asked >= 4, "{:?}", table.asked());
    renderer.shut_down().await;
}

/// A dedicated worker's requests (its script, and what it fetches) go through the fetcher
/// like the page's own (had they escaped interception, they would have met the browser's
/// dead-end proxy, and the page would say nothing).
#[tokio::test]
async fn a_workers_requests_go_through_the_fetcher_too() {
    let table = Arc::new(
        Table::default()
            .page(
                "/worker.js",
                "text/javascript",
                "fetch('/api/story.json').then(r => r.json()).then(s => postMessage(s.title));",
            )
            .page(
                "/api/story.json",
                "application/json",
                r#"{"title": "Tides"}"#,
            ),
    );
    let renderer = renderer(table.clone());
    let page = renderer
        .render(&shell(
            "const w = new Worker('/worker.js'); \
             w.onmessage = (e) => { document.getElementById('root').textContent = 'from the worker: ' + e.data; };",
        ))
        .await
        .expect("rendered");
    assert!(
        page.html.contains("from the worker: Tides"),
        "{} {:?}",
        page.html,
        table.asked()
    );
    assert!(table.asked().contains(&format!("{ORIGIN}/api/story.json")));
    renderer.shut_down().await;
}

/// A local port that counts every connection made to it.
async fn trap() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (port, hits)
}

#[tokio::test]
async fn a_script_aiming_at_loopback_or_metadata_gets_nothing_by_any_path() {
    let (port, hits) = trap().await;
    let table = Arc::new(Table::default());
    let renderer = renderer(table.clone());
    let script = format!(
        "const out = []; const say = t => {{ out.push(t); \
           document.getElementById('root').textContent = out.sort().join(' '); }}; \
         for (const u of ['http://127.0.0.1:{port}/secret', 'http://169.254.169.254/latest/meta-data/', \
                          'http://localhost:{port}/x']) \
           fetch(u).then(r => r.text()).then(t => say('LEAK:' + t), () => say('refused')); \
         fetch('http://127.0.0.1:{port}/post', {{method: 'POST', body: 'x'}}).then(() => say('LEAK-POST'), () => say('refused-post')); \
         try {{ const ws = new WebSocket('ws://127.0.0.1:{port}/'); ws.onopen = () => say('LEAK-WS'); ws.onerror = () => say('refused-ws'); }} catch (e) {{ say('refused-ws'); }} \
         navigator.sendBeacon && navigator.sendBeacon('http://127.0.0.1:{port}/beacon', 'x'); \
         const i = new Image(); i.src = 'http://127.0.0.1:{port}/pixel'; \
         const f = document.createElement('iframe'); f.src = 'http://127.0.0.1:{port}/frame'; document.body.append(f); \
         window.open('http://127.0.0.1:{port}/popup');"
    );
    let page = renderer.render(&shell(&script)).await.expect("rendered");
    // What the page's scripts got, as they wrote it into #root.
    assert!(
        page.html
            .contains("<div id=\"root\">refused refused refused refused-post refused-ws</div>"),
        "{}",
        page.html
    );
    // The three GETs went to the fetcher, which refused them; the POST, the beacon, the image
    // never reached it; nothing reached the port by any path.
    let asked = table.asked();
    assert!(
        asked.contains(&format!("http://127.0.0.1:{port}/secret")),
        "{asked:?}"
    );
    assert!(asked.contains(&"http://169.254.169.254/latest/meta-data/".to_owned()));
    assert!(
        !asked
            .iter()
            .any(|u| u.ends_with("/post") || u.ends_with("/pixel"))
    );
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a connection reached the trap"
    );
    assert!(page.failed_requests >= 4);
    renderer.shut_down().await;
}

/// WebRTC speaks UDP (and TCP for TURN) outside the request interception. The page looks for
/// a peer connection in its window, a fresh frame's and a `srcdoc` frame's, and uses any it
/// finds against STUN and TURN servers on loopback; it finds none, and nothing reaches them.
/// (That the browser itself holds if a page ever found one is `chromium::tests`'.) A slow
/// request keeps the page from settling before the frames have loaded.
#[tokio::test]
async fn a_page_finds_no_webrtc_and_reaches_no_stun_or_turn_server() {
    let udp = tokio::net::UdpSocket::bind(("127.0.0.1", 0)).await.unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let (tcp_port, tcp_hits) = trap().await;
    let table = Arc::new(Table {
        slow: Some(Duration::from_millis(1000)),
        ..Table::default()
    });
    let renderer = renderer(table.clone());
    let script = format!(
        "fetch('/hold'); const found = []; \
         const gather = Peer => {{ try {{ const pc = new Peer({{iceServers: [\
             {{urls: 'stun:127.0.0.1:{udp_port}'}}, \
             {{urls: ['turn:127.0.0.1:{udp_port}?transport=udp', 'turn:127.0.0.1:{tcp_port}?transport=tcp'], \
               username: 'u', credential: 'p'}}]}}); \
           pc.createDataChannel('leak'); pc.createOffer().then(o => pc.setLocalDescription(o)); }} catch (_) {{}} }}; \
         const look = (name, w) => {{ for (const k of ['RTCPeerConnection', 'webkitRTCPeerConnection']) \
           if (typeof w[k] === 'function') {{ found.push(name); gather(w[k]); }} }}; \
         look('window', window); \
         const f = document.createElement('iframe'); document.body.append(f); look('frame', f.contentWindow); \
         const g = document.createElement('iframe'); g.srcdoc = '<p>inner</p>'; \
         g.onload = () => {{ look('srcdoc', g.contentWindow); \
           document.getElementById('root').textContent = 'found: ' + (found.join(' ') || 'none'); }}; \
         document.body.append(g);"
    );
    let page = renderer.render(&shell(&script)).await.expect("rendered");
    assert!(
        page.html.contains("<div id=\"root\">found: none</div>"),
        "{}",
        page.html
    );
    let mut buffer = [0u8; 1500];
    match udp.try_recv_from(&mut buffer) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a packet reached the STUN server on loopback: {other:?}"),
    }
    assert_eq!(
        tcp_hits.load(Ordering::SeqCst),
        0,
        "a connection reached the TURN server"
    );
    assert_eq!(table.asked(), vec![format!("{ORIGIN}/hold")]);
    renderer.shut_down().await;
}

#[tokio::test]
async fn a_page_that_never_finishes_loading_is_read_as_it_stands_at_the_limit() {
    // A request that never answers, asked again as soon as it is given up on (a request holds
    // its turn half the page's time at most): one is always in flight, so it is never quiet.
    let mut table = Table::default();
    table.hang.push(format!("{ORIGIN}/never"));
    let renderer = renderer_timed(Arc::new(table));
    let request = shell(
        "document.getElementById('root').textContent = 'drawn before the wait'; \
         const again = () => fetch('/never').catch(again); again();",
    );
    let page = renderer
        .render(&request)
        .await
        .expect("the DOM at the limit");
    assert!(!page.settled);
    assert!(page.html.contains("drawn before the wait"), "{}", page.html);
    // The browser is fine afterwards.
    let next = renderer
        .render(&shell(
            "document.getElementById('root').textContent = 'next';",
        ))
        .await
        .unwrap();
    assert!(next.settled && next.html.contains("next"));
    renderer.shut_down().await;
}

#[tokio::test]
async fn a_script_that_never_yields_times_out_and_a_redirect_loop_is_too_many_redirects() {
    // Every page of the loop sends the browser on to the next one.
    let step = "const n = +(new URLSearchParams(location.search).get('n') || 0); \
                location.replace('/app?n=' + (n + 1));";
    let mut table = Table::default();
    for n in 1..=20 {
        table = table.page(&format!("/app?n={n}"), "text/html", &shell(step).html);
    }
    let renderer = renderer_timed(Arc::new(table));
    let spin = renderer.render(&shell("while (true) {}")).await;
    assert!(
        matches!(spin, Err(RenderError::Page(FetchError::Timeout { .. }))),
        "{spin:?}"
    );
    let looping = renderer.render(&shell(step)).await;
    assert!(
        matches!(
            looping,
            Err(RenderError::Page(FetchError::TooManyRedirects { .. }))
        ),
        "{looping:?}"
    );
    let next = renderer
        .render(&shell(
            "document.getElementById('root').textContent = 'still here';",
        ))
        .await
        .unwrap();
    assert!(next.html.contains("still here"));
    renderer.shut_down().await;
}

#[tokio::test]
async fn no_browser_is_unavailable() {
    let config = RenderConfig::new("/nonexistent/chromium");
    let renderer = ChromiumRenderer::new(config, Arc::new(Table::default()));
    assert!(matches!(
        renderer.render(&shell("")).await,
        Err(RenderError::Unavailable { .. })
    ));
    assert!(matches!(
        renderer.warm_up().await,
        Err(RenderError::Unavailable { .. })
    ));
    assert!(!renderer.is_running().await);
}

#[tokio::test]
async fn warming_up_starts_the_browser_the_next_page_uses() {
    let renderer = renderer(Arc::new(Table::default()));
    assert!(
        !renderer.is_running().await,
        "nothing starts before it is asked"
    );
    renderer.warm_up().await.unwrap();
    assert!(renderer.is_running().await);
    // A second warm-up and the page keep the same browser running.
    renderer.warm_up().await.unwrap();
    let page = renderer
        .render(&shell(
            "document.getElementById('root').textContent = 'warm';",
        ))
        .await
        .unwrap();
    assert!(page.html.contains("warm"));
    assert!(renderer.is_running().await);
    renderer.shut_down().await;
    assert!(!renderer.is_running().await);
}

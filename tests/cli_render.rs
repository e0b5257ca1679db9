//! `svc read --file PAGE --render always` renders a saved page in headless Chromium: its scripts
//! run, and what they ask of the outside goes through the guarded fetcher like any read (here:
//! a loopback address, which gets nothing). Needs `/usr/bin/chromium` (or `SVC_CHROMIUM`).

use serde_json::Value;

mod support;

use support::svc;

#[test]
fn a_saved_single_page_app_is_rendered_and_its_requests_are_guarded() {
    let dir = tempfile::tempdir().unwrap();
    // Connections to this port would queue in its backlog: none may arrive.
    let trap = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    trap.set_nonblocking(true).unwrap();
    let port = trap.local_addr().unwrap().port();
    let page = dir.path().join("app.html");
    std::fs::write(
        &page,
        "<!doctype html><html><head><title>Saved app</title></head><body><div id=\"root\"></div>\
         <script>\
         fetch('/api/story.json').then(r => r.text()).then(t => document.title = 'leaked ' + t, \
           () => document.getElementById('root').insertAdjacentHTML('beforeend', '<p>The data request was refused.</p>')); \
         document.getElementById('root').innerHTML = '<article><h1>Saved app</h1><p>' + \
           'A page saved to disk whose script builds its article when it runs. '.repeat(4) + '</p></article>';\
         </script></body></html>",
    )
    .unwrap();
    let base = format!("http://127.0.0.1:{port}/app/");
    let run = |render: &str| {
        let mut cmd = svc(dir.path());
        if let Some(path) = std::env::var_os("SVC_CHROMIUM").filter(|p| !p.is_empty()) {
            cmd.env("SVC_CHROMIUM", path);
        }
        let out = cmd
            .args([
                "read",
                "--format",
                "json",
                "--whole-page",
                "--render",
                render,
            ])
            .arg("--file")
            .arg(&page)
            .args(["--base-url", &base])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };

    let rendered = run("always");
    assert_eq!(rendered["rendered"], true, "{rendered}");
    assert_eq!(rendered["cache"]["state"], "bypass");
    let text = rendered["text"].as_str().unwrap();
    assert!(text.contains("whose script builds its article"), "{text}");
    assert!(text.contains("The data request was refused."), "{text}");
    assert_eq!(rendered["title"], "Saved app");
    assert!(
        trap.accept().is_err(),
        "the page's request reached the loopback address"
    );

    let statically = run("never");
    assert_eq!(statically["rendered"], false);
    assert!(
        !statically["text"]
            .as_str()
            .unwrap()
            .contains("builds its article")
    );
}

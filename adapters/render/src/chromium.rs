//! The one Chromium process: started with flags that leave it no way to the network but the
//! requests this adapter fulfils, connected over the DevTools protocol, and killed with every
//! process it started (its process group) when it is dropped or its parent dies.

use std::{
    path::Path,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use chromiumoxide::Browser;
use futures_util::StreamExt;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    net::TcpListener,
    process::{Child, Command},
    task::JoinHandle,
};

use crate::RenderConfig;

/// The profile's preferences, written before the browser starts: WebRTC may send UDP only
/// through a proxy (and ours carries none), so no STUN or TURN packet leaves the browser outside
/// the request interception. The page's own peer connection is also taken away by the
/// session's lockdown script; this holds if a page ever finds one anyway. The command-line
/// switch of the same name did not stop a STUN packet to loopback on Chromium 156; the
/// preference did (tests below).
const PREFERENCES: &str = r#"{"webrtc": {"ip_handling_policy": "disable_non_proxied_udp",
  "multiple_routes_enabled": false, "nonproxied_udp_enabled": false}}"#;

fn prepare_profile(profile: &Path) -> std::io::Result<()> {
    let default = profile.join("Default");
    std::fs::create_dir_all(&default)?;
    std::fs::write(default.join("Preferences"), PREFERENCES)
}

/// How long Chromium may take to start and announce its DevTools address.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);

/// Flags that keep the browser from reaching anything by itself. Requests of the page are
/// intercepted and fulfilled by the adapter; anything that would escape interception (a
/// worker's fetch, a WebSocket, a pop-up, the browser's own background calls) is sent to a
/// proxy that is a local black hole, and no name is resolved by the browser.
fn flags(config: &RenderConfig, black_hole: u16, profile: &Path, root: bool) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--disable-notifications",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        "--no-pings",
        "--dns-prefetch-disable",
        "--block-new-web-contents",
        "--blink-settings=imagesEnabled=false",
        // Frames of other sites in the page's own process, so the page's interception sees
        // their requests too.
        "--disable-site-isolation-trials",
        "--disable-features=IsolateOrigins,site-per-process,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
        // Not enough by itself (Chromium 156 sent STUN with it): see `prepare_profile`.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--window-size=1280,2000",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    flags.push(format!("--proxy-server=http://127.0.0.1:{black_hole}"));
    flags.push(format!(
        "--js-flags=--max-old-space-size={}",
        config.heap_megabytes
    ));
    flags.push(format!("--user-data-dir={}", profile.display()));
    // Chromium refuses to run its sandbox as root (containers, CI); elsewhere it keeps it.
    if root {
        flags.push("--no-sandbox".into());
    }
    flags.push("about:blank".into());
    flags
}

/// Whether this process runs as root (`Uid:` in /proc/self/status; false when unknown).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// A proxy that accepts and closes every connection: where requests that escaped
/// interception end. Counted, so a test can tell.
async fn black_hole() -> std::io::Result<(u16, Arc<AtomicU64>, JoinHandle<()>)> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let port = listener.local_addr()?.port();
    let count = Arc::new(AtomicU64::new(0));
    let seen = count.clone();
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("a browser connection reached the black-hole proxy");
            drop(socket);
        }
    });
    Ok((port, count, task))
}

/// A started Chromium and its DevTools connection.
pub(crate) struct Running {
    pub browser: Browser,
    child: std::sync::Mutex<Child>,
    pgid: Option<i32>,
    handler: JoinHandle<()>,
    black_hole: JoinHandle<()>,
    /// Connections that reached the black-hole proxy.
    pub escaped: Arc<AtomicU64>,
    broken: AtomicBool,
    _profile: tempfile::TempDir,
}

impl Running {
    pub async fn start(config: &RenderConfig) -> Result<Self, String> {
        let profile = tempfile::Builder::new()
            .prefix("svc-render-")
            .tempdir()
            .map_err(|e| format!("a profile directory: {e}"))?;
        prepare_profile(profile.path()).map_err(|e| format!("the profile's preferences: {e}"))?;
        Self::launch(config, profile).await
    }

    /// Starts Chromium on `profile` as it is.
    async fn launch(config: &RenderConfig, profile: tempfile::TempDir) -> Result<Self, String> {
        let (port, escaped, black_hole) = black_hole()
            .await
            .map_err(|e| format!("the black-hole proxy: {e}"))?;
        let mut command = Command::new(&config.chromium);
        command
            .args(flags(config, port, profile.path(), running_as_root()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: between fork and exec only an async-signal-safe system call is made.
        unsafe {
            command.pre_exec(|| {
                // Chromium dies with this process, even one that exits without dropping it.
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {}: {e}", config.chromium.display()))?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let address = tokio::time::timeout(LAUNCH_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = line.find("ws://") {
                    return Some(line[at..].trim().to_owned());
                }
                tracing::debug!(%line, "chromium");
            }
            None
        })
        .await;
        let address = match address {
            Ok(Some(address)) => address,
            Ok(None) => {
                return Err(format!(
                    "{} exited before it served DevTools",
                    config.chromium.display()
                ));
            }
            Err(_) => return Err("Chromium did not start within 20 s".into()),
        };
        // Its later output is drained (a full pipe would stall it) into the debug log.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(%line, "chromium");
            }
        });
        // Within the launch's limit too: this runs under the renderer's browser lock, so a
        // browser that never answers would hold up every page behind it.
        let (browser, mut handler) =
            tokio::time::timeout(LAUNCH_TIMEOUT, Browser::connect(address))
                .await
                .map_err(|_| "Chromium's DevTools did not answer within 20 s".to_owned())?
                .map_err(|e| format!("connecting to DevTools: {e}"))?;
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    if matches!(e, chromiumoxide::error::CdpError::Ws(_)) {
                        tracing::warn!(error = %e, "the DevTools connection broke");
                        break;
                    }
                    tracing::debug!(error = %e, "DevTools message");
                }
            }
        });
        tracing::info!(
            chromium = %config.chromium.display(),
            tabs = config.tabs,
            "browser started for rendering"
        );
        Ok(Self {
            browser,
            child: std::sync::Mutex::new(child),
            pgid,
            handler,
            black_hole,
            escaped,
            broken: AtomicBool::new(false),
            _profile: profile,
        })
    }

    /// The browser can take pages: it runs, its connection holds, and no page left it in an
    /// unknown state.
    pub fn usable(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
            && !self.handler.is_finished()
            && self
                .child
                .lock()
                .is_ok_and(|mut c| matches!(c.try_wait(), Ok(None)))
    }

    /// A page could not be cleaned up: the next page gets a new browser.
    pub fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.handler.abort();
        self.black_hole.abort();
        // The whole group: the browser and the renderer, GPU and utility processes it started.
        if let Some(pid) = self.pgid.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        if let Ok(mut child) = self.child.lock() {
            let _ = child.start_kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_is_told_to_reach_nothing_by_itself() {
        let config = RenderConfig::new("/usr/bin/chromium");
        let given = flags(&config, 4242, Path::new("/tmp/p"), false);
        for expected in [
            "--proxy-server=http://127.0.0.1:4242",
            "--proxy-bypass-list=<-loopback>",
            "--block-new-web-contents",
            "--js-flags=--max-old-space-size=512",
            "--user-data-dir=/tmp/p",
        ] {
            assert!(given.iter().any(|f| f == expected), "{expected}");
        }
        assert!(!given.iter().any(|f| f == "--no-sandbox"));
        assert!(
            flags(&config, 1, Path::new("/p"), true)
                .iter()
                .any(|f| f == "--no-sandbox")
        );
    }

    /// Debian's Chromium as the renderer starts it, with a page that gathers ICE candidates
    /// against a STUN server on loopback and no lockdown script (the page's own defence):
    /// with a bare profile a STUN packet arrives (so the check can fail); with the prepared
    /// one none has arrived once the page has gathered for two seconds.
    #[tokio::test]
    async fn a_prepared_profile_keeps_webrtc_from_sending_stun_packets() {
        let udp = tokio::net::UdpSocket::bind(("127.0.0.1", 0)).await.unwrap();
        let port = udp.local_addr().unwrap().port();
        let chromium = std::env::var("SVC_CHROMIUM")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/usr/bin/chromium".into());
        let config = RenderConfig::new(chromium);
        // Resolves once gathering is complete, or after two seconds.
        let gather = format!(
            "new Promise(done => {{ \
               const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{port}'}}]}}); \
               pc.onicegatheringstatechange = () => {{ \
                 if (pc.iceGatheringState === 'complete') done('complete'); }}; \
               setTimeout(() => done('waited'), 2000); \
               pc.createDataChannel('x'); pc.createOffer().then(o => pc.setLocalDescription(o)); }})"
        );
        let run = async |running: Running| {
            let page = running.browser.new_page("about:blank").await.unwrap();
            let ended: String = page
                .evaluate(gather.as_str())
                .await
                .unwrap()
                .into_value()
                .unwrap();
            drop(running);
            ended
        };
        let mut buffer = [0u8; 1500];

        let bare = tempfile::tempdir().unwrap();
        run(Running::launch(&config, bare).await.unwrap()).await;
        tokio::time::timeout(Duration::from_secs(30), udp.recv_from(&mut buffer))
            .await
            .expect("the bare profile sent a STUN packet")
            .unwrap();
        while udp.try_recv_from(&mut buffer).is_ok() {}

        let ended = run(Running::start(&config).await.unwrap()).await;
        assert!(["complete", "waited"].contains(&ended.as_str()), "{ended}");
        assert!(
            udp.try_recv_from(&mut buffer).is_err(),
            "a STUN packet left the prepared profile"
        );
    }
}

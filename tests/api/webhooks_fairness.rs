//! One stalled endpoint does not hold up anyone else's deliveries: the sender takes at most
//! `CAPS.per_endpoint` of its deliveries at once and sends the others' meanwhile, instead of
//! waiting for a round's slowest send; and replays, which are free, wait at most
//! `MAX_PENDING_REPLAYS` per endpoint.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{io::AsyncReadExt, net::TcpListener, sync::watch};

use svc_services::hooks::MAX_PENDING_REPLAYS;

use crate::{
    helpers::{TestApp, problem},
    webhooks::{Receiver, app_with, deliveries, register_ok, replay_delivery, sealing, search},
};

/// An endpoint that accepts connections, reads what comes and never answers; it counts the
/// connections open and those that ended (the sender gave up, or the endpoint hung up).
/// With `hang_up_at` set to n, it hangs up on every connection open once n are: it counts
/// them closed before it closes them, so the count never lags behind the sender, which only
/// moves on once it sees the connection end. (A connection the sender gives up on is seen
/// closed only once this side reads its end, which on a loaded machine can come after the
/// sender's next connection.)
#[derive(Clone)]
struct Stalled {
    open: Arc<AtomicUsize>,
    most_open: Arc<AtomicUsize>,
    hung_up: Arc<AtomicUsize>,
    /// The connections accepted so far, for waiting without sleeps.
    accepted: Arc<watch::Sender<usize>>,
    /// 0: never hang up.
    hang_up_at: Arc<AtomicUsize>,
    /// Bumped to have every open connection hang up.
    hang_up: Arc<watch::Sender<u64>>,
}

impl Stalled {
    async fn start() -> (Self, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stalled = Self {
            open: Arc::default(),
            most_open: Arc::default(),
            hung_up: Arc::default(),
            accepted: Arc::new(watch::channel(0).0),
            hang_up_at: Arc::default(),
            hang_up: Arc::new(watch::channel(0).0),
        };
        let counts = stalled.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut hang_up = counts.hang_up.subscribe();
                let now = counts.open.fetch_add(1, Ordering::SeqCst) + 1;
                counts.most_open.fetch_max(now, Ordering::SeqCst);
                counts.accepted.send_modify(|n| *n += 1);
                let at = counts.hang_up_at.load(Ordering::SeqCst);
                if at > 0 && now >= at {
                    counts.hang_up.send_modify(|g| *g += 1);
                }
                let counts = counts.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        tokio::select! {
                            read = socket.read(&mut buf) => if !matches!(read, Ok(n) if n > 0) {
                                break;
                            },
                            _ = hang_up.changed() => break,
                        }
                    }
                    counts.open.fetch_sub(1, Ordering::SeqCst);
                    counts.hung_up.fetch_add(1, Ordering::SeqCst);
                    drop(socket);
                });
            }
        });
        (stalled, addr)
    }
}

#[tokio::test]
async fn a_stalled_endpoint_holds_its_own_senders_only() {
    let (stalled, stalled_addr) = Stalled::start().await;
    let mut receiver = Receiver::start(&[]).await;
    let app = TestApp::builder()
        .sandbox_host("hooks.sandbox.test", *receiver.server.address())
        .sandbox_host("stalled.sandbox.test", stalled_addr)
        .runtime(|r| r.webhook_poll_millis = 1000)
        .sealing(sealing())
        // The stalled sends must still be waiting when the last task reaches the working
        // endpoint, however slow the machine: they wait far longer than the test runs.
        .fetch_timeout(Duration::from_secs(300))
        .action_sites()
        .await
        .spawn()
        .await;
    register_ok(
        &app,
        &format!("http://stalled.sandbox.test:{}/hooks", stalled_addr.port()),
    )
    .await;
    register_ok(&app, &receiver.url()).await;

    const TASKS: usize = 10;
    for i in 0..TASKS {
        search(&app, &format!("tea {i}")).await;
    }
    for _ in 0..TASKS {
        receiver.next().await;
    }
    assert_eq!(
        stalled.hung_up.load(Ordering::SeqCst),
        0,
        "every task reached the working endpoint while the stalled one's sends were still waiting"
    );
    let cap = svc_services::hooks::CAPS.per_endpoint as usize;
    let mut accepted = stalled.accepted.subscribe();
    tokio::time::timeout(Duration::from_secs(20), accepted.wait_for(|n| *n >= cap))
        .await
        .expect("the stalled endpoint gets its turns")
        .unwrap();
    assert_eq!(
        stalled.most_open.load(Ordering::SeqCst),
        cap,
        "the stalled endpoint gets its cap of senders and no more, with {TASKS} due"
    );
}

/// Endpoints whose last attempt failed share a lane of their own: once three hanging endpoints
/// have timed out, their retries go one at a time per endpoint and two per account
/// (`FAILING_CAPS`), within `FAILING_SENDERS`, and an endpoint that answers is served
/// meanwhile. Retries come due on the test clock; the first sends time out after 3 s, the
/// retries end when the endpoints hang up on a full lane.
#[tokio::test]
async fn endpoints_that_failed_retry_in_a_lane_of_their_own() {
    let (stalled, stalled_addr) = Stalled::start().await;
    let mut receiver = Receiver::start(&[]).await;
    let clock = crate::helpers::TestClock::new();
    let app = TestApp::builder()
        .sandbox_host("hooks.sandbox.test", *receiver.server.address())
        .sandbox_host("stalled.sandbox.test", stalled_addr)
        .runtime(|r| r.webhook_poll_millis = 200)
        // Short, so that the hanging sends time out soon, yet long enough for the searches to
        // answer on a loaded machine (they go through the same client).
        .fetch_timeout(Duration::from_secs(3))
        .clock(clock.clone())
        .sealing(sealing())
        .action_sites()
        .await
        .spawn()
        .await;
    for path in ["a", "b", "c"] {
        let url = format!("http://stalled.sandbox.test:{}/{path}", stalled_addr.port());
        register_ok(&app, &url).await;
    }
    register_ok(&app, &receiver.url()).await;
    const TASKS: usize = 4;
    for i in 0..TASKS {
        search(&app, &format!("tea {i}")).await;
    }
    // The first round: each hanging endpoint answers nothing to its cap of four, then they
    // time out and are failing.
    let first_round = 3 * svc_services::hooks::CAPS.per_endpoint as usize;
    let wait_for = |count: Arc<watch::Sender<usize>>, n: usize| async move {
        let mut seen = count.subscribe();
        tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|c| *c >= n))
            .await
            .unwrap_or_else(|_| panic!("{n} reached"))
            .unwrap();
    };
    wait_for(stalled.accepted.clone(), first_round).await;
    for _ in 0..TASKS {
        receiver.next().await;
    }
    let hung_up = Arc::new(watch::channel(0).0);
    {
        let (hung, counter) = (hung_up.clone(), stalled.hung_up.clone());
        tokio::spawn(async move {
            loop {
                hung.send_replace(counter.load(Ordering::SeqCst));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
    wait_for(hung_up.clone(), first_round).await;
    assert_eq!(stalled.open.load(Ordering::SeqCst), 0);
    stalled.most_open.store(0, Ordering::SeqCst);
    let lane = svc_services::hooks::FAILING_CAPS.per_account as usize;
    // From now on the endpoints hang up once the lane is full: each retry fails when they do,
    // counted before the sender can start the next.
    stalled.hang_up_at.store(lane, Ordering::SeqCst);

    // Their retries come due: two rounds of the failing lane, two at a time for the account.
    clock.advance(Duration::from_secs(600));
    wait_for(stalled.accepted.clone(), first_round + 2 * lane).await;
    // Meanwhile the answering endpoint is served at once.
    search(&app, "tea while they hang").await;
    receiver.next().await;
    wait_for(hung_up.clone(), first_round + 2 * lane).await;
    assert_eq!(
        stalled.most_open.load(Ordering::SeqCst),
        lane,
        "the failing endpoints' retries went {lane} at a time"
    );
}

#[tokio::test]
async fn replays_waiting_to_be_sent_are_capped_per_endpoint() {
    let mut receiver = Receiver::start(&[]).await;
    // The sender is off: the replays stay waiting.
    let app = app_with(&receiver, None, false, None).await;
    register_ok(&app, &receiver.url()).await;
    search(&app, "tea").await;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), 1);
    receiver.next().await;
    let sent = deliveries(&app, &app.api_key).await;
    let id = sent[0]["id"].as_str().unwrap().to_owned();
    for _ in 0..MAX_PENDING_REPLAYS {
        assert_eq!(replay_delivery(&app, &id).await.status(), 202);
    }
    let refused = replay_delivery(&app, &id).await;
    assert_eq!(refused.headers()["retry-after"], "60");
    let body = problem(refused, 429, "rate_limited").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("{MAX_PENDING_REPLAYS} replays waiting")),
        "{body}"
    );
    // Once some are sent (an endpoint's cap of them at once), as many more may wait.
    let cap = svc_services::hooks::CAPS.per_endpoint as usize;
    assert_eq!(app.services.hooks.deliver_due().await.unwrap(), cap);
    assert_eq!(replay_delivery(&app, &id).await.status(), 202);
}

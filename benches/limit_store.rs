//! The cost of one shared-limit hit (`LimitStore::hit`, the upsert every wrong code and every
//! readiness scan now pays), without HTTP: sequential hits (the latency one request adds) and
//! 16 concurrent callers (the rate the store sustains), on the memory store, a SQLite file and,
//! when `SVC_TEST_POSTGRES_URL` is set, a fresh Postgres database. `bench/limits.sh` runs it.

use std::time::{Duration, Instant};

use svc::startup::Stores;
use svc_ports::{LimitBucket, LimitKey};

const KEYS: usize = 200;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

async fn measure(name: &str, stores: &Stores, hits: usize) {
    let keys: Vec<LimitKey> = (0..KEYS)
        .map(|i| LimitKey::parse(&format!("198.51.{}.{}", i / 250, i % 250)).unwrap())
        .collect();
    let window = Duration::from_secs(60);
    // Warm-up: the rows exist, the connections are open.
    for k in &keys {
        stores
            .limits
            .hit(LimitBucket::Scan, k, window, 1_000_000, chrono::Utc::now())
            .await
            .expect("hit");
    }
    let mut each = Vec::with_capacity(hits);
    for i in 0..hits {
        let started = Instant::now();
        stores
            .limits
            .hit(
                LimitBucket::Scan,
                &keys[i % KEYS],
                window,
                1_000_000,
                chrono::Utc::now(),
            )
            .await
            .expect("hit");
        each.push(started.elapsed());
    }
    each.sort();
    let mean = each.iter().sum::<Duration>().as_secs_f64() * 1e6 / hits as f64;
    let callers = 16;
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let limits = stores.limits.clone();
            let keys = keys.clone();
            tokio::spawn(async move {
                for i in 0..hits / callers {
                    limits
                        .hit(
                            LimitBucket::Scan,
                            &keys[(c * 31 + i) % KEYS],
                            window,
                            1_000_000,
                            chrono::Utc::now(),
                        )
                        .await
                        .expect("hit");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let rate = (hits / callers * callers) as f64 / started.elapsed().as_secs_f64();
    println!(
        "{name:<9} sequential: mean {mean:>7.1} us  p50 {:>7.1} us  p99 {:>7.1} us  |  16 concurrent callers: {rate:>8.0} hits/s",
        percentile(&each, 0.5),
        percentile(&each, 0.99),
    );
}

fn main() {
    let hits: usize = std::env::var("LIMIT_HITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        println!("limit_store: {hits} hits over {KEYS} keys per store");
        measure("memory", &Stores::memory(), hits).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("limits.db").display());
        let sqlite = Stores::open(&url, 8).await.expect("open SQLite");
        measure("sqlite", &sqlite, hits).await;
        if std::env::var("SVC_TEST_POSTGRES_URL").is_ok() {
            let url = svc_contract_tests::postgres_database().await;
            let pg = Stores::open(&url, 16).await.expect("open Postgres");
            measure("postgres", &pg, hits).await;
        } else {
            println!("postgres  skipped: set SVC_TEST_POSTGRES_URL to a server whose user may create databases");
        }
    });
}

//! What every property test here and in `tests/api` starts with: a runtime for the stores and a
//! proptest runner that keeps no failure files.

use proptest::test_runner::{Config as ProptestConfig, TestRunner};

/// `cases` random cases, no failure persistence (a failure prints its shrunk input).
pub fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A multi-threaded runtime (two workers) to drive the stores, and a runner for `config`.
pub fn runner(config: ProptestConfig) -> (tokio::runtime::Runtime, TestRunner) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    (runtime, TestRunner::new(config))
}

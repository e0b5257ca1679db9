//! WAL checkpoints off the writer.
//!
//! SQLite's automatic checkpoint runs inside the commit of the connection whose commit took the
//! WAL past `wal_autocheckpoint` pages. Every write here goes through one connection, so each
//! checkpoint (about a thousand pages copied and two fsyncs) stalled every queued write for
//! 10-25 ms, several times a second under load: the slowest twentieth of executions at half
//! the top rate waited for one. A task copies the WAL back on a reader connection instead,
//! every [`EVERY`], as a PASSIVE checkpoint: it never waits for the writer and the writer never
//! waits for it. The writer's own automatic checkpoint stays, at [`BACKSTOP_PAGES`], for a
//! checkpointer that cannot keep up or is gone.

use std::{sync::Weak, time::Duration};

use sqlx::SqlitePool;
use tokio::{task::JoinHandle, time::MissedTickBehavior};

/// The writer checkpoints by itself only past this many WAL pages (16 MiB of 4 KiB pages).
/// It must still do so now and then: SQLite starts the WAL over only when a write begins with
/// every page copied back, which a checkpointer racing a busy writer never sees. The writer's
/// checkpoint then copies only what the checkpointer has not, and the WAL starts over.
pub(super) const BACKSTOP_PAGES: u32 = 4_096;
/// How often the checkpointer copies the WAL back.
const EVERY: Duration = Duration::from_millis(50);

/// Starts the checkpointer on the current runtime; it ends once `alive` has no owner left (the
/// last clone of the store is gone) or the pool is closed.
pub(super) fn start(readers: SqlitePool, alive: Weak<()>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // Logged once per run of failures, not every tick.
        let mut failing = false;
        loop {
            tick.tick().await;
            if alive.strong_count() == 0 || readers.is_closed() {
                break;
            }
            match checkpoint(&readers).await {
                Ok(_) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "WAL checkpoint failed; the writer's own checkpoint takes over past its limit");
                }
                Err(_) => {}
            }
        }
    })
}

/// One PASSIVE checkpoint: the WAL's pages and how many of them are now in the database file
/// (fewer when a reader still needs older pages; the next run goes on from there).
pub(super) async fn checkpoint(readers: &SqlitePool) -> Result<(i64, i64), sqlx::Error> {
    let (_busy, wal_pages, copied): (i64, i64, i64) =
        sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(readers)
            .await?;
    Ok((wal_pages, copied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteStore;

    async fn file_store(dir: &tempfile::TempDir) -> SqliteStore {
        let url = format!("sqlite://{}", dir.path().join("c.db").display());
        SqliteStore::open(&url).await.unwrap()
    }

    #[tokio::test]
    async fn the_writer_checkpoints_only_past_the_backstop() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let pages: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(&store.write_pool)
            .await
            .unwrap();
        assert_eq!(pages, i64::from(BACKSTOP_PAGES));
    }

    #[tokio::test]
    async fn a_checkpoint_copies_the_whole_wal_back() {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
        let dir = tempfile::tempdir().unwrap();
        // A pool of the test's own, with no other checkpointer (neither the store's task nor
        // SQLite's automatic one): the WAL holds every page written until `checkpoint` runs.
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("c.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("wal_autocheckpoint", "0");
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .unwrap();
        sqlx::raw_sql(
            "CREATE TABLE filler (x BLOB); \
             WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) \
             INSERT INTO filler SELECT zeroblob(4000) FROM n",
        )
        .execute(&pool)
        .await
        .unwrap();
        let before = std::fs::metadata(dir.path().join("c.db")).unwrap().len();
        assert!(before < 50 * 4000, "the rows are still only in the WAL");
        let (wal_pages, copied) = checkpoint(&pool).await.unwrap();
        assert!(wal_pages >= 50, "{wal_pages} pages in the WAL");
        assert_eq!(copied, wal_pages);
        let file = std::fs::metadata(dir.path().join("c.db")).unwrap().len();
        assert!(
            file >= 50 * 4000,
            "the rows are in the database file ({file} bytes)"
        );
    }

    #[tokio::test]
    async fn the_checkpointer_ends_with_the_last_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let alive = std::sync::Arc::new(());
        let running = start(store.pool.clone(), std::sync::Arc::downgrade(&alive));
        tokio::task::yield_now().await;
        assert!(!running.is_finished(), "it runs while the store lives");
        drop(alive);
        // It ends at its next tick; the bound only keeps a checkpointer that never ends from
        // hanging the suite.
        tokio::time::timeout(Duration::from_secs(60), running)
            .await
            .expect("the checkpointer ended")
            .unwrap();
    }
}

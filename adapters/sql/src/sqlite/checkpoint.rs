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
//!
//! A PASSIVE checkpoint that a busy writer overtakes (nearly all of them) syncs the WAL but not
//! the database file: SQLite syncs that only when it has copied every frame. So the pages it
//! copied stayed dirty in the page cache until the writer's backstop checkpoint, whose one
//! fsync then wrote thousands of them (6-10 ms) while every write waited: the slowest
//! hundredth at half the top rate. The task therefore syncs the database file itself after
//! each run that copied pages, leaving the writer's sync only what came since.

use std::{
    collections::HashMap,
    fs::File,
    os::unix::fs::MetadataExt,
    path::Path,
    sync::{Arc, Mutex, OnceLock, Weak},
    time::Duration,
};

use sqlx::SqlitePool;
use tokio::{task::JoinHandle, time::MissedTickBehavior};

/// The writer checkpoints by itself only past this many WAL pages (16 MiB of 4 KiB pages).
/// It must still do so now and then: SQLite starts the WAL over only when a write begins with
/// every page copied back, which a checkpointer racing a busy writer never sees. The writer's
/// checkpoint then copies only what the checkpointer has not, and the WAL starts over.
pub(super) const BACKSTOP_PAGES: u32 = 4_096;
/// How often the checkpointer copies the WAL back.
const EVERY: Duration = Duration::from_millis(50);

/// A file's device and inode.
type FileId = (u64, u64);

/// A descriptor of the database file at `path` for syncing it, one per file (device and inode),
/// kept open while the file exists. Closing any descriptor of a file drops every POSIX lock the
/// process holds on it, SQLite's own included (SQLite's "How To Corrupt", section 2.2), so a
/// descriptor opened beside SQLite's must outlive them all. Only the descriptors of files
/// deleted since are closed (a test's temporary databases): no other process can open those
/// any more, so no lock of theirs is wanted.
pub(super) fn database_file(path: &Path) -> std::io::Result<Arc<File>> {
    static OPEN: OnceLock<Mutex<HashMap<FileId, Arc<File>>>> = OnceLock::new();
    let mut open = OPEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    open.retain(|_, file| file.metadata().is_ok_and(|m| m.nlink() > 0));
    let meta = std::fs::metadata(path)?;
    if let Some(file) = open.get(&(meta.dev(), meta.ino())) {
        return Ok(file.clone());
    }
    let file = Arc::new(File::open(path)?);
    let meta = file.metadata()?;
    Ok(open.entry((meta.dev(), meta.ino())).or_insert(file).clone())
}

/// What the checkpointer remembers between runs.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// The WAL frames copied back when the database file was last synced.
    synced: i64,
}

/// Starts the checkpointer on the current runtime; it ends once `alive` has no owner left (the
/// last clone of the store is gone) or the pool is closed.
pub(super) fn start(readers: SqlitePool, file: Arc<File>, alive: Weak<()>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut progress = Progress::default();
        // Logged once per run of failures, not every tick.
        let mut failing = false;
        loop {
            tick.tick().await;
            if alive.strong_count() == 0 || readers.is_closed() {
                break;
            }
            match run(&readers, &file, &mut progress).await {
                Ok(_) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %format!("{e:#}"), "WAL checkpoint failed; the writer's own checkpoint takes over past its limit");
                }
                Err(_) => {}
            }
        }
    })
}

/// One run: a PASSIVE checkpoint, then a sync of the database file when it copied pages since
/// the last sync. Returns whether it synced.
pub(super) async fn run(
    readers: &SqlitePool,
    file: &Arc<File>,
    progress: &mut Progress,
) -> anyhow::Result<bool> {
    use anyhow::Context;
    let (_, copied) = checkpoint(readers).await.context("checkpointing")?;
    // `copied` falls back to zero when the WAL starts over.
    if copied == 0 || copied == progress.synced {
        return Ok(false);
    }
    let file = file.clone();
    tokio::task::spawn_blocking(move || file.sync_data())
        .await
        .context("syncing the database file")?
        .context("syncing the database file")?;
    progress.synced = copied;
    Ok(true)
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
        let file = database_file(&dir.path().join("c.db")).unwrap();
        let running = start(store.pool.clone(), file, std::sync::Arc::downgrade(&alive));
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

    #[tokio::test]
    async fn one_descriptor_per_database_file_whatever_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let _store = file_store(&dir).await;
        let other = tempfile::tempdir().unwrap();
        let _other_store = file_store(&other).await;
        let a = database_file(&dir.path().join("c.db")).unwrap();
        let b = database_file(&dir.path().join(".").join("c.db")).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same file, the same descriptor");
        let c = database_file(&other.path().join("c.db")).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "another file, another descriptor");
    }

    #[test]
    fn the_descriptor_of_a_deleted_file_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.db");
        std::fs::write(&path, b"x").unwrap();
        let kept = database_file(&path).unwrap();
        assert_eq!(Arc::strong_count(&kept), 2, "the registry holds it");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(dir.path().join("other.db"), b"y").unwrap();
        database_file(&dir.path().join("other.db")).unwrap();
        assert_eq!(Arc::strong_count(&kept), 1, "the registry let it go");
    }

    #[tokio::test]
    async fn a_run_syncs_the_database_file_only_after_copying_pages() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let file = database_file(&dir.path().join("c.db")).unwrap();
        let mut progress = Progress::default();
        // Whatever migrating left in the WAL is copied and synced once.
        run(&store.pool, &file, &mut progress).await.unwrap();
        assert!(
            !run(&store.pool, &file, &mut progress).await.unwrap(),
            "nothing new copied, nothing to sync"
        );
        sqlx::raw_sql("CREATE TABLE filler (x BLOB); INSERT INTO filler VALUES (zeroblob(40000))")
            .execute(&store.write_pool)
            .await
            .unwrap();
        assert!(
            run(&store.pool, &file, &mut progress).await.unwrap(),
            "new pages copied, so the file is synced"
        );
        assert!(!run(&store.pool, &file, &mut progress).await.unwrap());
    }
}

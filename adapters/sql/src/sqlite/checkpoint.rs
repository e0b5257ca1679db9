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

/// The database file SQLite has open as `main`, from SQLite itself (a `file:` URI or a relative
/// path names it differently in the URL); `None` for a temporary or in-memory database.
pub(super) async fn database_path(pool: &SqlitePool) -> Result<Option<String>, sqlx::Error> {
    let file: Option<String> =
        sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(pool)
            .await?;
    Ok(file.filter(|f| !f.is_empty()))
}

/// A descriptor of the database file at `path` for syncing it, one per file (device and inode),
/// kept open while the file exists. Closing any descriptor of a file drops every POSIX lock the
/// process holds on it, SQLite's own included (SQLite's "How To Corrupt", section 2.2), so a
/// descriptor opened beside SQLite's must outlive them all. Only the descriptors of files
/// deleted since are closed (a test's temporary databases): no process can open those any
/// more. (One that had it open before could then take a lock this process's SQLite thinks it
/// holds; a database deleted while in use is lost to it anyway.)
#[cfg(unix)]
pub(super) fn database_file(path: &Path) -> std::io::Result<Arc<File>> {
    use std::os::{fd::IntoRawFd, unix::fs::MetadataExt};
    static OPEN: OnceLock<Mutex<HashMap<FileId, Arc<File>>>> = OnceLock::new();
    let mut open = OPEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // A file whose state cannot be read is kept: only a deleted one is let go.
    open.retain(|_, file| file.metadata().map_or(true, |m| m.nlink() > 0));
    let meta = std::fs::metadata(path)?;
    if let Some(file) = open.get(&(meta.dev(), meta.ino())) {
        return Ok(file.clone());
    }
    let file = File::open(path)?;
    let meta = file.metadata()?;
    let id = (meta.dev(), meta.ino());
    if let Some(known) = open.get(&id) {
        // The path now names a file opened before (replaced since the look-up above): this
        // second descriptor must not be closed either.
        let _ = file.into_raw_fd();
        return Ok(known.clone());
    }
    let file = Arc::new(file);
    open.insert(id, file.clone());
    Ok(file)
}

#[cfg(not(unix))]
pub(super) fn database_file(_path: &Path) -> std::io::Result<Arc<File>> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// What the checkpointer remembers between runs.
#[derive(Debug, Default)]
pub(super) struct Progress {
    /// The WAL frames copied back when the database file was last synced.
    synced: i64,
}

/// Why a run failed: the two are logged apart, as a failing sync is a disk in trouble.
#[derive(Debug)]
pub(super) enum RunError {
    Checkpoint(sqlx::Error),
    Sync(std::io::Error),
}

/// Starts the checkpointer on the current runtime; it ends once `alive` has no owner left (the
/// last clone of the store is gone) or the pool is closed. Without `file` it only copies.
pub(super) fn start(
    readers: SqlitePool,
    file: Option<Arc<File>>,
    alive: Weak<()>,
) -> JoinHandle<()> {
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
            match run(&readers, file.as_ref(), &mut progress).await {
                Ok(_) => failing = false,
                Err(_) if failing => {}
                Err(RunError::Checkpoint(e)) => {
                    failing = true;
                    tracing::warn!(error = %e, "WAL checkpoint failed; the writer's own checkpoint takes over past its limit");
                }
                Err(RunError::Sync(e)) => {
                    failing = true;
                    tracing::error!(error = %e, "syncing the SQLite database file failed");
                }
            }
        }
    })
}

/// One run: a PASSIVE checkpoint, then a sync of the database file when it copied pages since
/// the last sync. Returns whether it synced.
pub(super) async fn run(
    readers: &SqlitePool,
    file: Option<&Arc<File>>,
    progress: &mut Progress,
) -> Result<bool, RunError> {
    let done = checkpoint(readers).await.map_err(RunError::Checkpoint)?;
    tracing::trace!(
        busy = done.busy,
        wal_pages = done.wal_pages,
        copied = done.copied,
        "WAL checkpoint"
    );
    // Busy: another checkpoint (the writer's) holds the lock and syncs what it copies.
    if done.busy || done.copied <= 0 {
        return Ok(false);
    }
    // Even a run that copied every frame it saw is synced: SQLite syncs the file only when no
    // write came in during the copy, and the counts it returns are those it began with.
    // (After the WAL starts over, a count equal to the last one by chance skips one sync; the
    // next run's makes up for it.)
    let Some(file) = file.filter(|_| done.copied != progress.synced) else {
        return Ok(false);
    };
    let file = file.clone();
    tokio::task::spawn_blocking(move || file.sync_data())
        .await
        .map_err(|e| RunError::Sync(std::io::Error::other(e)))?
        .map_err(RunError::Sync)?;
    progress.synced = done.copied;
    Ok(true)
}

/// What one PASSIVE checkpoint did.
#[derive(Debug, Clone, Copy)]
pub(super) struct Checkpoint {
    /// Another checkpoint held the lock; nothing was done (the counts are -1).
    pub busy: bool,
    /// Frames in the WAL.
    pub wal_pages: i64,
    /// Frames now in the database file (fewer when a reader still needs older ones; the next
    /// run goes on from there).
    pub copied: i64,
}

/// One PASSIVE checkpoint.
pub(super) async fn checkpoint(readers: &SqlitePool) -> Result<Checkpoint, sqlx::Error> {
    let (busy, wal_pages, copied): (i64, i64, i64) =
        sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
            .fetch_one(readers)
            .await?;
    Ok(Checkpoint {
        busy: busy != 0,
        wal_pages,
        copied,
    })
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

    /// A pool of the test's own on a new file, with no other checkpointer (neither the store's
    /// task nor SQLite's automatic one): the WAL holds every page written until `checkpoint`
    /// runs.
    async fn bare_pool(dir: &tempfile::TempDir) -> SqlitePool {
        use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("c.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("wal_autocheckpoint", "0");
        sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(3)
            .connect_with(options)
            .await
            .unwrap()
    }

    /// Writes 20 rows of 4,000 bytes: 20 pages or more.
    async fn fill(pool: &SqlitePool) {
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS filler (x BLOB); \
             WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) \
             INSERT INTO filler SELECT zeroblob(4000) FROM n",
        )
        .execute(pool)
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn a_checkpoint_copies_the_whole_wal_back() {
        let dir = tempfile::tempdir().unwrap();
        let pool = bare_pool(&dir).await;
        fill(&pool).await;
        let before = std::fs::metadata(dir.path().join("c.db")).unwrap().len();
        assert!(before < 20 * 4000, "the rows are still only in the WAL");
        let done = checkpoint(&pool).await.unwrap();
        assert!(!done.busy);
        assert!(done.wal_pages >= 20, "{done:?}");
        assert_eq!(done.copied, done.wal_pages);
        let file = std::fs::metadata(dir.path().join("c.db")).unwrap().len();
        assert!(
            file >= 20 * 4000,
            "the rows are in the database file ({file} bytes)"
        );
    }

    #[tokio::test]
    async fn the_checkpointer_ends_with_the_last_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let alive = std::sync::Arc::new(());
        let file = database_file(&dir.path().join("c.db")).unwrap();
        let running = start(
            store.pool.clone(),
            Some(file),
            std::sync::Arc::downgrade(&alive),
        );
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
        // The same file through a link to its directory: another path, the same inode.
        let link = other.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        let a = database_file(&dir.path().join("c.db")).unwrap();
        let b = database_file(&link.join("c.db")).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the same file, the same descriptor");
        let c = database_file(&other.path().join("c.db")).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "another file, another descriptor");
    }

    #[tokio::test]
    async fn the_path_comes_from_sqlite_whatever_the_url_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = SqliteStore::open(&format!("sqlite://file:{}?cache=private", path.display()))
            .await
            .unwrap();
        let named = database_path(&store.pool).await.unwrap().unwrap();
        assert_eq!(
            std::fs::canonicalize(named).unwrap(),
            std::fs::canonicalize(&path).unwrap()
        );
        let memory = SqliteStore::open("sqlite::memory:").await.unwrap();
        assert_eq!(database_path(&memory.pool).await.unwrap(), None);
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
    async fn a_run_syncs_the_database_file_only_after_a_partial_copy() {
        let dir = tempfile::tempdir().unwrap();
        let pool = bare_pool(&dir).await;
        let file = database_file(&dir.path().join("c.db")).unwrap();
        let mut progress = Progress::default();
        fill(&pool).await;
        // A reader on the snapshot of now keeps the frames written after it in the WAL.
        let mut reader = pool.acquire().await.unwrap();
        sqlx::raw_sql("BEGIN; SELECT count(*) FROM filler")
            .execute(&mut *reader)
            .await
            .unwrap();
        fill(&pool).await;
        assert!(
            run(&pool, Some(&file), &mut progress).await.unwrap(),
            "part of the WAL copied, so the file is synced"
        );
        assert!(
            !run(&pool, Some(&file), &mut progress).await.unwrap(),
            "nothing new copied, nothing to sync"
        );
        assert!(
            !run(&pool, None, &mut progress).await.unwrap(),
            "without a file, nothing to sync"
        );
        sqlx::raw_sql("COMMIT").execute(&mut *reader).await.unwrap();
        drop(reader);
        assert!(
            run(&pool, Some(&file), &mut progress).await.unwrap(),
            "the rest copied and synced"
        );
        let done = checkpoint(&pool).await.unwrap();
        assert_eq!(done.copied, done.wal_pages, "the rest copied: {done:?}");
        assert_eq!(progress.synced, done.copied);
        assert!(!run(&pool, Some(&file), &mut progress).await.unwrap());
    }
}

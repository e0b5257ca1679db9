//! A2A tasks, kept in the store so that any instance behind a load balancer answers `GetTask`
//! for a task another instance ran.
//!
//! The A2A face runs only the email-code signup, which has no caller account: a task has no
//! owner, and its id (24 random base62 characters, about 143 bits) is the capability that reads
//! it, exactly as when tasks lived in one process. The store keeps only the SHA-256 of the id,
//! so the table hands out no readable capability, and the document never holds a secret (the
//! API key a signup yields is shown once, in the answer, and left out of what is stored).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{keys::KeyHash, store::StoreError};

/// How long a finished task can be read back.
pub const A2A_TASK_TTL: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// One finished A2A task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aTask {
    /// SHA-256 of the task id.
    pub id_hash: KeyHash,
    /// The task as `GetTask` answers it: serialised JSON, kept exactly (it quotes the caller's
    /// message, which may hold any character; a NUL is the escape `\u0000` in JSON text).
    pub document: String,
    pub created_at: DateTime<Utc>,
    /// After this instant the task reads as absent and may be purged.
    pub expires_at: DateTime<Utc>,
}

impl A2aTask {
    /// The stored hash of a task id.
    pub fn hash_of(task_id: &str) -> KeyHash {
        KeyHash::of(task_id)
    }
}

/// Finished A2A tasks, read back by id until they expire.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait]
pub trait A2aTaskStore: Send + Sync {
    /// Stores a finished task. A task with the same id hash MUST NOT be replaced: the call
    /// fails with a [`StoreError`] and the first stays. A store MAY forget a task before it
    /// expires only to bound its memory (the in-memory store keeps the newest 10,000).
    async fn insert_a2a_task(&self, task: &A2aTask) -> Result<(), StoreError>;

    /// The task with this id hash, exactly as stored, when it has not expired at `now`
    /// (`now < expires_at`); `Ok(None)` for an unknown or expired one.
    async fn a2a_task(
        &self,
        id_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<A2aTask>, StoreError>;

    /// Deletes the tasks that expired at or before `before`; answers how many went.
    async fn purge_a2a_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError>;
}

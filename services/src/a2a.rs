//! A2A tasks kept in the store until they expire, so any instance answers `GetTask` for a task
//! another instance ran. Times come from the `Clock` port.

use std::sync::Arc;

use serde_json::Value;
use svc_ports::{A2aTask, A2aTaskStore, Clock, StoreError, a2a::A2A_TASK_TTL};

pub struct A2aTaskService {
    store: Arc<dyn A2aTaskStore>,
    clock: Arc<dyn Clock>,
}

impl A2aTaskService {
    pub fn new(store: Arc<dyn A2aTaskStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// Keeps a finished task (without secrets) under its id for [`A2A_TASK_TTL`].
    pub async fn keep(&self, task_id: &str, task: &Value) -> Result<(), StoreError> {
        let now = self.clock.now();
        self.store
            .insert_a2a_task(&A2aTask {
                id_hash: A2aTask::hash_of(task_id),
                document: task.to_string(),
                created_at: now,
                expires_at: now + A2A_TASK_TTL,
            })
            .await
    }

    /// The task with this id, as kept, until it expires.
    pub async fn task(&self, task_id: &str) -> Result<Option<Value>, StoreError> {
        let Some(task) = self
            .store
            .a2a_task(&A2aTask::hash_of(task_id), self.clock.now())
            .await?
        else {
            return Ok(None);
        };
        serde_json::from_str(&task.document)
            .map(Some)
            .map_err(|e| StoreError(anyhow::Error::new(e).context("decoding a stored A2A task")))
    }

    /// Deletes the tasks that have expired; answers how many went.
    pub async fn purge_expired(&self) -> Result<u64, StoreError> {
        self.store.purge_a2a_tasks(self.clock.now()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use svc_ports::system::ManualClock;

    #[derive(Default)]
    struct OneTask(std::sync::Mutex<Option<A2aTask>>);

    #[async_trait::async_trait]
    impl A2aTaskStore for OneTask {
        async fn insert_a2a_task(&self, task: &A2aTask) -> Result<(), StoreError> {
            *self.0.lock().unwrap() = Some(task.clone());
            Ok(())
        }
        async fn a2a_task(
            &self,
            id_hash: &svc_ports::KeyHash,
            now: chrono::DateTime<chrono::Utc>,
        ) -> Result<Option<A2aTask>, StoreError> {
            Ok(self
                .0
                .lock()
                .unwrap()
                .clone()
                .filter(|t| t.id_hash == *id_hash && now < t.expires_at))
        }
        async fn purge_a2a_tasks(
            &self,
            _before: chrono::DateTime<chrono::Utc>,
        ) -> Result<u64, StoreError> {
            Ok(0)
        }
    }

    #[tokio::test]
    async fn a_task_reads_back_for_an_hour_under_its_id_only() {
        let store = Arc::new(OneTask::default());
        let clock = Arc::new(ManualClock::at(chrono::Utc::now()));
        let tasks = A2aTaskService::new(store.clone(), clock.clone());
        let doc = json!({"id": "t1", "note": "nul \u{0} kept"});
        tasks.keep("t1", &doc).await.unwrap();
        let stored = store.0.lock().unwrap().clone().unwrap();
        assert!(!stored.document.is_empty());
        assert_ne!(stored.id_hash, svc_ports::KeyHash::of("t2"));
        assert_eq!(tasks.task("t1").await.unwrap(), Some(doc));
        assert_eq!(tasks.task("t2").await.unwrap(), None);
        clock.advance(A2A_TASK_TTL - chrono::TimeDelta::milliseconds(1));
        assert!(tasks.task("t1").await.unwrap().is_some());
        clock.advance(chrono::TimeDelta::milliseconds(1));
        assert_eq!(
            tasks.task("t1").await.unwrap(),
            None,
            "expired after an hour"
        );
    }
}

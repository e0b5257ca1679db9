//! In-memory A2A tasks, bounded: the sandbox keeps the newest 10,000 (as the A2A face kept
//! them in process before they moved to the store).

use std::collections::{HashMap, VecDeque};

use anyhow::anyhow;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{A2aTask, A2aTaskStore, KeyHash, StoreError};

use crate::MemoryStore;

const MAX_TASKS: usize = 10_000;

#[derive(Default)]
pub(crate) struct A2aState {
    tasks: HashMap<KeyHash, A2aTask>,
    order: VecDeque<KeyHash>,
}

#[async_trait]
impl A2aTaskStore for MemoryStore {
    async fn insert_a2a_task(&self, task: &A2aTask) -> Result<(), StoreError> {
        let mut s = self.lock();
        let state = &mut s.a2a;
        if state.tasks.contains_key(&task.id_hash) {
            return Err(StoreError(anyhow!("this A2A task is already stored")));
        }
        while state.tasks.len() >= MAX_TASKS {
            match state.order.pop_front() {
                Some(oldest) => {
                    state.tasks.remove(&oldest);
                }
                None => break,
            }
        }
        state.order.push_back(task.id_hash);
        state.tasks.insert(task.id_hash, task.clone());
        Ok(())
    }

    async fn a2a_task(
        &self,
        id_hash: &KeyHash,
        now: DateTime<Utc>,
    ) -> Result<Option<A2aTask>, StoreError> {
        Ok(self
            .lock()
            .a2a
            .tasks
            .get(id_hash)
            .filter(|t| now < t.expires_at)
            .cloned())
    }

    async fn purge_a2a_tasks(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut s = self.lock();
        let state = &mut s.a2a;
        let before_len = state.tasks.len();
        state.tasks.retain(|_, t| t.expires_at > before);
        let tasks = &state.tasks;
        state.order.retain(|h| tasks.contains_key(h));
        Ok((before_len - state.tasks.len()) as u64)
    }
}

//! Streaming: `SendStreamingMessage` (`message/stream`) and `SubscribeToTask`
//! (`tasks/resubscribe`) answer `text/event-stream`, one JSON-RPC response per event.
//!
//! A streamed task goes submitted → working → (artifact) → completed/failed/rejected. While it
//! runs, its redacted snapshot is published on a watch channel in [`Running`], so a subscriber
//! on this instance follows it live; once finished it is in the store, so a subscriber on any
//! instance gets the final state replayed. (A task running on another instance is not visible
//! until it finishes: tasks here run for well under a second.)

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures_util::{Stream, StreamExt, stream};
use poem::{Body, Response, http::StatusCode};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::Flavor;

/// Tasks streaming on this instance, by id: the latest redacted snapshot of each.
#[derive(Clone, Default)]
pub struct Running(Arc<Mutex<HashMap<String, watch::Receiver<Value>>>>);

impl Running {
    pub(crate) fn insert(&self, task_id: &str, rx: watch::Receiver<Value>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(task_id.to_owned(), rx);
    }

    pub(crate) fn remove(&self, task_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(task_id);
    }

    pub(crate) fn get(&self, task_id: &str) -> Option<watch::Receiver<Value>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(task_id)
            .cloned()
    }
}

/// The state names that end a task, in either wire flavor.
pub(crate) fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_CANCELED"
            | "completed"
            | "failed"
            | "rejected"
            | "canceled"
    )
}

fn state_of(task: &Value) -> &str {
    task.pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// One stream event: a whole task.
pub(crate) fn task_event(flavor: Flavor, task: Value) -> Value {
    match flavor {
        Flavor::V10 => json!({"task": task}),
        // 0.3 tasks already carry `kind: task`.
        Flavor::V03 => task,
    }
}

/// One stream event: the task's status changed.
pub(crate) fn status_event(flavor: Flavor, task: &Value) -> Value {
    let mut e = json!({
        "taskId": task["id"],
        "contextId": task["contextId"],
        "status": task["status"],
    });
    match flavor {
        Flavor::V10 => json!({"statusUpdate": e}),
        Flavor::V03 => {
            e["kind"] = json!("status-update");
            e["final"] = json!(is_terminal(state_of(task)));
            e
        }
    }
}

/// One stream event: a whole artifact (never sent in chunks here).
pub(crate) fn artifact_event(flavor: Flavor, task: &Value, artifact: &Value) -> Value {
    let mut e = json!({
        "taskId": task["id"],
        "contextId": task["contextId"],
        "artifact": artifact,
        "append": false,
        "lastChunk": true,
    });
    match flavor {
        Flavor::V10 => json!({"artifactUpdate": e}),
        Flavor::V03 => {
            e["kind"] = json!("artifact-update");
            e
        }
    }
}

/// The events that finish a task: its artifacts, then its final status.
pub(crate) fn final_events(flavor: Flavor, task: &Value) -> Vec<Value> {
    let mut events: Vec<Value> = task
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| artifact_event(flavor, task, a))
        .collect();
    events.push(status_event(flavor, task));
    events
}

/// A subscriber's events for a running task: the task as it is now, then each change until it
/// ends (a watch may skip intermediate states; the last one is always seen).
pub(crate) fn follow(flavor: Flavor, mut rx: watch::Receiver<Value>) -> impl Stream<Item = Value> {
    let (tx, out) = mpsc::unbounded_channel();
    let first = rx.borrow_and_update().clone();
    let _ = tx.send(task_event(flavor, first.clone()));
    if is_terminal(state_of(&first)) {
        return receiver_stream(out);
    }
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let now = rx.borrow_and_update().clone();
            if is_terminal(state_of(&now)) {
                for e in final_events(flavor, &now) {
                    let _ = tx.send(e);
                }
                return;
            }
            if tx.send(status_event(flavor, &now)).is_err() {
                return;
            }
        }
    });
    receiver_stream(out)
}

pub(crate) fn receiver_stream(rx: mpsc::UnboundedReceiver<Value>) -> impl Stream<Item = Value> {
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}

/// The response: each event as `data: {"jsonrpc": "2.0", "id": ..., "result": event}`.
pub(crate) fn sse_response(
    id: Value,
    events: impl Stream<Item = Value> + Send + 'static,
) -> Response {
    let body = events.map(move |result| {
        let envelope = json!({"jsonrpc": "2.0", "id": id, "result": result});
        Ok::<_, std::io::Error>(format!("data: {envelope}\n\n"))
    });
    Response::builder()
        .status(StatusCode::OK)
        .content_type("text/event-stream")
        .header(poem::http::header::CACHE_CONTROL, "no-store")
        .body(Body::from_bytes_stream(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str) -> Value {
        json!({"id": "t1", "contextId": "c1", "status": {"state": state},
               "artifacts": [{"artifactId": "t1-result", "parts": []}]})
    }

    #[tokio::test]
    async fn a_subscriber_sees_the_task_then_each_change_then_the_artifact_and_final_status() {
        let (tx, rx) = watch::channel(task("TASK_STATE_SUBMITTED"));
        let running = Running::default();
        running.insert("t1", rx);
        let mut events = Box::pin(follow(Flavor::V10, running.get("t1").unwrap()));
        assert_eq!(
            events.next().await.unwrap()["task"]["status"]["state"],
            "TASK_STATE_SUBMITTED"
        );
        tx.send(task("TASK_STATE_WORKING")).unwrap();
        assert_eq!(
            events.next().await.unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
        tx.send(task("TASK_STATE_COMPLETED")).unwrap();
        let artifact = events.next().await.unwrap();
        assert_eq!(
            artifact["artifactUpdate"]["artifact"]["artifactId"],
            "t1-result"
        );
        assert_eq!(artifact["artifactUpdate"]["lastChunk"], true);
        assert_eq!(
            events.next().await.unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        assert!(
            events.next().await.is_none(),
            "the stream ends after the final status"
        );
    }

    #[tokio::test]
    async fn a_finished_task_is_replayed_once_and_ends() {
        let (_tx, rx) = watch::channel(task("completed"));
        let events: Vec<Value> = follow(Flavor::V03, rx).collect().await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["status"]["state"], "completed");
    }

    #[tokio::test]
    async fn a_stream_ends_when_its_task_goes_away_unfinished() {
        let (tx, rx) = watch::channel(task("TASK_STATE_WORKING"));
        let mut events = Box::pin(follow(Flavor::V10, rx));
        assert!(events.next().await.is_some());
        drop(tx);
        assert!(events.next().await.is_none());
    }

    #[test]
    fn v03_status_events_say_whether_they_are_final() {
        assert_eq!(status_event(Flavor::V03, &task("working"))["final"], false);
        let done = status_event(Flavor::V03, &task("failed"));
        assert_eq!(done["final"], true);
        assert_eq!(done["kind"], "status-update");
    }
}

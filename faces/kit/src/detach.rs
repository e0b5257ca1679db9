//! Work a face runs apart from its request. hyper drops a handler whose client resets the
//! connection; an execution dropped between its begin and its settlement would be refunded
//! later as interrupted, whatever the site had done. Run here, it goes on to its end.

use std::future::Future;

use tracing::Instrument;

use crate::context::AppContext;

/// Runs `work` in a task of its own, in the request's span, and answers its result. It is
/// counted among the running executions from now, so a stopping process waits for it (within
/// its grace) even before it reaches the action service.
pub async fn detached<T: Send + 'static>(
    ctx: &AppContext,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let running = ctx.services.actions.running();
    let work = async move {
        let _running = running;
        work.await
    };
    tokio::spawn(work.in_current_span()).await
}

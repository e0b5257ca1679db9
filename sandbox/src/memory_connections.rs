//! In-memory target-site connections under the store's one lock: each state change is a
//! compare-and-set on the stored state.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use svc_ports::{
    AccountId, ConnectionFinish, ConnectionId, ConnectionRecord, ConnectionState, ProviderId,
    SealedSecret,
    store::{ConnectionError, ConnectionStore, StoreError},
};

use crate::MemoryStore;

#[derive(Default)]
pub(crate) struct ConnectionsState {
    pub(crate) connections: Vec<ConnectionRecord>,
}

fn find<'a>(
    all: &'a mut [ConnectionRecord],
    id: &ConnectionId,
) -> Result<&'a mut ConnectionRecord, ConnectionError> {
    all.iter_mut()
        .find(|c| &c.id == id)
        .ok_or(ConnectionError::NotFound)
}

#[async_trait]
impl ConnectionStore for MemoryStore {
    async fn insert_connection(
        &self,
        connection: &ConnectionRecord,
    ) -> Result<(), ConnectionError> {
        let mut s = self.lock();
        if !s.accounts.contains_key(&connection.account_id) {
            return Err(ConnectionError::UnknownAccount);
        }
        if s.connections
            .connections
            .iter()
            .any(|c| c.id == connection.id || c.oauth_state_hash == connection.oauth_state_hash)
        {
            return Err(ConnectionError::Duplicate);
        }
        s.connections.connections.push(connection.clone());
        Ok(())
    }

    async fn connection(&self, id: &ConnectionId) -> Result<Option<ConnectionRecord>, StoreError> {
        let s = self.lock();
        Ok(s.connections
            .connections
            .iter()
            .find(|c| &c.id == id)
            .cloned())
    }

    async fn connection_by_state_hash(
        &self,
        state_hash: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        let s = self.lock();
        Ok(s.connections
            .connections
            .iter()
            .find(|c| c.oauth_state_hash == state_hash)
            .cloned())
    }

    async fn latest_connection(
        &self,
        account: &AccountId,
        provider: &ProviderId,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        let s = self.lock();
        Ok(s.connections
            .connections
            .iter()
            .filter(|c| &c.account_id == account && &c.provider == provider)
            .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    async fn latest_connection_in(
        &self,
        account: &AccountId,
        provider: &ProviderId,
        state: ConnectionState,
    ) -> Result<Option<ConnectionRecord>, StoreError> {
        let s = self.lock();
        Ok(s.connections
            .connections
            .iter()
            .filter(|c| &c.account_id == account && &c.provider == provider && c.state == state)
            .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    async fn finish_connection(
        &self,
        id: &ConnectionId,
        finish: ConnectionFinish,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        let mut s = self.lock();
        let c = find(&mut s.connections.connections, id)?;
        if c.state != ConnectionState::Pending {
            return Err(ConnectionError::NotPending(Box::new(c.clone())));
        }
        *c = finish.apply(c, at);
        Ok(c.clone())
    }

    async fn refresh_credentials(
        &self,
        id: &ConnectionId,
        credentials: SealedSecret,
        credentials_expire_at: Option<DateTime<Utc>>,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        let mut s = self.lock();
        let c = find(&mut s.connections.connections, id)?;
        if c.state != ConnectionState::Connected {
            return Err(ConnectionError::NotConnected(Box::new(c.clone())));
        }
        c.credentials = Some(credentials);
        c.credentials_expire_at = credentials_expire_at;
        c.updated_at = at;
        Ok(c.clone())
    }

    async fn expire_connection(
        &self,
        id: &ConnectionId,
        at: DateTime<Utc>,
    ) -> Result<ConnectionRecord, ConnectionError> {
        let mut s = self.lock();
        let c = find(&mut s.connections.connections, id)?;
        if !c.state.is_final() {
            c.state = ConnectionState::Expired;
            c.credentials = None;
            c.updated_at = at;
        }
        Ok(c.clone())
    }
}

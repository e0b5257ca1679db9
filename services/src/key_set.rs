//! One key set per database: an instance's signing and connection keys are checked against the
//! record of the keys the instances sharing its store use ([`svc_ports::key_set`]), at start.

use svc_ports::{
    Clock, KeyFingerprint, KeyKind, KeySetStore, StoreError,
    key_set::{Admission, admit},
};

/// What the check found (the instance may start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// This instance's key is now the recorded one (the store's first start).
    Recorded,
    /// This instance's key is recorded.
    Known,
    /// This instance's key joined the record: a rotation from a retired key.
    Rotated,
}

#[derive(Debug, thiserror::Error)]
pub enum KeySetError {
    /// Neither the current key nor any retired key of the instance is recorded.
    #[error("the {} key is not one the store's instances use", .kind.as_str())]
    Mismatch {
        kind: KeyKind,
        current: KeyFingerprint,
        recorded: Vec<KeyFingerprint>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks (and records, when it is the first or a rotation) the instance's `current` key of
/// `kind`, with its `retired` keys, against the store's record.
pub async fn check_key(
    store: &dyn KeySetStore,
    clock: &dyn Clock,
    kind: KeyKind,
    current: &KeyFingerprint,
    retired: &[KeyFingerprint],
) -> Result<KeyCheck, KeySetError> {
    let mut recorded = store.recorded_keys(kind).await?;
    // Twice at most: a first start that loses the race is judged again on the winner's record.
    for _ in 0..2 {
        match admit(&recorded, current, retired) {
            Admission::Known => return Ok(KeyCheck::Known),
            Admission::First => {
                recorded = store.record_first_key(kind, current, clock.now()).await?;
                if recorded.first() == Some(current) {
                    return Ok(KeyCheck::Recorded);
                }
            }
            Admission::Rotation => {
                store.record_rotated_key(kind, current, clock.now()).await?;
                return Ok(KeyCheck::Rotated);
            }
            Admission::Refused => break,
        }
    }
    Err(KeySetError::Mismatch {
        kind,
        current: current.clone(),
        recorded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use svc_ports::system::ManualClock;

    fn fp(s: &str) -> KeyFingerprint {
        KeyFingerprint::parse(&format!("{s:0<16}")).unwrap()
    }

    /// A record that another instance fills with `winner` just before this one's first insert.
    struct LostRace {
        winner: KeyFingerprint,
    }

    #[async_trait::async_trait]
    impl KeySetStore for LostRace {
        async fn recorded_keys(&self, _: KeyKind) -> Result<Vec<KeyFingerprint>, StoreError> {
            Ok(Vec::new())
        }
        async fn record_first_key(
            &self,
            _: KeyKind,
            _: &KeyFingerprint,
            _: chrono::DateTime<chrono::Utc>,
        ) -> Result<Vec<KeyFingerprint>, StoreError> {
            Ok(vec![self.winner.clone()])
        }
        async fn record_rotated_key(
            &self,
            _: KeyKind,
            key: &KeyFingerprint,
            _: chrono::DateTime<chrono::Utc>,
        ) -> Result<Vec<KeyFingerprint>, StoreError> {
            Ok(vec![self.winner.clone(), key.clone()])
        }
    }

    #[tokio::test]
    async fn a_first_start_that_loses_the_race_is_judged_on_the_winners_record() {
        let clock = ManualClock::at(chrono::Utc::now());
        let store = LostRace { winner: fp("a") };
        let lost = check_key(&store, &clock, KeyKind::Signing, &fp("b"), &[]).await;
        assert!(
            matches!(lost, Err(KeySetError::Mismatch { ref recorded, .. }) if recorded == &[fp("a")])
        );
        // The winner itself is told its key is the recorded one.
        let same = check_key(&store, &clock, KeyKind::Signing, &fp("a"), &[]).await;
        assert_eq!(same.unwrap(), KeyCheck::Recorded);
        let rotating = check_key(&store, &clock, KeyKind::Signing, &fp("b"), &[fp("a")]).await;
        assert_eq!(rotating.unwrap(), KeyCheck::Rotated);
    }
}

//! Sealing every stored secret again the current way: by the active connection key, bound to
//! its record (`svc reseal`). Run after a key rotation, so the retired key can be dropped, and
//! after an upgrade from unbound seals, so every value is bound to its record. Instances may
//! serve meanwhile: a value is replaced only while it is unchanged, so a grant refreshed
//! meanwhile (already current) is kept.

use anyhow::Context;
use svc_ports::{SealedField, SealedSecret, SecretSealer, store::SealedStore};

/// Values read per page.
pub const PAGE: u32 = 200;

/// Unopenable ids a report names (past it, only their count).
pub const MAX_NAMED: usize = 20;

/// What resealing (or checking) one field found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldReport {
    pub field: SealedField,
    /// Values read.
    pub examined: u64,
    /// Already sealed the current way.
    pub current: u64,
    /// Sealed again (or, when checking, that would be).
    pub stale: u64,
    /// Replaced by their record's writer between the read and the write (a refresh, an expiry):
    /// left to it.
    pub changed_meanwhile: u64,
    /// Neither the active nor any retired key opens them for their record: left as they are.
    pub unopenable: u64,
    /// The first [`MAX_NAMED`] unopenable values' record ids.
    pub unopenable_ids: Vec<String>,
}

impl FieldReport {
    fn new(field: SealedField) -> Self {
        Self {
            field,
            examined: 0,
            current: 0,
            stale: 0,
            changed_meanwhile: 0,
            unopenable: 0,
            unopenable_ids: Vec::new(),
        }
    }
}

/// Whether to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Seal stale values again.
    Reseal,
    /// Only count them (nothing is written).
    Check,
}

/// What a run did, field by field, up to where it stopped.
#[derive(Debug)]
pub struct Resealed {
    /// The fields gone through, the last one partly when the run stopped.
    pub reports: Vec<FieldReport>,
    /// The store failure that stopped the run (what was resealed before it stays resealed; a
    /// run again goes on from there, as every value already current is left alone).
    pub stopped: Option<anyhow::Error>,
}

/// Reads every sealed value of every field, page by page, and (in [`Mode::Reseal`]) seals
/// those not sealed the current way again. One value that does not open never stops the rest;
/// a store failure stops the run, with what was done so far.
pub async fn reseal_all(
    store: &dyn SealedStore,
    sealer: &dyn SecretSealer,
    mode: Mode,
) -> Resealed {
    let mut reports = Vec::new();
    for field in SealedField::ALL {
        let mut report = FieldReport::new(field);
        let done = reseal_field(store, sealer, mode, &mut report).await;
        reports.push(report);
        if let Err(e) = done {
            return Resealed {
                reports,
                stopped: Some(e),
            };
        }
    }
    Resealed {
        reports,
        stopped: None,
    }
}

async fn reseal_field(
    store: &dyn SealedStore,
    sealer: &dyn SecretSealer,
    mode: Mode,
    report: &mut FieldReport,
) -> anyhow::Result<()> {
    let field = report.field;
    let mut after = None;
    loop {
        let page = store
            .sealed_values(field, after.clone(), PAGE)
            .await
            .with_context(|| format!("reading {}", field.as_str()))?;
        let Some((last, _)) = page.last() else {
            break;
        };
        after = Some(last.clone());
        for (id, sealed) in &page {
            report.examined += 1;
            reseal_one(store, sealer, id, sealed, mode, report).await?;
        }
        if page.len() < PAGE as usize {
            break;
        }
    }
    Ok(())
}

async fn reseal_one(
    store: &dyn SealedStore,
    sealer: &dyn SecretSealer,
    id: &str,
    sealed: &SealedSecret,
    mode: Mode,
    report: &mut FieldReport,
) -> anyhow::Result<()> {
    let field = report.field;
    match sealer.reseal(sealed, &field.context(id)) {
        Ok(None) => report.current += 1,
        Ok(Some(_)) if mode == Mode::Check => report.stale += 1,
        Ok(Some(again)) => {
            let replaced = store
                .replace_sealed(field, id, sealed, &again)
                .await
                .with_context(|| format!("writing {} of {id}", field.as_str()))?;
            if replaced {
                report.stale += 1;
            } else {
                report.changed_meanwhile += 1;
            }
        }
        Err(e) => {
            tracing::warn!(field = field.as_str(), id, error = %e, "a sealed value does not open");
            report.unopenable += 1;
            if report.unopenable_ids.len() < MAX_NAMED {
                report.unopenable_ids.push(id.to_owned());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, sync::Mutex};

    use svc_ports::{SealError, store::StoreError};

    use super::*;

    /// `cur|{context}|{secret}` is current; `old|{secret}` opens under any context; anything
    /// else does not open.
    struct Sealer;

    impl SecretSealer for Sealer {
        fn seal(&self, plaintext: &[u8], context: &str) -> SealedSecret {
            let mut out = format!("cur|{context}|").into_bytes();
            out.extend_from_slice(plaintext);
            SealedSecret::new(out)
        }
        fn open(&self, sealed: &SealedSecret, context: &str) -> Result<Vec<u8>, SealError> {
            let text = String::from_utf8_lossy(sealed.as_bytes()).into_owned();
            if let Some(rest) = text.strip_prefix(&format!("cur|{context}|")) {
                return Ok(rest.as_bytes().to_vec());
            }
            match text.strip_prefix("old|") {
                Some(rest) => Ok(rest.as_bytes().to_vec()),
                None => Err(SealError("does not open".into())),
            }
        }
        fn reseal(
            &self,
            sealed: &SealedSecret,
            context: &str,
        ) -> Result<Option<SealedSecret>, SealError> {
            let plaintext = self.open(sealed, context)?;
            Ok(sealed
                .as_bytes()
                .starts_with(b"old|")
                .then(|| self.seal(&plaintext, context)))
        }
    }

    /// Values by field and id; `rewrite` is what a writer stores between a read and the
    /// reseal's write (a refresh).
    #[derive(Default)]
    struct Store {
        values: Mutex<BTreeMap<(u8, String), SealedSecret>>,
        rewrite: Mutex<Option<(String, SealedSecret)>>,
        pages: Mutex<u32>,
        /// The page read that fails (the store went away).
        fail_on_page: Option<u32>,
    }

    fn key(field: SealedField) -> u8 {
        field as u8
    }

    #[async_trait::async_trait]
    impl SealedStore for Store {
        async fn sealed_values(
            &self,
            field: SealedField,
            after: Option<String>,
            limit: u32,
        ) -> Result<Vec<(String, SealedSecret)>, StoreError> {
            let mut pages = self.pages.lock().unwrap();
            *pages += 1;
            if self.fail_on_page == Some(*pages) {
                return Err(StoreError(anyhow::anyhow!("the store went away")));
            }
            drop(pages);
            let values = self.values.lock().unwrap();
            let page = values
                .iter()
                .filter(|((f, id), _)| *f == key(field) && after.as_ref().is_none_or(|a| id > a))
                .take(limit as usize)
                .map(|((_, id), v)| (id.clone(), v.clone()))
                .collect();
            drop(values);
            if let Some((id, v)) = self.rewrite.lock().unwrap().take() {
                self.values.lock().unwrap().insert((key(field), id), v);
            }
            Ok(page)
        }
        async fn replace_sealed(
            &self,
            field: SealedField,
            id: &str,
            old: &SealedSecret,
            new: &SealedSecret,
        ) -> Result<bool, StoreError> {
            let mut values = self.values.lock().unwrap();
            match values.get_mut(&(key(field), id.to_owned())) {
                Some(v) if v == old => {
                    *v = new.clone();
                    Ok(true)
                }
                _ => Ok(false),
            }
        }
    }

    fn put(store: &Store, field: SealedField, id: &str, bytes: &str) {
        store.values.lock().unwrap().insert(
            (key(field), id.to_owned()),
            SealedSecret::new(bytes.as_bytes().to_vec()),
        );
    }

    fn get(store: &Store, field: SealedField, id: &str) -> String {
        let values = store.values.lock().unwrap();
        String::from_utf8(values[&(key(field), id.to_owned())].as_bytes().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn stale_values_are_sealed_again_for_their_record_and_the_rest_left_alone() {
        let store = Store::default();
        let creds = SealedField::ConnectionCredentials;
        let hook = SealedField::WebhookSecret;
        // More than a page, so paging is crossed.
        for n in 0..(PAGE + 50) {
            put(
                &store,
                creds,
                &format!("con_{n:04}"),
                &format!("old|grant-{n}"),
            );
        }
        put(
            &store,
            hook,
            "whe_1",
            "cur|webhook_endpoint:whe_1:secret|s1",
        );
        put(&store, hook, "whe_2", "old|s2");
        put(&store, hook, "whe_3", "garbage");
        put(
            &store,
            hook,
            "whe_4",
            "cur|webhook_endpoint:whe_OTHER:secret|copied",
        );

        let check = reseal_all(&store, &Sealer, Mode::Check).await.reports;
        assert_eq!(check[0].stale, u64::from(PAGE + 50));
        assert_eq!(
            get(&store, creds, "con_0007"),
            "old|grant-7",
            "a check writes nothing"
        );

        let reports = reseal_all(&store, &Sealer, Mode::Reseal).await.reports;
        let fields: Vec<_> = reports.iter().map(|r| r.field).collect();
        assert_eq!(fields, SealedField::ALL.to_vec());
        assert_eq!(reports[0].examined, u64::from(PAGE + 50));
        assert_eq!(reports[0].stale, u64::from(PAGE + 50));
        assert_eq!(
            get(&store, creds, "con_0207"),
            "cur|connection:con_0207:credentials|grant-207"
        );
        let hooks = &reports[2];
        assert_eq!((hooks.examined, hooks.current, hooks.stale), (4, 1, 1));
        assert_eq!(hooks.unopenable, 2);
        assert_eq!(hooks.unopenable_ids, vec!["whe_3", "whe_4"]);
        assert_eq!(
            get(&store, hook, "whe_2"),
            "cur|webhook_endpoint:whe_2:secret|s2"
        );
        assert_eq!(get(&store, hook, "whe_3"), "garbage", "left as it is");

        // Run again: everything that opens is current now.
        let again = reseal_all(&store, &Sealer, Mode::Reseal).await.reports;
        assert_eq!(again[0].current, u64::from(PAGE + 50));
        assert_eq!(again.iter().map(|r| r.stale).sum::<u64>(), 0);
    }

    #[tokio::test]
    async fn a_value_rewritten_meanwhile_is_left_to_its_writer() {
        let store = Store::default();
        let creds = SealedField::ConnectionCredentials;
        put(&store, creds, "con_1", "old|grant");
        let refreshed = "cur|connection:con_1:credentials|refreshed";
        *store.rewrite.lock().unwrap() = Some((
            "con_1".into(),
            SealedSecret::new(refreshed.as_bytes().to_vec()),
        ));
        let reports = reseal_all(&store, &Sealer, Mode::Reseal).await.reports;
        assert_eq!((reports[0].stale, reports[0].changed_meanwhile), (0, 1));
        assert_eq!(get(&store, creds, "con_1"), refreshed);
    }

    #[tokio::test]
    async fn a_store_failure_stops_the_run_with_what_was_done() {
        let store = Store {
            fail_on_page: Some(2),
            ..Store::default()
        };
        let creds = SealedField::ConnectionCredentials;
        for n in 0..(PAGE + 1) {
            put(
                &store,
                creds,
                &format!("con_{n:04}"),
                &format!("old|grant-{n}"),
            );
        }
        let run = reseal_all(&store, &Sealer, Mode::Reseal).await;
        assert!(run.stopped.is_some());
        assert_eq!(run.reports.len(), 1, "no field after the failure");
        assert_eq!(
            (run.reports[0].examined, run.reports[0].stale),
            (u64::from(PAGE), u64::from(PAGE)),
            "the first page, resealed, is reported"
        );
        assert_eq!(
            get(&store, creds, "con_0000"),
            "cur|connection:con_0000:credentials|grant-0"
        );
        assert_eq!(
            get(&store, creds, &format!("con_{PAGE:04}")),
            format!("old|grant-{PAGE}")
        );
    }

    #[tokio::test]
    async fn an_empty_store_reads_one_page_per_field() {
        let store = Store::default();
        let reports = reseal_all(&store, &Sealer, Mode::Reseal).await.reports;
        assert!(reports.iter().all(|r| r.examined == 0));
        assert_eq!(*store.pages.lock().unwrap(), 3);
    }
}

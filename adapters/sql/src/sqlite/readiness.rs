//! `ScanStore`: readiness scan reports, each one row with the whole report as JSON.

use async_trait::async_trait;
use svc_ports::{
    ScanId, ScanReport,
    store::{ScanStore, StoreError},
};

use super::{SqliteStore, backend, millis};
use crate::rows;

#[async_trait]
impl ScanStore for SqliteStore {
    async fn insert_scan(&self, report: &ScanReport) -> Result<(), StoreError> {
        let json = rows::scan_json(report)?;
        // A taken id fails the primary key: nothing is replaced.
        sqlx::query(
            "INSERT INTO readiness_scans (id, url, score, level, completed_at, report) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(report.scan_id.as_str())
        .bind(&report.url)
        .bind(i64::from(report.score))
        .bind(report.level.as_str())
        .bind(millis(report.completed_at))
        .bind(json)
        .execute(self.writer())
        .await
        .map_err(|e| backend(e, "storing a readiness scan"))?;
        Ok(())
    }

    async fn scan(&self, id: &ScanId) -> Result<Option<ScanReport>, StoreError> {
        let json: Option<String> =
            sqlx::query_scalar("SELECT report FROM readiness_scans WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| backend(e, "reading a readiness scan"))?;
        rows::scan_report(json)
    }
}

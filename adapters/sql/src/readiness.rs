//! `ScanStore` for both dialects: a report is one row, its checks kept as JSON.

macro_rules! impl_sql_readiness {
    ($store:ty) => {
        use svc_ports::{ScanId, ScanReport, store::ScanStore};

        #[async_trait]
        impl ScanStore for $store {
            async fn insert_scan(&self, report: &ScanReport) -> Result<(), StoreError> {
                let err = |e| backend(e, "storing a readiness scan");
                let json = serde_json::to_string(report)
                    .map_err(|e| StoreError(anyhow::Error::new(e).context("encoding a scan")))?;
                let mut tx = self.begin_write().await.map_err(err)?;
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
                .execute(&mut *tx)
                .await
                .map_err(err)?;
                tx.commit().await.map_err(err)?;
                Ok(())
            }

            async fn scan(&self, id: &ScanId) -> Result<Option<ScanReport>, StoreError> {
                let row = sqlx::query("SELECT report FROM readiness_scans WHERE id = $1")
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| backend(e, "reading a readiness scan"))?;
                let Some(row) = row else { return Ok(None) };
                let json: String = row
                    .try_get("report")
                    .map_err(|e| backend(e, "reading a readiness scan"))?;
                serde_json::from_str(&json).map(Some).map_err(|e| {
                    StoreError(anyhow::Error::new(e).context("decoding a stored scan"))
                })
            }
        }
    };
}

pub(crate) use impl_sql_readiness;

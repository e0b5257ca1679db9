//! `GET /api/usage`: spendable balance, effective plan and metering policy.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::context::AppContext;
use kit::problem::ApiProblem;
use kit::wire::usage::*;
use poem_openapi::{ApiResponse, OpenApi, payload::Json};

#[derive(ApiResponse)]
pub enum UsageResponse {
    /// The usage record of the calling key's account.
    #[oai(status = 200)]
    Ok(Json<Usage>),
}

pub struct UsageApi {
    pub ctx: AppContext,
}

#[OpenApi(tag = "Tags::Usage")]
impl UsageApi {
    /// Usage record: spendable credits, effective plan and metering policy.
    #[oai(path = "/api/usage", method = "get", operation_id = "getUsage")]
    async fn usage(&self, auth: ApiKeyAuth) -> Result<UsageResponse, ApiProblem> {
        let principal = auth.0;
        let record = self
            .ctx
            .services
            .usage
            .usage(&principal)
            .await
            .map_err(ApiProblem::internal)?;
        let key = CallingKey {
            prefix: principal.key.prefix.to_string(),
            scopes: principal
                .key
                .scopes
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect(),
        };
        Ok(UsageResponse::Ok(Json(Usage::from_record(record, key))))
    }
}

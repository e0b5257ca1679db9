//! `GET` and `POST /api/read`: a public page as clean Markdown and text, with its links, forms
//! and metadata, or a typed `blocked` outcome. The wire types here are also the JSON of the
//! MCP tool `read_page` and of `svc read --format json`.

use crate::Tags;
use crate::auth::ApiKeyAuth;
use kit::JsonBody;
use kit::context::AppContext;
use kit::problem::{ApiProblem, Problem};
use kit::{errors::read_problem, wire::read::*};
use poem_openapi::{ApiResponse, OpenApi, param::Query, payload::Json};
use svc_services::ReadError;
use svc_services::read::MAX_SELECTOR_LENGTH;

#[allow(clippy::large_enum_variant)]
#[derive(ApiResponse)]
pub enum ReadResponse {
    /// The page, or why it could not be read (`outcome: blocked`: robots.txt, captcha, sign-in
    /// wall, 4xx/5xx answer, unsupported content).
    #[oai(status = 200)]
    Ok(Json<ReadResult>),
    /// The target site did not answer in time, refused the connection or broke off
    /// (`upstream_unreachable`, retryable).
    #[oai(status = 502, content_type = "application/problem+json")]
    Unreachable(Json<Problem>),
}

#[derive(ApiResponse)]
pub enum ReadBatchResponse {
    /// One answer per URL, in their order: a page, `blocked`, or `error` (refused, unreachable).
    #[oai(status = 200)]
    Ok(Json<ReadBatchResult>),
}

pub struct ReadApi {
    pub ctx: AppContext,
}

impl ReadApi {
    async fn run(&self, auth: ApiKeyAuth, body: ReadBody) -> Result<ReadResponse, ApiProblem> {
        match self
            .ctx
            .services
            .read
            .read_for(&auth.0, &body.into_request())
            .await
        {
            Ok(outcome) => Ok(ReadResponse::Ok(Json(outcome.into()))),
            Err(e @ ReadError::Unreachable(_)) => {
                Ok(ReadResponse::Unreachable(Json(read_problem(e).body())))
            }
            Err(e) => Err(read_problem(e)),
        }
    }
}

#[OpenApi(tag = "Tags::Read")]
impl ReadApi {
    /// Read a public page (query parameters).
    ///
    /// Fetches the URL through the guarded client (public addresses only, robots.txt honoured)
    /// or answers from a copy no older than `max_age`, and returns the main content as Markdown
    /// and text with the page's links, forms and metadata. Captcha pages, sign-in walls,
    /// robots refusals and 4xx/5xx answers come back as `outcome: blocked` with the reason.
    /// A single-page app whose HTML is only a script shell is run in a headless browser first
    /// (`render`, default `auto`; every request it makes goes through the same guarded client;
    /// `rendered: true` in the answer); 503 `unavailable` when a page must be rendered and no
    /// browser tab is free.
    #[oai(path = "/api/read", method = "get", operation_id = "readPage")]
    #[allow(clippy::too_many_arguments)]
    async fn read_get(
        &self,
        auth: ApiKeyAuth,
        /// Absolute `http` or `https` URL of a public page.
        #[oai(validator(min_length = 1, max_length = 2048))]
        url: Query<String>,
        format: Query<Option<ReadFormat>>,
        /// Keep only the main content (default true).
        main_content_only: Query<Option<bool>>,
        /// CSS selector whose matches are the content (repeatable, 256 characters at most).
        #[oai(validator(max_items = 20))]
        include_selectors: Query<Option<Vec<String>>>,
        /// CSS selector whose matches are removed first (repeatable, 256 characters at most).
        #[oai(validator(max_items = 20))]
        exclude_selectors: Query<Option<Vec<String>>>,
        /// Oldest cached copy acceptable, in seconds (default 600); 0 always fetches.
        #[oai(validator(minimum(value = "0"), maximum(value = "604800")))]
        max_age: Query<Option<f64>>,
        /// Run the page in a headless browser first: `auto` (default) only when its HTML is a
        /// script shell, `never`, or `always`.
        render: Query<Option<RenderOption>>,
    ) -> Result<ReadResponse, ApiProblem> {
        // The JSON body's schema holds each selector to 256 characters (400); a query
        // parameter's list cannot say so, so the same answer is given here.
        for (name, list) in [
            ("include_selectors", &include_selectors.0),
            ("exclude_selectors", &exclude_selectors.0),
        ] {
            if list
                .iter()
                .flatten()
                .any(|s| s.chars().count() > MAX_SELECTOR_LENGTH)
            {
                return Err(ApiProblem::new(
                    svc_ports::FailureClass::MalformedRequest,
                    format!("`{name}`: each selector is at most {MAX_SELECTOR_LENGTH} characters"),
                ));
            }
        }
        let body = ReadBody {
            url: url.0,
            format: format.0,
            main_content_only: main_content_only.0,
            include_selectors: include_selectors.0,
            exclude_selectors: exclude_selectors.0,
            max_age: max_age.0,
            render: render.0,
        };
        self.run(auth, body).await
    }

    /// Read a public page (JSON body).
    ///
    /// The same as `GET /api/read`, with the options in a JSON body.
    #[oai(path = "/api/read", method = "post", operation_id = "readPagePost")]
    async fn read_post(
        &self,
        auth: ApiKeyAuth,
        body: JsonBody<ReadBody>,
    ) -> Result<ReadResponse, ApiProblem> {
        self.run(auth, body.0).await
    }

    /// Read up to 20 public pages at once
    ///
    /// Each URL is read as `POST /api/read` would read it (cache, guarded client, robots.txt)
    /// and counts as one request against the key's rate limit; the answers come in the order
    /// of `urls`, each a page, a `blocked` outcome, or an `error` with the problem a single read
    /// would have had (one bad URL takes no other with it). A URL given twice is read once.
    /// Four are read at a time, and the batch answers within 45 s: a read still running then
    /// is an `error` (`upstream_unreachable`, to retry), the pages read are kept. More
    /// URLs than the key's rate limit allows at once is 422 `invalid_request` (never 429: no
    /// wait would let it through).
    #[oai(path = "/api/read/batch", method = "post", operation_id = "readPages")]
    async fn read_batch(
        &self,
        req: &poem::Request,
        auth: ApiKeyAuth,
        body: JsonBody<ReadBatchBody>,
    ) -> Result<ReadBatchResponse, ApiProblem> {
        let urls = body.urls.clone();
        // A batch refused whole spends only the one count the key's limit already took; an
        // accepted one counts its other URLs too.
        let batch = self
            .ctx
            .services
            .read
            .check_many_for(&auth.0, body.0.into_requests())
            .map_err(read_problem)?;
        if let Some(edge) = req.data::<kit::edge::Edge>() {
            edge.limits
                .check_key_n(&auth.0.key.id, urls.len().saturating_sub(1))?;
        }
        let answers = batch.read().await;
        Ok(ReadBatchResponse::Ok(Json(ReadBatchResult::of(
            &urls, answers,
        ))))
    }
}

//! `read_page`: a public page as clean content, the same JSON as `/api/read`.

use kit::{
    errors::read_problem,
    wire::read::{ReadBatchBody, ReadBatchResult, ReadBody, ReadFormat, ReadResult, RenderOption},
};
use rmcp::{
    ErrorData as McpError,
    handler::server::{tool::Extension, wrapper::Parameters},
    model::CallToolResult,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{principal, tool_error, wire, wire_answer};
use crate::SvcMcp;

/// The main content's format.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Text,
    /// Adds the content's cleaned HTML.
    Html,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPageArgs {
    /// Absolute http or https URL of a public page.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Main content format; html adds the cleaned HTML. Default markdown.
    pub format: Option<Format>,
    /// Keep only the main content (default true); false keeps the whole body.
    pub main_content_only: Option<bool>,
    /// CSS selectors whose matches are the content.
    #[schemars(length(max = 20), inner(length(max = 256)))]
    pub include_selectors: Option<Vec<String>>,
    /// CSS selectors whose matches are removed first.
    #[schemars(length(max = 20), inner(length(max = 256)))]
    pub exclude_selectors: Option<Vec<String>>,
    /// Oldest cached copy acceptable, in seconds (default 600); 0 always fetches.
    #[schemars(range(max = 604800))]
    pub max_age: Option<u32>,
    /// Run the page in a headless browser first: auto (default) only when its HTML is a script
    /// shell, never, or always.
    pub render: Option<Render>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPagesArgs {
    /// 1 to 20 absolute http or https URLs of public pages; answered in this order.
    #[schemars(length(min = 1, max = 20), inner(length(min = 1, max = 2048)))]
    pub urls: Vec<String>,
    /// Main content format; html adds the cleaned HTML. Default markdown.
    pub format: Option<Format>,
    /// Keep only the main content (default true); false keeps the whole body.
    pub main_content_only: Option<bool>,
    /// Oldest cached copy acceptable, in seconds (default 600); 0 always fetches.
    #[schemars(range(max = 604800))]
    pub max_age: Option<u32>,
    /// Run the page in a headless browser first: auto (default) only when its HTML is a script
    /// shell, never, or always.
    pub render: Option<Render>,
}

/// Whether the page runs in a headless browser first.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Render {
    /// Only when the HTML is a script shell (a single-page app).
    Auto,
    /// Read the HTML as fetched.
    Never,
    /// Run every HTML page.
    Always,
}

fn render_option(r: Render) -> RenderOption {
    match r {
        Render::Auto => RenderOption::Auto,
        Render::Never => RenderOption::Never,
        Render::Always => RenderOption::Always,
    }
}

fn read_format(f: Format) -> ReadFormat {
    match f {
        Format::Markdown => ReadFormat::Markdown,
        Format::Text => ReadFormat::Text,
        Format::Html => ReadFormat::Html,
    }
}

#[tool_router(router = read_router, vis = "pub(crate)")]
impl SvcMcp {
    #[tool(
        name = "read_page",
        title = "Read a web page",
        description = "Reads a public web page and returns its main content as Markdown and plain text, with its \
            links (absolute, same-site or not), forms (action, method, fields with labels) and metadata \
            (description, canonical, language, OpenGraph, JSON-LD, author, published time). Fetched through a \
            guarded client: public http(s) URLs only, robots.txt honoured. A captcha, sign-in wall, robots refusal \
            or 4xx/5xx answer comes back as outcome `blocked` with a reason, never as page text. A copy up to \
            `max_age` seconds old (default 600) may answer. A single-page app whose HTML is only a script shell is \
            run in a headless browser first (render auto; never or always to choose), its requests through the \
            same guard; `rendered` says so. Needs an API key with the read scope.",
        output_schema = wire::<ReadResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn read_page(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<ReadPageArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let body = ReadBody {
            url: args.url,
            format: args.format.map(read_format),
            main_content_only: args.main_content_only,
            include_selectors: args.include_selectors,
            exclude_selectors: args.exclude_selectors,
            max_age: args.max_age.map(f64::from),
            render: args.render.map(render_option),
        };
        Ok(
            match self
                .ctx
                .services
                .read
                .read_for(&principal, &body.into_request())
                .await
            {
                Ok(outcome) => wire_answer(&ReadResult::from(outcome)),
                Err(e) => tool_error(&read_problem(e)),
            },
        )
    }

    #[tool(
        name = "read_pages",
        title = "Read several web pages",
        description = "Reads 1 to 20 public web pages at once, each exactly as read_page would (guarded client, \
            robots.txt honoured, a copy up to max_age seconds old may answer), and returns one answer per URL in \
            their order: a page, outcome blocked with a reason, or outcome error with the problem a single read \
            would have had; one bad URL takes no other with it. Answers within 45 seconds: a page still being read \
            then is an error to retry. Each URL counts as one request against the key's rate limit. Needs an API \
            key with the read scope.",
        output_schema = wire::<ReadBatchResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn read_pages(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(args): Parameters<ReadPagesArgs>,
    ) -> Result<CallToolResult, McpError> {
        let principal = principal!(&self.ctx, parts);
        let body = ReadBatchBody {
            urls: args.urls.clone(),
            format: args.format.map(read_format),
            main_content_only: args.main_content_only,
            include_selectors: None,
            exclude_selectors: None,
            max_age: args.max_age.map(f64::from),
            render: args.render.map(render_option),
        };
        // As the REST batch: a batch refused whole counts once against the key's limit.
        let batch = match self
            .ctx
            .services
            .read
            .check_many_for(&principal, body.into_requests())
        {
            Ok(batch) => batch,
            Err(e) => return Ok(tool_error(&read_problem(e))),
        };
        if let Some(limits) = parts.extensions.get::<kit::limits::RateLimits>()
            && let Err(problem) =
                limits.check_key_n(&principal.key.id, args.urls.len().saturating_sub(1))
        {
            return Ok(tool_error(&problem));
        }
        Ok(wire_answer(&ReadBatchResult::of(
            &args.urls,
            batch.read().await,
        )))
    }
}

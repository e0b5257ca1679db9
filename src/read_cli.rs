//! `svc read`: one page (a URL or a saved file) printed as Markdown, text, HTML or JSON; or many
//! saved pages (`--file A --file B ...`, `--dir DIR`) read in one process on every core, one JSON
//! line per page in the order given, each the JSON `/api/read` answers.

use std::path::{Path, PathBuf};

use anyhow::Context;
use futures_util::StreamExt;
use serde_json::json;
use svc::{
    kit::wire::read::{ReadBody, ReadFormat, ReadResult, RenderOption},
    services::{ReadOutcome, ReadRequest, Services, read::ContentFormat},
    startup::{self, Stores},
};
use svc_ports::Environment;

#[derive(clap::Args)]
pub struct ReadArgs {
    /// Public http(s) URL to read (omit with --file or --dir).
    #[arg(required_unless_present_any = ["file", "dir"], conflicts_with_all = ["file", "dir"])]
    url: Option<String>,
    /// A saved HTML page or PDF to extract offline; repeat it to read many in one run.
    #[arg(long)]
    file: Vec<PathBuf>,
    /// Every `.html`/`.htm`/`.pdf` file under this folder (sorted by path), read in one run.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The URL the saved page came from (its links resolve against it). Required for one
    /// --file; for many, it applies to all, and without it each file's own `file://` URL.
    #[arg(long)]
    base_url: Option<String>,
    /// Output for one page; many pages are always JSON lines (their content in this format,
    /// Markdown for `json`).
    #[arg(long, value_enum, default_value = "markdown")]
    format: ReadOutput,
    /// Keep the whole body instead of only the main content.
    #[arg(long)]
    whole_page: bool,
    /// CSS selector whose matches are the content (repeatable).
    #[arg(long = "include")]
    include: Vec<String>,
    /// CSS selector whose matches are removed first (repeatable).
    #[arg(long = "exclude")]
    exclude: Vec<String>,
    /// Run the page in headless Chromium first: `auto` only when its HTML is a script shell,
    /// `never`, or `always` (a saved page too: its scripts run, every request they make goes
    /// through the guarded fetcher).
    #[arg(long, value_enum, default_value = "auto")]
    render: RenderArg,
    #[command(flatten)]
    browser: svc::config::RenderSettings,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RenderArg {
    Auto,
    Never,
    Always,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ReadOutput {
    Markdown,
    Text,
    Html,
    Json,
}

pub async fn run(args: ReadArgs) -> anyhow::Result<()> {
    args.browser.check()?;
    let world = startup::World {
        render: Some(args.browser.clone()),
        ..startup::World::default()
    };
    let services = startup::offline_services_in(&Stores::memory(), Environment::Live, &world)?;
    let format = match args.format {
        ReadOutput::Text => ReadFormat::Text,
        ReadOutput::Html => ReadFormat::Html,
        ReadOutput::Markdown | ReadOutput::Json => ReadFormat::Markdown,
    };
    let body = ReadBody {
        url: args
            .url
            .clone()
            .or(args.base_url.clone())
            .unwrap_or_default(),
        format: Some(format),
        main_content_only: Some(!args.whole_page),
        include_selectors: Some(args.include.clone()),
        exclude_selectors: Some(args.exclude.clone()),
        max_age: Some(0.0),
        render: Some(match args.render {
            RenderArg::Auto => RenderOption::Auto,
            RenderArg::Never => RenderOption::Never,
            RenderArg::Always => RenderOption::Always,
        }),
    };
    let request = body.into_request();
    let mut files = args.file.clone();
    if let Some(dir) = &args.dir {
        pages_under(dir, &mut files).with_context(|| format!("listing {}", dir.display()))?;
        anyhow::ensure!(
            !files.is_empty(),
            "no .html, .htm or .pdf file under {}",
            dir.display()
        );
    }
    if files.len() > 1 || args.dir.is_some() {
        // A page may wait for the browser: as many at once as it has tabs, if more than cores.
        let at_once = cores().max(match args.render {
            RenderArg::Never => 1,
            RenderArg::Auto | RenderArg::Always => args.browser.render_tabs,
        });
        return many(services, files, args.base_url, request, at_once).await;
    }
    let outcome = match files.first() {
        Some(file) => {
            let base_url = args
                .base_url
                .as_deref()
                .context("--base-url is required with one --file (the URL the page came from)")?;
            let saved = saved_file(file)
                .await
                .with_context(|| format!("reading {}", file.display()))?;
            read_saved(&services, saved, base_url, &request).await?
        }
        None => services.read.read(&request).await?,
    };
    let blocked = matches!(outcome, ReadOutcome::Blocked(_));
    match (args.format, outcome) {
        (ReadOutput::Json, outcome) => {
            let json = ReadResult::from(outcome).to_json_value();
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
        (_, ReadOutcome::Page(page)) => match page.format {
            ContentFormat::Markdown => println!("{}", page.markdown),
            ContentFormat::Text => println!("{}", page.text),
            ContentFormat::Html => println!("{}", page.html.unwrap_or_default()),
        },
        (_, ReadOutcome::Blocked(b)) => {
            eprintln!("blocked ({}): {}", b.reason.as_str(), b.detail);
        }
    }
    if blocked {
        std::process::exit(2);
    }
    Ok(())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Reads `files`, `at_once` at a time, printing one JSON line per file in their order; a file
/// that cannot be read is a line `{"outcome": "error", "file", "detail"}` and makes the exit
/// code 1.
async fn many(
    services: std::sync::Arc<Services>,
    files: Vec<PathBuf>,
    base_url: Option<String>,
    request: ReadRequest,
    at_once: usize,
) -> anyhow::Result<()> {
    // Reading is CPU-bound: one page per core at a time (more threads only switch and hold
    // more memory: about 2% more CPU time over the articles corpus), with room for three times
    // as many more, read and waiting in order, behind a slow page.
    let reading = std::sync::Arc::new(tokio::sync::Semaphore::new(at_once));
    let mut lines = futures_util::stream::iter(files)
        .map(|file| {
            let (services, request, base_url, reading) = (
                services.clone(),
                request.clone(),
                base_url.clone(),
                reading.clone(),
            );
            tokio::spawn(async move {
                let _core = reading.acquire_owned().await;
                read_file(&services, &file, base_url, &request).await
            })
        })
        .buffered(at_once * 4);
    let mut failed = false;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    while let Some(line) = lines.next().await {
        let line = line.unwrap_or_else(|e| json!({"outcome": "error", "detail": e.to_string()}));
        failed |= line["outcome"] == "error";
        serde_json::to_writer(&mut out, &line)?;
        std::io::Write::write_all(&mut out, b"\n")?;
    }
    std::io::Write::flush(&mut out)?;
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

async fn read_file(
    services: &Services,
    file: &Path,
    base_url: Option<String>,
    request: &ReadRequest,
) -> serde_json::Value {
    let error = |detail: String| json!({"outcome": "error", "file": file.display().to_string(), "detail": detail});
    let base_url = match base_url {
        Some(b) => b,
        None => match std::path::absolute(file)
            .ok()
            .and_then(|p| url::Url::from_file_path(p).ok())
        {
            Some(u) => u.to_string(),
            None => return error("no file URL for this path; pass --base-url".into()),
        },
    };
    let saved = match saved_file(file).await {
        Ok(saved) => saved,
        Err(e) => return error(format!("reading it: {e:#}")),
    };
    match read_saved(services, saved, &base_url, request).await {
        Ok(outcome) => ReadResult::from(outcome).to_json_value(),
        Err(e) => error(e.to_string()),
    }
}

/// A saved file's bytes, at most [`startup::MAX_SAVED_PAGE_BYTES`] of them, and whether there
/// were more.
struct Saved {
    bytes: Vec<u8>,
    truncated: bool,
}

/// Reads a saved page as the fetcher reads a body: only a regular file (a pipe or a device
/// named `x.html` would never end, or never start), and no more than a fetched page may be.
/// One blocking read of the whole file into a buffer of its size: tokio's file reads in
/// pieces through the blocking pool, each copied, and grew the buffer as it went (about 8%
/// more CPU and 40% more peak memory over the articles corpus; bench/RESULTS.md).
async fn saved_file(file: &Path) -> anyhow::Result<Saved> {
    let file = file.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        // Looked at before opening: opening a pipe waits for a writer.
        let meta = std::fs::metadata(&file)?;
        anyhow::ensure!(
            meta.file_type().is_file(),
            "not a regular file (a folder, pipe, socket or device)"
        );
        let cap = startup::MAX_SAVED_PAGE_BYTES;
        let size = usize::try_from(meta.len()).unwrap_or(usize::MAX).min(cap);
        // One byte over the cap says whether there was more.
        let mut bytes = Vec::with_capacity(size + 1);
        std::fs::File::open(&file)?
            .take(cap as u64 + 1)
            .read_to_end(&mut bytes)?;
        let truncated = bytes.len() > cap;
        bytes.truncate(cap);
        Ok(Saved { bytes, truncated })
    })
    .await?
}

/// A saved file read as what its bytes are: a PDF, or an HTML page in its declared charset.
async fn read_saved(
    services: &Services,
    saved: Saved,
    base_url: &str,
    request: &ReadRequest,
) -> Result<ReadOutcome, svc::services::read::ReadError> {
    let Saved { bytes, truncated } = saved;
    if svc_ports::is_pdf(None, &bytes) {
        services
            .read
            .read_pdf_document(bytes, truncated, base_url, request)
            .await
    } else {
        let html = startup::decode_saved_page(&bytes);
        services
            .read
            .read_document(html, truncated, base_url, request)
            .await
    }
}

/// The `.html`/`.htm`/`.pdf` files under `dir`, depth first, sorted by path. Links to folders
/// are not followed (as `find` does not): a link back up the tree would list its pages again
/// and again. Links to files are listed; what they lead to is checked when it is read.
fn pages_under(dir: &Path, into: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(dir)?
        .map(|e| e.and_then(|e| Ok((e.path(), e.file_type()?))))
        .collect::<Result<_, _>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in entries {
        if kind.is_dir() {
            pages_under(&path, into)?;
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["html", "htm", "pdf"]
                .iter()
                .any(|x| e.eq_ignore_ascii_case(x))
        }) {
            into.push(path);
        }
    }
    Ok(())
}

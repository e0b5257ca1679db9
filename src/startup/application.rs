//! The bound service: its listener, its background jobs, and a graceful stop on SIGTERM.

use super::*;

/// A bound, ready-to-run service.
pub struct Application {
    acceptor: TcpAcceptor,
    local_addr: SocketAddr,
    ctx: AppContext,
    mcp: mcp::McpConfig,
    pages: Arc<dyn PageCache>,
    /// `SVC_METRICS_BIND`'s listener, when set.
    metrics: Option<(TcpAcceptor, SocketAddr)>,
    /// Where `/metrics` is served on the main address: for this token only.
    metrics_token: Option<String>,
    /// Between readiness turning 503 and the listener closing.
    shutdown_delay: Duration,
    /// A connection quiet this long is closed.
    idle_timeout: Duration,
    /// How often due webhook deliveries are looked for; `None`: this instance sends none.
    webhook_poll: Option<Duration>,
}

/// How long the background jobs may take to finish their current run at shutdown.
const JOBS_STOP_WAIT: Duration = Duration::from_secs(10);

impl Application {
    pub async fn build(
        runtime: &RuntimeSettings,
        bind: &str,
        stores: Stores,
        environment: Environment,
        world: World,
    ) -> anyhow::Result<Self> {
        runtime.check()?;
        // Before binding: an instance whose keys the store's other instances do not share
        // stops here, naming the variable to set.
        let clock: Arc<dyn Clock> = world.clock.clone().unwrap_or_else(|| Arc::new(SystemClock));
        let mut world = world;
        if !runtime.web_bot_auth_on()? {
            world.bot_keys = bot_auth::BotKeys::Off;
        }
        keys::check_key_set(
            stores.key_set.as_ref(),
            clock.as_ref(),
            &world.signing,
            &world.sealing,
            &world.bot_keys,
        )
        .await?;
        let acceptor = TcpListener::bind(bind.to_owned())
            .into_acceptor()
            .await
            .with_context(|| format!("binding {bind}"))?;
        let local_addr = acceptor
            .local_addr()
            .first()
            .and_then(|a| a.as_socket_addr().copied())
            .context("listener has no address")?;
        let metrics = match &runtime.metrics_bind {
            Some(bind) => {
                let acceptor = TcpListener::bind(bind.to_owned())
                    .into_acceptor()
                    .await
                    .with_context(|| format!("binding SVC_METRICS_BIND {bind}"))?;
                let addr = acceptor
                    .local_addr()
                    .first()
                    .and_then(|a| a.as_socket_addr().copied())
                    .context("metrics listener has no address")?;
                Some((acceptor, addr))
            }
            None => None,
        };
        let metrics_token = match &metrics {
            Some(_) => None,
            None => runtime.internal_token.clone().filter(|t| !t.is_empty()),
        };
        let origins = runtime.origins(local_addr);
        let mcp = mcp::McpConfig::new(
            &origins,
            &runtime.mcp_allowed_hosts,
            &runtime.mcp_allowed_origins,
            runtime.mcp_disable_host_check,
            runtime.max_body_bytes,
        );
        world.key_cache = Some(Duration::from_millis(runtime.key_cache_millis));
        world.key_rotation_overlap = Some(Duration::from_secs(
            runtime.key_rotation_overlap_hours * 3600,
        ));
        world.scans_per_minute = Some(runtime.scan_rate_limit_per_ip);
        world.render = Some(runtime.render.clone());
        world.free_credits = runtime.free_credits.or(world.free_credits);
        world.email_codes_per_hour = runtime.email_codes_per_hour.or(world.email_codes_per_hour);
        let proxies = Arc::new(runtime.trusted_proxies()?);
        if runtime.trust_forwarded_for {
            tracing::warn!(
                trusted = %proxies,
                "SVC_TRUST_FORWARDED_FOR is deprecated: it trusts whatever peer connects for one hop; \
                 list the proxies in SVC_TRUSTED_PROXIES instead"
            );
        }
        if environment == Environment::Test && !world.sandbox_hosts.is_empty() {
            // In the sandbox the service may read (and scan) itself when its origins are named
            // under `.sandbox.test`: those names are pinned to the bound address.
            for origin in [&origins.site_url, &origins.base_url, &origins.mcp_url] {
                if let Some(host) = url::Url::parse(origin)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .filter(|h| h.ends_with(".sandbox.test"))
                {
                    world.sandbox_hosts.entry(host).or_insert(local_addr);
                }
            }
        }
        if let Mail::Log = world.mail {
            tracing::warn!(
                "no SVC_SMTP_URL: mail is only logged (bodies withheld), so sign-in and signup codes cannot arrive"
            );
        }
        world.bot_identity = bot_auth::identity(
            &world.bot_keys,
            &origins.site_url,
            Duration::from_secs(runtime.web_bot_auth_lifetime_seconds),
        )?;
        let (services, outbox) = services(&stores, environment, &world, &origins)?;
        if let Payments::Sandbox(provider) = &world.payments {
            // Straight to the bound address: the public site URL may be a proxy's.
            provider.deliver_to(&format!("http://{local_addr}/api/billing/webhook"));
        }
        let ctx = AppContext {
            services,
            outbox,
            origins: Arc::new(origins),
            environment,
            proxies,
            bot_directory: world
                .bot_identity
                .clone()
                .map(|b| b as Arc<dyn svc_ports::bot_auth::BotDirectory>),
            limits: Limits {
                max_body_bytes: runtime.max_body_bytes,
                rate_limit_per_key: runtime.rate_limit_per_key,
                rate_limit_per_ip: runtime.rate_limit_per_ip,
                scan_rate_limit_per_ip: runtime.scan_rate_limit_per_ip,
                recover_after_seconds: runtime.recover_after_seconds,
                shutdown_grace_seconds: runtime.shutdown_grace_seconds,
            },
        };
        tracing::info!(store = stores.kind, environment = environment.as_str(), address = %local_addr, base_url = %ctx.origins.base_url, "service bound");
        if let Some((_, addr)) = &metrics {
            tracing::info!(address = %addr, "metrics bound");
        }
        Ok(Self {
            acceptor,
            local_addr,
            ctx,
            mcp,
            pages: stores.pages,
            metrics,
            metrics_token,
            shutdown_delay: Duration::from_secs(runtime.shutdown_delay_seconds),
            idle_timeout: Duration::from_secs(runtime.idle_timeout_seconds),
            webhook_poll: (runtime.webhook_poll_millis > 0)
                .then(|| Duration::from_millis(runtime.webhook_poll_millis)),
        })
    }

    /// `SVC_METRICS_BIND`'s bound address, when set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|(_, addr)| *addr)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn context(&self) -> &AppContext {
        &self.ctx
    }

    /// Serves until SIGINT or SIGTERM, then drains: readiness answers 503 at once, the
    /// listener closes after `SVC_SHUTDOWN_DELAY_SECONDS` (requests are served meanwhile),
    /// requests in flight finish (up to `SVC_SHUTDOWN_GRACE_SECONDS`, which outlasts the
    /// request deadline), the background jobs finish their current run, and queued agent
    /// events are written. Then it returns (and `svc` exits 0).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// [`Self::run_until_stopped`], with `stop` in place of the signals.
    pub async fn run_until(
        self,
        stop: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
        let (stop_jobs, jobs_stopped) = tokio::sync::watch::channel(false);
        let mut jobs = vec![
            tokio::spawn(jobs::purge_page_cache(self.pages, jobs_stopped.clone())),
            tokio::spawn(jobs::purge_identity(
                self.ctx.services.clone(),
                jobs_stopped.clone(),
            )),
            tokio::spawn(jobs::purge_limits(
                self.ctx.services.clone(),
                jobs_stopped.clone(),
            )),
            tokio::spawn(jobs::recover_tasks(
                self.ctx.services.clone(),
                self.ctx.limits.recover_after_seconds,
                jobs_stopped.clone(),
            )),
        ];
        if let Some(every) = self.webhook_poll {
            jobs.push(tokio::spawn(jobs::deliver_webhooks(
                self.ctx.services.clone(),
                every,
                jobs_stopped,
            )));
        }
        let services = self.ctx.services.clone();
        let telemetry = tokio::spawn(async move { services.telemetry.run_writer().await });
        let services = self.ctx.services.clone();
        let metrics_server = self.metrics.map(|(acceptor, _)| {
            let route = poem::Route::new().at(
                "/metrics",
                poem::get(metrics::MetricsEndpoint::open(services.clone())),
            );
            tokio::spawn(Server::new_with_acceptor(acceptor).run(route))
        });
        let grace = Duration::from_secs(self.ctx.limits.shutdown_grace_seconds);
        let delay = self.shutdown_delay;
        let draining = services.clone();
        // When the listener closed: the grace runs from there, for requests and executions.
        let closed_at = Arc::new(std::sync::OnceLock::new());
        let closing = closed_at.clone();
        let signal = async move {
            stop.await;
            draining.health.drain();
            if !delay.is_zero() {
                tracing::info!(
                    delay_seconds = delay.as_secs(),
                    "serving on while the load balancer notices"
                );
                tokio::time::sleep(delay).await;
            }
            tracing::info!(
                grace_seconds = grace.as_secs(),
                "closing the listener; requests in flight may finish"
            );
            let _ = closing.set(std::time::Instant::now());
        };
        let app = app::app(self.ctx, self.mcp, self.metrics_token.as_deref());
        let served = Server::new_with_acceptor(self.acceptor)
            .idle_timeout(self.idle_timeout)
            .run_with_graceful_shutdown(app, signal, Some(grace))
            .await;
        // Executions run detached from their requests: one whose caller hung up may still be
        // running. It settles by what happened, within what is left of the grace (its site
        // call is bounded by the fetcher's time limit).
        let left = closed_at.get().map_or(grace, |at: &std::time::Instant| {
            grace.saturating_sub(at.elapsed())
        });
        if tokio::time::timeout(left, services.actions.executions_finished())
            .await
            .is_err()
        {
            tracing::warn!("executions still running at exit; recovery will settle them");
        }
        // The jobs finish the run they are in (a recovery settling a task), bounded.
        let _ = stop_jobs.send(true);
        let aborts: Vec<_> = jobs.iter().map(|j| j.abort_handle()).collect();
        if tokio::time::timeout(JOBS_STOP_WAIT, futures_util::future::join_all(jobs))
            .await
            .is_err()
        {
            tracing::warn!("background jobs did not finish in time; stopped");
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
        }
        // Queued agent events are written before the process goes (bounded: a store that is
        // gone does not hold the exit).
        if tokio::time::timeout(Duration::from_secs(5), services.telemetry.flushed())
            .await
            .is_err()
        {
            tracing::warn!("queued agent events could not all be written before exit");
        }
        telemetry.abort();
        if let Some(server) = metrics_server {
            server.abort();
        }
        tracing::info!("stopped");
        served
    }
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
    tracing::info!("shutting down");
}

/// Resolves on SIGTERM or Ctrl-C (for processes that serve no app, like `svc sandbox sites`).
pub async fn stopped() {
    shutdown_signal().await
}

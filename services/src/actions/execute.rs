//! Running one action: the checks before anything is stored, the task's begin, the request
//! through the guarded transport, and the verification of the answer by the map's rules.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use svc_ports::{
    ActionRequest, ActionResponse, ActionSpec, AgentMap, AuthorityId, AuthorityRefusal,
    AuthoritySpend, BeginOutcome, FailureClass, FetchError, LedgerEntryId, NewTask, TaskId,
    actions::OutputSource, tasks::MAX_IDEMPOTENCY_KEY_LEN,
};

use crate::auth::Principal;

use super::{
    ActionService, ExecuteRefusal, ExecuteRequest, Executed, Observed, PaymentContext,
    build_request, replay,
};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// JSON with object keys sorted at every level: the request's fingerprint is taken over this,
/// so key order does not make two equal requests differ.
fn sorted_json(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), sorted_json(&o[*k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(sorted_json).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// A request's fingerprint: its map's domain, the action, the params and, for a payment, the
/// authority (another authority is another request under the same Idempotency-Key).
fn fingerprint(domain: &str, action: &str, params: &Value, authority: Option<&str>) -> String {
    let mut canonical = json!({"domain": domain, "action": action, "params": params});
    if let Some(authority) = authority {
        canonical["authority_id"] = json!(authority);
    }
    sha256_hex(sorted_json(&canonical).as_bytes())
}

/// A request that passed the checks before anything is stored.
struct Prepared {
    map: std::sync::Arc<AgentMap>,
    action: ActionSpec,
    /// As sent: whole numbers the schema types as integers written as integers.
    params: Map<String, Value>,
    credential: Option<crate::connections::Credential>,
    payment: Option<PaymentContext>,
    fingerprint: String,
}

impl ActionService {
    /// Runs one action for `principal`. Refusals happen before anything is stored; once the task
    /// has begun, the answer is always a settled task (completed and charged, or failed and
    /// refunded), and the same `Idempotency-Key` replays it.
    /// The execution is counted in the funnel (completed or failed, never a replay) as coming
    /// through `face`.
    pub async fn execute(
        &self,
        principal: &Principal,
        request: ExecuteRequest,
        face: crate::telemetry::Face,
    ) -> Result<Executed, ExecuteRefusal> {
        let _running = self.running.enter();
        let executed = self.run_execute(principal, request).await;
        match &executed {
            Ok(e) if !e.replayed => {
                self.funnel
                    .record_execution(face, &principal.account.id, e.completed, &e.body);
            }
            // Settled executions are counted where they settle (recovery settles some too).
            Ok(_) => crate::metrics::execution("replayed", 0, 0),
            Err(ExecuteRefusal::Internal(_)) => crate::metrics::execution("error", 0, 0),
            Err(_) => crate::metrics::execution("refused", 0, 0),
        }
        executed
    }

    async fn run_execute(
        &self,
        principal: &Principal,
        request: ExecuteRequest,
    ) -> Result<Executed, ExecuteRefusal> {
        if let Some(key) = &request.idempotency_key
            && (key.is_empty()
                // Characters, as the schemas say (MCP clients count them so), not bytes.
                || key.chars().count() > MAX_IDEMPOTENCY_KEY_LEN
                || key.chars().any(char::is_control))
        {
            return Err(ExecuteRefusal::BadIdempotencyKey(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} printable characters"
            )));
        }
        let Prepared {
            map,
            action,
            params,
            credential,
            payment,
            fingerprint,
        } = match self.prepare(principal, &request).await {
            Ok(prepared) => prepared,
            // What a request under this key already got stands, whatever changed since (the
            // map retired, a schema tightened, a connection expired): told "unknown domain"
            // about an order that went through, an agent might order again under a new key.
            // Not for a key that may not execute: that is this caller's answer to hear.
            Err(refusal)
                if !matches!(
                    refusal,
                    ExecuteRefusal::Internal(_) | ExecuteRefusal::MissingScopes { .. }
                ) =>
            {
                return match self.earlier_answer(principal, &request).await? {
                    Some(answer) => answer,
                    None => Err(refusal),
                };
            }
            Err(refusal) => return Err(refusal),
        };
        let new_task = NewTask {
            id: TaskId::from_ulid(self.ports.entropy.ulid()),
            account_id: principal.account.id.clone(),
            key_id: principal.key.id.clone(),
            domain: map.document.domain.to_string(),
            action: action.name.clone(),
            cost: action.cost,
            idempotency_key: request.idempotency_key.clone(),
            fingerprint,
            hold_entry: LedgerEntryId::from_ulid(self.ports.entropy.ulid()),
            authority_spend: payment.as_ref().map(|p| p.spend.clone()),
            created_at: self.now(),
        };
        let (task, spendable) = match self.ports.tasks.begin_task(&new_task).await {
            Ok(BeginOutcome::Started { task, spendable }) => (task, spendable),
            Ok(BeginOutcome::Replay(t)) => return replay(&t),
            Ok(BeginOutcome::InFlight(t)) => {
                return Err(ExecuteRefusal::InFlight {
                    task_id: t.id.to_string(),
                });
            }
            Ok(BeginOutcome::Conflict(t)) => {
                return Err(ExecuteRefusal::KeyConflict {
                    task_id: t.id.to_string(),
                });
            }
            Ok(BeginOutcome::InsufficientCredits { spendable }) => {
                return Err(ExecuteRefusal::InsufficientCredits {
                    cost: action.cost,
                    spendable,
                    top_up_url: self.account_url.clone(),
                });
            }
            Ok(BeginOutcome::AuthorityRefused(reason)) => {
                let spend = payment.as_ref().map(|p| &p.spend);
                return Err(refused(reason, spend));
            }
            Err(e) => return Err(anyhow::Error::new(e).context("beginning task").into()),
        };
        tracing::info!(task_id = %task.id, domain = %task.domain, action = %task.action, cost = task.cost, "task begun");

        let observed = self.run(&map, &action, &params, credential.as_ref()).await;
        self.settle(&task, observed, payment.as_ref(), Some(spendable))
            .await
            .map(|(executed, _)| executed)
    }

    /// The checks before anything is stored: the published map and action, the params, the
    /// key's scopes, the human's connection and the payment's authority; and the request's
    /// fingerprint.
    async fn prepare(
        &self,
        principal: &Principal,
        request: &ExecuteRequest,
    ) -> Result<Prepared, ExecuteRefusal> {
        let map = self.published(&request.domain).await?;
        let action = map
            .document
            .action(&request.action)
            .ok_or_else(|| ExecuteRefusal::UnknownAction {
                domain: map.document.domain.to_string(),
                action: request.action.clone(),
            })?
            .clone();
        let Value::Object(params) = &request.params else {
            return Err(ExecuteRefusal::InvalidParams(
                "params must be a JSON object".into(),
            ));
        };
        let validator = self.validator(&map, &action, "params")?;
        let problems: Vec<String> = validator
            .iter_errors(&request.params)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(ExecuteRefusal::InvalidParams(format!(
                "params do not match the action's schema: {}",
                problems.join("; ")
            )));
        }
        if let Some(why) = super::request::path_refusal(&action, params) {
            return Err(ExecuteRefusal::InvalidParams(why));
        }
        let missing = action.missing_scopes(&principal.key.scopes);
        if !missing.is_empty() {
            return Err(ExecuteRefusal::MissingScopes {
                consequential: missing
                    .iter()
                    .any(|s| s == svc_ports::actions::CONSEQUENTIAL_SCOPE),
                missing,
            });
        }
        // An action that acts on the human's account needs their connection; without a usable
        // one it stops here, before any charge.
        let credential = self
            .credential(principal, &action, &map.document.base_url)
            .await?;

        // What is sent, and what the payment and its confirmation read: whole numbers the
        // schema types as integers written as integers.
        let mut sent = Value::Object(params.clone());
        svc_ports::actions::write_integers_as_integers(&action.params_schema, &mut sent);
        let payment = self.payment_of(&action, request, &sent).await?;
        let fingerprint = fingerprint(
            map.document.domain.as_str(),
            &action.name,
            &request.params,
            payment.as_ref().map(|p| p.spend.authority_id.as_str()),
        );
        let Value::Object(params) = sent else {
            unreachable!("an object is rewritten into an object")
        };
        Ok(Prepared {
            map,
            action,
            params,
            credential,
            payment,
            fingerprint,
        })
    }

    /// The answer the same request under its Idempotency-Key already has: its stored answer
    /// (settled) or in flight. `None`: no task has this key, or its task is another request's
    /// (a conflict the caller's refusal explains as well).
    async fn earlier_answer(
        &self,
        principal: &Principal,
        request: &ExecuteRequest,
    ) -> Result<Option<Result<Executed, ExecuteRefusal>>, ExecuteRefusal> {
        let Some(key) = &request.idempotency_key else {
            return Ok(None);
        };
        // Only a key that may execute hears an earlier answer: its own, or, holding every
        // execution scope, another key's of its account (what the task's action asked for is
        // not known once its map is gone).
        let scopes = &principal.key.scopes;
        if !scopes.contains(svc_ports::actions::EXECUTE_SCOPE) {
            return Ok(None);
        }
        let Some(task) = self
            .ports
            .tasks
            .task_by_key(&principal.account.id, key)
            .await
            .map_err(|e| anyhow::Error::new(e).context("reading the task under a key"))?
        else {
            return Ok(None);
        };
        if task.key_id != principal.key.id
            && !scopes.contains(svc_ports::actions::CONSEQUENTIAL_SCOPE)
        {
            return Ok(None);
        }
        // The fingerprint this request would have had then: the task's domain when this one
        // names it, and the authority when the task paid under one.
        let domain = svc_ports::Domain::parse(&request.domain)
            .map(|d| d.to_string())
            .unwrap_or_else(|_| request.domain.clone());
        let spend = self
            .ports
            .authorities
            .task_spend(&task.id)
            .await
            .map_err(|e| anyhow::Error::new(e).context("reading the task's authority spend"))?;
        let authority = spend.map(|_| {
            let named = request.authority_id.as_deref().map(str::trim).unwrap_or("");
            AuthorityId::parse(named).map_or(named.to_owned(), |a| a.as_str().to_owned())
        });
        let then = fingerprint(
            &domain,
            &request.action,
            &request.params,
            authority.as_deref(),
        );
        // Another request under the key is refused for what is wrong with it today, as ever.
        if task.fingerprint != then {
            return Ok(None);
        }
        Ok(Some(if task.status == svc_ports::TaskStatus::InFlight {
            Err(ExecuteRefusal::InFlight {
                task_id: task.id.to_string(),
            })
        } else {
            replay(&task)
        }))
    }

    /// The human's connection credential an action needs, if it needs one.
    pub(super) async fn credential(
        &self,
        principal: &Principal,
        action: &ActionSpec,
        base_url: &str,
    ) -> Result<Option<crate::connections::Credential>, ExecuteRefusal> {
        let Some(provider) = &action.auth_provider else {
            return Ok(None);
        };
        let host = url::Url::parse(base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        self.connections
            .credential_for(&principal.account.id, provider, &host)
            .await
            .map(Some)
            .map_err(|e| {
                use crate::connections::CredentialFailure as F;
                match e {
                    F::Required(provider) => ExecuteRefusal::ConnectionRequired { provider },
                    F::Expired(provider) => ExecuteRefusal::ConnectionExpired { provider },
                    F::ProviderUnavailable(provider) => {
                        ExecuteRefusal::ConnectionProviderUnavailable { provider }
                    }
                    F::NotForThisSite { provider, host } => {
                        tracing::warn!(%provider, %host, "a map names a provider whose credentials are not for its site");
                        ExecuteRefusal::ConnectionProviderUnavailable { provider }
                    }
                    F::Internal(e) => ExecuteRefusal::Internal(e),
                }
            })
    }

    /// The spend a payment action asks for, or `None` for other actions (which ignore any
    /// `authority_id`). Refused before anything is stored when no authority is named or the
    /// amount is not an integer param.
    async fn payment_of(
        &self,
        action: &ActionSpec,
        request: &ExecuteRequest,
        params: &Value,
    ) -> Result<Option<PaymentContext>, ExecuteRefusal> {
        let Some(spec) = &action.payment else {
            return Ok(None);
        };
        let Some(raw) = request
            .authority_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        else {
            return Err(ExecuteRefusal::PaymentAuthorityRequired {
                action: action.name.clone(),
                account_url: self.account_url.clone(),
            });
        };
        let amount = spec.amount_of(params).ok_or_else(|| {
            ExecuteRefusal::InvalidParams(format!(
                "params must carry the amount to pay at {} as an integer",
                spec.amount
            ))
        })?;
        let Ok(authority_id) = AuthorityId::parse(raw) else {
            return Err(refused(AuthorityRefusal::UnknownAuthority, None));
        };
        // The flags never change after creation, so reading them before the task begins is
        // safe; whether the spend is allowed is decided by begin_task, atomically.
        let flags = self
            .ports
            .authorities
            .authority(&authority_id, self.now())
            .await?
            .map(|(a, _)| (a.receipt_required, a.verification_required))
            .unwrap_or((false, false));
        Ok(Some(PaymentContext {
            spend: AuthoritySpend {
                authority_id,
                amount,
                currency: spec.currency.clone(),
                scope: action.family.as_str().to_owned(),
            },
            receipt_required: flags.0,
            verification_required: flags.1,
            reference: spec.reference.clone(),
            confirm: spec.confirm.as_ref().and_then(|c| {
                c.params_from(params)
                    .map(|params| (c.action.clone(), params))
            }),
        }))
    }

    /// Sends the request and checks the answer against the map's rules.
    pub(super) async fn run(
        &self,
        map: &AgentMap,
        action: &ActionSpec,
        params: &Map<String, Value>,
        credential: Option<&crate::connections::Credential>,
    ) -> Observed {
        let mut request = build_request(&map.document.base_url, action, params);
        if let Some(c) = credential {
            // The map's own header of that name gives way: the connection speaks for the human.
            let (name, value) = c.header();
            request
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            request.headers.push((name, value));
        }
        let started = std::time::Instant::now();
        let sent = self.ports.transport.send(&request).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                let class = match &e {
                    FetchError::Timeout { .. } => FailureClass::UpstreamTimeout,
                    FetchError::Refused(_) => FailureClass::UrlRefused,
                    _ => FailureClass::UpstreamUnreachable,
                };
                return Observed {
                    completed: false,
                    // Refused before sending, or no connection made: nothing reached the site.
                    nothing_happened: matches!(
                        e,
                        FetchError::Refused(_) | FetchError::Connect { .. }
                    ),
                    failure: Some((class, e.to_string())),
                    url: request.url,
                    evidence: json!({"request_method": request.method.as_str(), "transport_error": e.to_string(), "elapsed_ms": elapsed_ms}),
                    result: Value::Null,
                };
            }
        };
        self.verify(action, request, response, elapsed_ms, map)
    }

    fn verify(
        &self,
        action: &ActionSpec,
        request: ActionRequest,
        response: ActionResponse,
        elapsed_ms: u64,
        map: &AgentMap,
    ) -> Observed {
        let mut checks = Vec::new();
        let mut failure: Option<(FailureClass, String)> = None;
        let status_ok = action.verify.status.contains(&response.status);
        checks.push(json!({"rule": "status", "expected": action.verify.status, "observed": response.status, "held": status_ok}));
        if !status_ok {
            failure = Some((
                FailureClass::ActionFailed,
                format!(
                    "the site answered HTTP {} (expected {:?})",
                    response.status, action.verify.status
                ),
            ));
        }
        let needs_json = !action.verify.json.is_empty()
            || action
                .outputs
                .iter()
                .any(|o| matches!(o.source, OutputSource::Json { .. }));
        let parsed: Option<Value> = if needs_json {
            serde_json::from_str(&response.body).ok()
        } else {
            None
        };
        if needs_json && parsed.is_none() && failure.is_none() {
            failure = Some((
                FailureClass::UpstreamInvalidResponse,
                "the site's answer is not JSON".into(),
            ));
        }
        for rule in &action.verify.json {
            let found = parsed.as_ref().and_then(|p| p.pointer(&rule.pointer));
            let held = match (&rule.equals, found) {
                (Some(want), Some(got)) => want == got,
                (None, Some(got)) => !got.is_null(),
                (_, None) => false,
            };
            checks.push(json!({"rule": "json", "pointer": rule.pointer, "equals": rule.equals, "held": held}));
            if !held && failure.is_none() {
                failure = Some((
                    FailureClass::ActionFailed,
                    format!(
                        "the answer does not confirm the action ({} does not hold)",
                        rule.pointer
                    ),
                ));
            }
        }
        let css_selectors: Vec<String> = action
            .verify
            .css
            .iter()
            .map(|r| r.selector.clone())
            .collect();
        let output_selectors: Vec<String> = action
            .outputs
            .iter()
            .filter_map(|o| match &o.source {
                OutputSource::Css { selector } => Some(selector.clone()),
                _ => None,
            })
            .collect();
        let all_selectors: Vec<String> = css_selectors
            .iter()
            .chain(&output_selectors)
            .cloned()
            .collect();
        let texts = if all_selectors.is_empty() {
            Vec::new()
        } else {
            self.ports
                .extractor
                .select_texts(&response.body, &all_selectors)
                .unwrap_or_else(|_| vec![None; all_selectors.len()])
        };
        for (rule, text) in action.verify.css.iter().zip(&texts) {
            let held = match (&rule.text_contains, text) {
                (Some(want), Some(t)) => t.contains(want.as_str()),
                (None, Some(_)) => true,
                (_, None) => false,
            };
            checks.push(json!({"rule": "css", "selector": rule.selector, "text_contains": rule.text_contains, "held": held}));
            if !held && failure.is_none() {
                failure = Some((
                    FailureClass::ActionFailed,
                    format!(
                        "the page does not confirm the action ({} does not hold)",
                        rule.selector
                    ),
                ));
            }
        }
        let mut css_outputs = texts.iter().skip(css_selectors.len());
        let mut result = Map::new();
        for output in &action.outputs {
            let value = match &output.source {
                OutputSource::Json { pointer } => parsed
                    .as_ref()
                    .and_then(|p| p.pointer(pointer))
                    .cloned()
                    .unwrap_or(Value::Null),
                OutputSource::Css { .. } => css_outputs
                    .next()
                    .cloned()
                    .flatten()
                    .map(Value::String)
                    .unwrap_or(Value::Null),
                OutputSource::Status => json!(response.status),
            };
            result.insert(output.name.clone(), value);
        }
        let result = Value::Object(result);
        if failure.is_none() {
            match self.validator(map, action, "output") {
                Ok(v) => {
                    if let Some(e) = v.iter_errors(&result).next() {
                        failure = Some((
                            FailureClass::UpstreamInvalidResponse,
                            format!(
                                "the site's answer does not fit the action's output schema: {e}"
                            ),
                        ));
                    }
                }
                Err(e) => failure = Some((FailureClass::Internal, e.to_string())),
            }
        }
        let evidence = json!({
            "request_method": request.method.as_str(),
            "http_status": response.status,
            "content_type": response.content_type,
            "response_sha256": sha256_hex(response.body.as_bytes()),
            "response_truncated": response.truncated,
            "checks": checks,
            "result_sha256": sha256_hex(sorted_json(&result).as_bytes()),
            "elapsed_ms": elapsed_ms,
        });
        Observed {
            completed: failure.is_none(),
            nothing_happened: failure.is_some() && (400..500).contains(&response.status),
            failure,
            url: response.url,
            evidence,
            result,
        }
    }
}

/// The refusal of a spend, with a detail naming the reason (and what remains when over it).
fn refused(reason: AuthorityRefusal, spend: Option<&AuthoritySpend>) -> ExecuteRefusal {
    let detail = match (&reason, spend) {
        (AuthorityRefusal::OverLimit { remaining }, Some(s)) => format!(
            "payment authority refused (over_limit): {} {} asked, {remaining} {} remaining in the current window",
            s.amount, s.currency, s.currency
        ),
        _ => format!("payment authority refused ({}): {reason}", reason.code()),
    };
    ExecuteRefusal::PaymentAuthorityRefused { reason, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_ignore_key_order() {
        assert_eq!(
            sorted_json(&json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 1}], "c": null}})),
            sorted_json(&json!({"a": {"c": null, "d": [1, {"x": 1, "y": 2}]}, "b": 1}))
        );
        assert_ne!(
            sorted_json(&json!({"a": 1})),
            sorted_json(&json!({"a": "1"}))
        );
    }
}

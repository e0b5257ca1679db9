//! The rules a map and each of its actions must satisfy before the map is stored.

use serde_json::Value;

use super::{
    ActionFamily, ActionSpec, MAX_ACTION_COST, MAX_ACTIONS_PER_MAP, MapDocument, MapError,
    PaymentSpec,
};

/// The schema of the param a JSON pointer names in a params schema, walking `properties`.
fn schema_at<'a>(params_schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut at = params_schema;
    let path = pointer.strip_prefix('/')?;
    for segment in path.split('/') {
        let key = segment.replace("~1", "/").replace("~0", "~");
        at = at.get("properties")?.get(&key)?;
    }
    Some(at)
}

impl PaymentSpec {
    /// The param schema the amount pointer names, walking `properties`.
    fn param_schema<'a>(&self, params_schema: &'a Value) -> Option<&'a Value> {
        schema_at(params_schema, &self.amount)
    }
}

impl ActionSpec {
    fn check(&self) -> Result<(), MapError> {
        let bad = |why: &str| Err(MapError::BadAction(self.name.clone(), why.to_owned()));
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && self.name.as_bytes()[0].is_ascii_lowercase()
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name_ok {
            return bad("names are 1-64 of a-z, 0-9 and _, starting with a letter");
        }
        if !self.family.allowed() {
            return bad(&format!(
                "family `{}` is disallowed by the action catalog",
                self.family.as_str()
            ));
        }
        if self.family.always_consequential() && !self.consequential {
            return bad(&format!(
                "family `{}` is always consequential",
                self.family.as_str()
            ));
        }
        if !(0..=MAX_ACTION_COST).contains(&self.cost) {
            return bad(&format!("cost must be 0 to {MAX_ACTION_COST}"));
        }
        if self.params_schema.get("type").and_then(Value::as_str) != Some("object") {
            return bad("params_schema must be a JSON Schema with type object");
        }
        if !self.output_schema.is_object() {
            return bad("output_schema must be a JSON Schema object");
        }
        if !self.request.path.starts_with('/') {
            return bad("request.path must start with /");
        }
        if self.verify.status.is_empty()
            || self.verify.status.iter().any(|s| !(100..600).contains(s))
        {
            return bad("verify.status must list HTTP statuses");
        }
        if let Some(p) = &self.auth_provider
            && !provider_id_ok(p)
        {
            return bad("auth_provider is a site-derived id like `shop-example`");
        }
        for s in &self.scopes {
            if crate::keys::Scope::parse(s).is_err() {
                return bad(&format!("scope `{s}` is not valid"));
            }
        }
        let declared: Vec<String> = self
            .params_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(missing) = self
            .template_params()
            .into_iter()
            .find(|p| !declared.contains(p))
        {
            return bad(&format!(
                "the request uses `{{{missing}}}`, which params_schema does not declare"
            ));
        }
        for rule in &self.verify.json {
            if !(rule.pointer.is_empty() || rule.pointer.starts_with('/')) {
                return bad("JSON pointers start with /");
            }
        }
        let mut names: Vec<&str> = self.outputs.iter().map(|o| o.name.as_str()).collect();
        names.sort();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return bad("output names must be unique");
        }
        if let Some(payment) = &self.payment {
            if !matches!(self.family, ActionFamily::Order | ActionFamily::Booking) {
                return bad("only order and booking actions may declare a payment");
            }
            let integer = payment
                .param_schema(&self.params_schema)
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                == Some("integer");
            if !integer {
                return bad("payment.amount must point to a declared integer param");
            }
            // The amount the authority is charged for must be the amount the site is sent.
            let top = payment
                .amount
                .strip_prefix('/')
                .unwrap_or_default()
                .split('/')
                .next()
                .unwrap_or_default()
                .replace("~1", "/")
                .replace("~0", "~");
            if !self.template_params().contains(&top) {
                return bad("payment.amount must be a param the request sends");
            }
            if let Some(r) = &payment.reference
                && !names.contains(&r.as_str())
            {
                return bad("payment.reference must name an output");
            }
        }
        Ok(())
    }
}

/// Connection provider ids are written like a site's name and top-level domain joined by a
/// hyphen: `shop-example`.
pub fn provider_id_ok(id: &str) -> bool {
    (3..=64).contains(&id.len())
        && id.contains('-')
        && !id.starts_with('-')
        && !id.ends_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl MapDocument {
    /// Checks everything a map must satisfy before it is stored.
    pub fn check(&self) -> Result<(), MapError> {
        let base_ok = (self.base_url.starts_with("https://")
            || self.base_url.starts_with("http://"))
            && !self.base_url.ends_with('/');
        if !base_ok {
            return Err(MapError::BadMap(
                "base_url must be an http(s) origin without a trailing slash".into(),
            ));
        }
        if self.actions.is_empty() || self.actions.len() > MAX_ACTIONS_PER_MAP {
            return Err(MapError::BadMap(format!(
                "a map has 1 to {MAX_ACTIONS_PER_MAP} actions"
            )));
        }
        let mut names: Vec<&str> = self.actions.iter().map(|a| a.name.as_str()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(MapError::BadMap(format!("action `{}` appears twice", w[0])));
        }
        self.actions.iter().try_for_each(ActionSpec::check)?;
        self.actions.iter().try_for_each(|a| self.check_confirm(a))
    }

    /// A payment's `confirm` names a non-consequential read or search of this map, with every
    /// pointer resolving to a declared param of the payment and every param one the confirm
    /// action declares.
    fn check_confirm(&self, action: &ActionSpec) -> Result<(), MapError> {
        let Some(confirm) = action.payment.as_ref().and_then(|p| p.confirm.as_ref()) else {
            return Ok(());
        };
        let bad = |why: String| Err(MapError::BadAction(action.name.clone(), why));
        let Some(target) = self.action(&confirm.action) else {
            return bad(format!(
                "payment.confirm.action `{}` is not an action of this map",
                confirm.action
            ));
        };
        if target.name == action.name
            || target.consequential
            || !matches!(target.family, ActionFamily::Read | ActionFamily::Search)
        {
            return bad(format!(
                "payment.confirm.action `{}` must be a non-consequential read or search",
                confirm.action
            ));
        }
        let declared = target
            .params_schema
            .get("properties")
            .and_then(Value::as_object);
        for (param, pointer) in &confirm.params {
            if !declared.is_some_and(|d| d.contains_key(param)) {
                return bad(format!(
                    "payment.confirm.params: `{}` does not declare `{param}`",
                    confirm.action
                ));
            }
            if schema_at(&action.params_schema, pointer).is_none() {
                return bad(format!(
                    "payment.confirm.params.{param}: `{pointer}` is not a declared param of this action"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::ConfirmSpec;
    use crate::actions::tests::sample_action;
    use serde_json::json;

    #[test]
    fn payments_point_at_an_integer_param_of_an_order_or_booking() {
        let pay = |family: &str, amount_type: &str, payment: Value| -> Result<(), MapError> {
            let spec: ActionSpec = serde_json::from_value(json!({
                "name": "pay",
                "description": "Pay.",
                "family": family,
                "params_schema": {"type": "object", "properties": {
                    "amount": {"type": amount_type}, "order": {"type": "object", "properties": {"cents": {"type": "integer"}}}}},
                "consequential": true,
                "request": {"method": "POST", "path": "/pay",
                    "body": {"type": "json", "value": {"amount": "{amount}", "order": "{order}"}}},
                "verify": {"status": [201]},
                "outputs": [{"name": "payment_id", "from": "json", "pointer": "/id"}],
                "output_schema": {"type": "object"},
                "payment": payment
            }))
            .unwrap();
            spec.check()
        };
        let ok = json!({"amount": "/amount", "currency": "usd", "reference": "payment_id"});
        assert!(pay("order", "integer", ok.clone()).is_ok());
        // An amount the request never sends cannot be what the authority pays for.
        let unsent: ActionSpec = serde_json::from_value(json!({
            "name": "pay", "description": "Pay.", "family": "order",
            "params_schema": {"type": "object", "properties": {"amount": {"type": "integer"}}},
            "consequential": true, "request": {"method": "POST", "path": "/pay"},
            "verify": {"status": [201]}, "outputs": [], "output_schema": {"type": "object"},
            "payment": {"amount": "/amount", "currency": "usd"}
        }))
        .unwrap();
        assert!(unsent.check().is_err());
        assert!(
            pay(
                "booking",
                "integer",
                json!({"amount": "/order/cents", "currency": "eur"})
            )
            .is_ok()
        );
        assert!(pay("form_submit", "integer", ok.clone()).is_err());
        assert!(pay("order", "string", ok.clone()).is_err());
        assert!(
            pay(
                "order",
                "integer",
                json!({"amount": "/missing", "currency": "usd"})
            )
            .is_err()
        );
        assert!(
            pay(
                "order",
                "integer",
                json!({"amount": "/amount", "currency": "usd", "reference": "nope"})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<PaymentSpec>(json!({"amount": "/a", "currency": "dollars"}))
                .is_err()
        );
        let spec: PaymentSpec = serde_json::from_value(ok).unwrap();
        assert_eq!(spec.amount_of(&json!({"amount": 250})), Some(250));
        assert_eq!(spec.amount_of(&json!({"amount": "250"})), None);
    }

    #[test]
    fn payment_confirmations_name_a_read_of_the_map_with_resolving_params() {
        let map = |confirm: Value, read_family: &str, read_consequential: bool| {
            serde_json::from_value::<MapDocument>(json!({
                "domain": "shop.example.com",
                "base_url": "https://shop.example.com",
                "actions": [{
                    "name": "pay",
                    "description": "Pay.",
                    "family": "order",
                    "params_schema": {"type": "object", "properties": {
                        "amount": {"type": "integer"}, "order_id": {"type": "string"}}},
                    "consequential": true,
                    "request": {"method": "POST", "path": "/pay?amount={amount}"},
                    "verify": {"status": [201]},
                    "output_schema": {"type": "object"},
                    "payment": {"amount": "/amount", "currency": "usd", "confirm": confirm}
                }, {
                    "name": "status",
                    "description": "Status.",
                    "family": read_family,
                    "params_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
                    "consequential": read_consequential,
                    "request": {"method": "GET", "path": "/orders/{id}"},
                    "verify": {"status": [200]},
                    "output_schema": {"type": "object"}
                }]
            }))
            .map_err(|e| MapError::BadMap(e.to_string()))
            .and_then(|m| m.check())
        };
        let ok = json!({"action": "status", "params": {"id": "/order_id"}});
        assert!(map(ok.clone(), "read", false).is_ok());
        assert!(map(ok.clone(), "search", false).is_ok());
        assert!(map(json!({"action": "status"}), "read", false).is_ok());
        let err = |r: Result<(), MapError>| r.unwrap_err().to_string();
        assert!(
            err(map(json!({"action": "nope", "params": {}}), "read", false))
                .contains("not an action")
        );
        assert!(
            err(map(json!({"action": "pay", "params": {}}), "read", false))
                .contains("non-consequential")
        );
        assert!(err(map(ok.clone(), "read", true)).contains("non-consequential"));
        assert!(err(map(ok.clone(), "cart", false)).contains("non-consequential"));
        assert!(
            err(map(
                json!({"action": "status", "params": {"sku": "/order_id"}}),
                "read",
                false
            ))
            .contains("does not declare `sku`")
        );
        assert!(
            err(map(
                json!({"action": "status", "params": {"id": "/missing"}}),
                "read",
                false
            ))
            .contains("not a declared param")
        );
        assert!(
            err(map(
                json!({"action": "status", "params": {"id": "order_id"}}),
                "read",
                false
            ))
            .contains("not a declared param")
        );
        assert!(
            map(json!({"action": "status", "extra": 1}), "read", false).is_err(),
            "unknown fields"
        );
        let spec: ConfirmSpec = serde_json::from_value(ok).unwrap();
        assert_eq!(
            spec.params_from(&json!({"order_id": "ord-1", "amount": 5})),
            Some(json!({"id": "ord-1"}).as_object().unwrap().clone())
        );
        assert_eq!(spec.params_from(&json!({"amount": 5})), None);
    }

    #[test]
    fn actions_are_checked() {
        let ok = sample_action();
        assert!(ok.check().is_ok());
        assert_eq!(ok.cost, 1, "cost defaults to 1");
        assert_eq!(ok.required_scopes(), vec!["execute"]);
        let mut undeclared = ok.clone();
        undeclared.request.path = "/api/search?q={query}&page={page}".into();
        assert!(undeclared.check().is_err());
        let mut order = ok.clone();
        order.family = ActionFamily::Order;
        assert!(order.check().is_err(), "orders are always consequential");
        order.consequential = true;
        assert!(order.check().is_ok());
        assert_eq!(
            order.required_scopes(),
            vec!["execute", "execute:consequential"]
        );
        let mut forbidden = ok.clone();
        forbidden.family = ActionFamily::CredentialEntry;
        forbidden.consequential = true;
        assert!(forbidden.check().is_err());
        let mut bad_provider = ok;
        bad_provider.auth_provider = Some("Shop".into());
        assert!(bad_provider.check().is_err());
    }

    #[test]
    fn provider_ids_look_like_site_names() {
        assert!(provider_id_ok("shop-example"));
        assert!(!provider_id_ok("shop"));
        assert!(!provider_id_ok("Shop-Example"));
    }
}

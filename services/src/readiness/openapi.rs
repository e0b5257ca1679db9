//! The OpenAPI document: found at one of the usual paths and validated against the official
//! OpenAPI 3.0 / 3.1 schemas.

use std::sync::LazyLock;

use serde_json::Value;
use svc_ports::{CheckId, CheckResult, CheckStatus};

use super::{Got, result};

pub(super) const OPENAPI_PATHS: &[&str] = &[
    "/openapi.json",
    "/.well-known/openapi.json",
    "/api/openapi.json",
    "/swagger.json",
    "/v3/api-docs",
];

static OAS_31: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../resources/openapi/oas-3.1-schema-2022-10-07.json"
    ))
    .expect("the OAS 3.1 schema is JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the OAS 3.1 schema compiles")
});

static OAS_30: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(include_str!(
        "../../../resources/openapi/oas-3.0-schema-2021-09-28.json"
    ))
    .expect("the OAS 3.0 schema is JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .build(&schema)
        .expect("the OAS 3.0 schema compiles")
});

/// Up to three schema errors of an OpenAPI document, or `Err` for a version not validated.
pub fn openapi_errors(doc: &Value) -> Result<Vec<String>, String> {
    let validator: &jsonschema::Validator = match (doc["openapi"].as_str(), doc["swagger"].as_str())
    {
        (Some(v), _) if v.starts_with("3.1.") => &OAS_31,
        (Some(v), _) if v.starts_with("3.0.") => &OAS_30,
        (_, Some(v)) => return Err(format!("Swagger {v} (OpenAPI 2)")),
        (Some(v), _) => return Err(format!("OpenAPI {v}, a version this scan does not know")),
        (None, None) => return Err("no `openapi` version field".into()),
    };
    Ok(validator
        .iter_errors(doc)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("{}: {e}", if at.is_empty() { "/".into() } else { at })
        })
        .collect())
}

pub fn judge_openapi(tries: &[Got]) -> CheckResult {
    const ADVICE: &str = "Publish an OpenAPI 3.1 document of your API at /openapi.json (or /.well-known/openapi.json) that validates against the OpenAPI schema.";
    let found = tries.iter().find_map(|g| {
        g.json_object()
            .filter(|d| d.get("openapi").is_some() || d.get("swagger").is_some())
            .map(|d| (g, d))
    });
    let Some((got, doc)) = found else {
        return result(
            CheckId::Openapi,
            CheckStatus::Fail,
            format!("no OpenAPI document at {}", OPENAPI_PATHS.join(", ")),
            tries.iter().map(Got::evidence).collect(),
            Some(ADVICE),
        );
    };
    let title = doc["info"]["title"]
        .as_str()
        .unwrap_or("untitled")
        .to_owned();
    let paths = doc["paths"].as_object().map_or(0, |p| p.len());
    match openapi_errors(&doc) {
        Ok(errors) if errors.is_empty() => result(
            CheckId::Openapi,
            CheckStatus::Pass,
            format!(
                "valid OpenAPI {} document \"{title}\" with {paths} paths",
                doc["openapi"].as_str().unwrap_or_default()
            ),
            vec![got.evidence()],
            None,
        ),
        Ok(errors) => result(
            CheckId::Openapi,
            CheckStatus::Warn,
            format!(
                "OpenAPI document \"{title}\" does not validate: {}",
                errors.join("; ")
            ),
            vec![got.evidence()],
            Some(
                "Fix the OpenAPI document until it validates (openapi-spec-validator, or the schema at spec.openapis.org).",
            ),
        ),
        Err(why) => result(
            CheckId::Openapi,
            CheckStatus::Warn,
            format!("found {why}; not validated"),
            vec![got.evidence()],
            Some(ADVICE),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readiness::tests::got;
    use serde_json::json;

    #[test]
    fn openapi_documents_are_validated_against_the_official_schemas() {
        let valid = json!({"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}});
        assert_eq!(openapi_errors(&valid), Ok(vec![]));
        let invalid = json!({"openapi": "3.1.0", "info": {"title": "T"}, "paths": {}});
        let errors = openapi_errors(&invalid).unwrap();
        assert!(
            !errors.is_empty() && errors[0].contains("version"),
            "{errors:?}"
        );
        let v30 = json!({"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}}});
        assert_eq!(openapi_errors(&v30), Ok(vec![]));
        let v30_bad = json!({"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/a": {"get": {}}}});
        assert!(!openapi_errors(&v30_bad).unwrap().is_empty());
        assert!(openapi_errors(&json!({"swagger": "2.0"})).is_err());

        let found = got(200, "application/json", &valid.to_string());
        let none = got(404, "text/plain", "");
        assert_eq!(
            judge_openapi(&[none.clone(), found]).status,
            CheckStatus::Pass
        );
        assert_eq!(
            judge_openapi(&[
                none.clone(),
                got(200, "application/json", &invalid.to_string())
            ])
            .status,
            CheckStatus::Warn
        );
        assert_eq!(
            judge_openapi(&[none.clone(), none]).status,
            CheckStatus::Fail
        );
    }
}

//! The hexagon is kept by the crate graph: these tests read the manifests and fail when a layer
//! names a crate it must not reach (the compiler then keeps the arrows).
//!
//!   ports <- services <- faces (kit <- rest, mcp, a2a, web, wellknown) <- svc (startup, CLI)
//!   ports <- adapters/*, sandbox <- svc

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

const ADAPTERS: &[&str] = &[
    "svc-sql",
    "svc-system",
    "svc-fetch",
    "svc-extract",
    "svc-mail",
    "svc-signer",
    "svc-payments",
    "svc-oauth",
    "svc-render",
    "svc-sandbox",
];
const FACES: &[&str] = &["svc-rest", "svc-mcp", "svc-a2a", "svc-web", "svc-wellknown"];
/// Frameworks and drivers only faces or adapters may use.
const TRANSPORTS: &[&str] = &[
    "poem",
    "poem-openapi",
    "rmcp",
    "sqlx",
    "reqwest",
    "askama",
    "lettre",
    "oauth2",
    "chromiumoxide",
];

/// The package names a manifest depends on (normal dependencies), with `package = ...`
/// renames resolved.
fn dependencies(manifest: &str) -> Vec<String> {
    let path = Path::new(ROOT).join(manifest);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{manifest}: {e}"));
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let workspace: toml::Table =
        toml::from_str(&std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap())
            .unwrap();
    let shared = &workspace["workspace"]["dependencies"];
    let Some(deps) = doc.get("dependencies").and_then(|d| d.as_table()) else {
        return Vec::new();
    };
    deps.iter()
        .map(|(name, spec)| {
            let renamed =
                |v: &toml::Value| v.get("package").and_then(|p| p.as_str()).map(str::to_owned);
            if spec.get("workspace").is_some() {
                renamed(&shared[name.as_str()]).unwrap_or_else(|| name.clone())
            } else {
                renamed(spec).unwrap_or_else(|| name.clone())
            }
        })
        .collect()
}

fn refuses(manifest: &str, forbidden: &[&str]) {
    let deps = dependencies(manifest);
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| forbidden.contains(&d.as_str()))
        .collect();
    assert!(found.is_empty(), "{manifest} names {found:?}");
}

#[test]
fn ports_name_nothing_of_the_service() {
    let all: Vec<&str> = ADAPTERS
        .iter()
        .chain(FACES)
        .chain(TRANSPORTS)
        .chain(&["svc-services", "svc-kit"])
        .copied()
        .collect();
    refuses("ports/Cargo.toml", &all);
}

#[test]
fn services_name_no_face_no_adapter_and_no_transport() {
    let all: Vec<&str> = ADAPTERS
        .iter()
        .chain(FACES)
        .chain(TRANSPORTS)
        .chain(&["svc-kit"])
        .copied()
        .collect();
    refuses("services/Cargo.toml", &all);
    assert!(dependencies("services/Cargo.toml").contains(&"svc-ports".to_owned()));
}

#[test]
fn faces_never_name_one_another_or_an_adapter() {
    for face in ["kit", "rest", "mcp", "a2a", "web", "wellknown"] {
        let manifest = format!("faces/{face}/Cargo.toml");
        let others: Vec<&str> = FACES
            .iter()
            .chain(ADAPTERS)
            .copied()
            .filter(|f| *f != format!("svc-{face}"))
            .collect();
        refuses(&manifest, &others);
        if face != "kit" {
            assert!(
                dependencies(&manifest).contains(&"svc-kit".to_owned()),
                "{face} shares what faces share through kit"
            );
        }
    }
}

#[test]
fn adapters_implement_ports_and_reach_no_service_or_face() {
    for adapter in [
        "sql", "system", "fetch", "extract", "mail", "signer", "payments", "oauth", "render",
    ] {
        let manifest = format!("adapters/{adapter}/Cargo.toml");
        let forbidden: Vec<&str> = FACES
            .iter()
            .chain(&["svc-services", "svc-kit"])
            .copied()
            .collect();
        refuses(&manifest, &forbidden);
    }
}

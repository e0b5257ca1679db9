use serde_json::Value;

use crate::helpers::TestApp;

#[tokio::test]
async fn both_paths_serve_one_openapi_31_document() {
    let app = TestApp::spawn().await;
    let doc: Value = app.get_json("/openapi.json").await;
    let mirror: Value = app.get_json("/.well-known/openapi.json").await;
    assert_eq!(doc, mirror);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], app.base_url);
    let usage = &doc["paths"]["/api/usage"]["get"];
    assert_eq!(usage["security"][0]["ApiKeyAuth"], serde_json::json!([]));
    for status in ["200", "401", "429"] {
        assert!(usage["responses"][status].is_object(), "missing {status}");
    }
    assert!(usage["responses"]["401"]["content"]["application/problem+json"].is_object());
    assert!(
        doc.to_string().find("\"nullable\"").is_none(),
        "3.0 nullable left in the document"
    );
    // Extra fields are refused, and the schema says so.
    assert_eq!(
        doc["components"]["schemas"]["ReadBody"]["additionalProperties"],
        false
    );
    let read = &doc["paths"]["/api/read"];
    for (method, status) in [
        ("get", "200"),
        ("post", "200"),
        ("get", "422"),
        ("post", "502"),
    ] {
        assert!(
            read[method]["responses"][status].is_object(),
            "{method} {status}"
        );
    }
}

#[tokio::test]
async fn the_document_is_pinned() {
    let app = TestApp::builder()
        .runtime(|r| r.base_url = Some("https://api.svc.example".into()))
        .spawn()
        .await;
    let doc: Value = app.get_json("/openapi.json").await;
    insta::assert_json_snapshot!("openapi", doc);
}

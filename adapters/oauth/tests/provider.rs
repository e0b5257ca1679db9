//! The OAuth adapter against a wiremock provider: PKCE and the code reach the token endpoint,
//! the userinfo names the account, and only `invalid_grant` counts as a refusal.

use serde_json::json;
use svc_oauth::{OAuthProviders, ProviderConfig};
use svc_ports::{ConnectionProvider, ConnectionProviderError, CredentialKind, ProviderId};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{body_string_contains, header, method, path},
};

fn config(server: &MockServer) -> ProviderConfig {
    ProviderConfig {
        id: ProviderId::parse("shop-example").unwrap(),
        client_id: "svc".into(),
        client_secret: Some("s3cret".into()),
        authorize_url: format!("{}/authorize", server.uri()),
        token_url: format!("{}/token", server.uri()),
        userinfo_url: format!("{}/userinfo", server.uri()),
        scopes: vec!["orders".into()],
        credential: CredentialKind::Bearer,
        hosts: vec!["shop.example".into()],
    }
}

#[tokio::test]
async fn credentials_go_only_to_the_providers_hosts() {
    let server = MockServer::start().await;
    let providers = OAuthProviders::new(vec![config(&server)]).unwrap();
    let id = ProviderId::parse("shop-example").unwrap();
    assert!(providers.may_receive(&id, "shop.example"));
    assert!(providers.may_receive(&id, "API.Shop.Example"));
    assert!(!providers.may_receive(&id, "evilshop.example"));
    assert!(!providers.may_receive(&id, "shop.example.evil.test"));
    assert!(!providers.may_receive(&ProviderId::parse("other-site").unwrap(), "shop.example"));
}

#[tokio::test]
async fn a_code_with_its_verifier_becomes_a_grant_for_the_named_account() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(body_string_contains("code_verifier=verifier-0123456789"))
        .and(body_string_contains("code=the-code"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": "at-1", "token_type": "bearer", "expires_in": 600, "refresh_token": "rt-1"})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/userinfo"))
        .and(header("authorization", "Bearer at-1"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"email": "ann@shop.example"})),
        )
        .mount(&server)
        .await;
    let providers = OAuthProviders::new(vec![config(&server)]).unwrap();
    let id = ProviderId::parse("shop-example").unwrap();
    let url = providers
        .authorization_url(
            &id,
            "st",
            "verifier-0123456789-0123456789-0123456789-abcdef",
            "https://svc.example/connect/callback",
            Some("ann@shop.example".into()),
        )
        .unwrap();
    assert!(
        url.contains("code_challenge_method=S256")
            && url.contains("state=st")
            && url.contains("login_hint=")
    );
    assert!(
        !url.contains("verifier-0123456789"),
        "only the challenge leaves: {url}"
    );
    let grant = providers
        .exchange_code(
            &id,
            "the-code",
            "verifier-0123456789-0123456789-0123456789-abcdef",
            "https://svc.example/connect/callback",
        )
        .await
        .unwrap();
    assert_eq!(grant.upstream_account, "ann@shop.example");
    assert_eq!(grant.refresh_token.as_deref(), Some("rt-1"));
    assert!(grant.expires_at.is_some());
    assert!(
        !format!("{grant:?}").contains("at-1"),
        "Debug shows no token"
    );
    assert!(matches!(
        providers
            .exchange_code(
                &ProviderId::parse("other-site").unwrap(),
                "c",
                "v",
                "https://x/cb"
            )
            .await,
        Err(ConnectionProviderError::UnknownProvider(_))
    ));
}

#[tokio::test]
async fn only_invalid_grant_is_a_refusal() {
    for (error, refused) in [
        ("invalid_grant", true),
        ("invalid_client", false),
        ("server_error", false),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": error})))
            .mount(&server)
            .await;
        let providers = OAuthProviders::new(vec![config(&server)]).unwrap();
        let id = ProviderId::parse("shop-example").unwrap();
        let got = providers.refresh(&id, "rt-1", "ann@shop.example").await;
        match (refused, got) {
            (true, Err(ConnectionProviderError::Refused(_))) => {}
            (false, Err(ConnectionProviderError::Unavailable(_))) => {}
            (_, other) => panic!("{error}: {other:?}"),
        }
    }
}

/// A review: the provider rotated the refresh token, then its userinfo failed once, and the
/// new tokens were thrown away, so the next use of the spent token ended the connection. The
/// tokens are kept as the connection's account's; a failing code exchange is still refused.
#[tokio::test]
async fn tokens_of_a_refresh_are_kept_when_userinfo_fails() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": "at-2", "token_type": "bearer", "expires_in": 600, "refresh_token": "rt-2"})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/userinfo"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let providers = OAuthProviders::new(vec![config(&server)]).unwrap();
    let id = ProviderId::parse("shop-example").unwrap();
    let grant = providers
        .refresh(&id, "rt-1", "ann@shop.example")
        .await
        .expect("the rotated tokens are answered");
    assert_eq!(grant.access_token, "at-2");
    assert_eq!(grant.refresh_token.as_deref(), Some("rt-2"));
    assert_eq!(grant.upstream_account, "ann@shop.example");
    // A code exchange names its account or nothing: who the human is must be known.
    assert!(matches!(
        providers
            .exchange_code(&id, "c", "v", "https://svc.example/connect/callback")
            .await,
        Err(ConnectionProviderError::Unavailable(_))
    ));
}

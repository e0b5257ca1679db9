//! The provider's webhook refused as a whole when it cannot be read one way: every failed
//! check named in the log (never the secret), and a signed body that names a key twice stored
//! as malformed and applied never.

use serde_json::{Value, json};

use crate::{
    billing::{app, billing_account, create_checkout, signed_in},
    helpers::problem,
};

#[tokio::test]
async fn each_webhook_rejection_names_its_check_in_the_log_and_never_the_secret() {
    crate::helpers::capture_logs();
    let app = app().await;
    let secret = app.payments.as_ref().unwrap().webhook_secret();
    let now = chrono::Utc::now().timestamp();
    let body =
        r#"{"type":"payment.refunded","data":{"payment_id":"p","refund_id":"r","amount":1}}"#;
    let good = secret.sign("msg_log", now, body.as_bytes());
    let stale = secret.sign("msg_log", now - 600, body.as_bytes());
    let cases: [(&[(&str, String)], &str); 4] = [
        (
            &[
                ("webhook-timestamp", now.to_string()),
                ("webhook-signature", good.clone()),
            ],
            "missing header",
        ),
        (
            &[
                ("webhook-id", "msg_log".into()),
                ("webhook-timestamp", "soon".into()),
                ("webhook-signature", good.clone()),
            ],
            "header format",
        ),
        (
            &[
                ("webhook-id", "msg_log".into()),
                ("webhook-timestamp", (now - 600).to_string()),
                ("webhook-signature", stale),
            ],
            "timestamp window",
        ),
        (
            &[
                ("webhook-id", "msg_log".into()),
                ("webhook-timestamp", now.to_string()),
                ("webhook-signature", "v1,AAAA".into()),
            ],
            "signature",
        ),
    ];
    for (headers, check) in cases {
        let mut req = reqwest::Client::new()
            .post(app.url("/api/billing/webhook"))
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        problem(req.send().await.unwrap(), 400, "webhook_rejected").await;
        let log = crate::helpers::captured_logs();
        assert!(
            log.lines()
                .any(|l| l.contains("webhook rejected")
                    && l.contains(&format!("\"check\":\"{check}\""))),
            "no rejection naming `{check}` in the log"
        );
    }
    let log = crate::helpers::captured_logs();
    let exposed = secret.expose();
    assert!(!log.contains(&exposed) && !log.contains(exposed.trim_start_matches("whsec_")));
    // A secret of the wrong format stops the service at start, saying why.
    let world = svc::startup::World {
        payments: svc::startup::Payments::Http {
            base_url: "http://127.0.0.1:9".into(),
            api_key: "sk".into(),
            webhook_secrets: vec!["not-a-secret".into()],
        },
        ..Default::default()
    };
    let origins =
        svc::config::RuntimeSettings::default().origins("127.0.0.1:8080".parse().unwrap());
    let refused = svc::startup::services(
        &svc::startup::Stores::memory(),
        svc_ports::Environment::Live,
        &world,
        &origins,
    )
    .err()
    .expect("a malformed secret is refused");
    assert!(format!("{refused:#}").contains("whsec_"), "{refused:#}");
}

/// A signed payment whose body names `amount` twice (the provider's reader may take the first,
/// a `Value` the last) is stored as malformed and credits nothing; the same payment sent
/// readable then credits once. A review had it credited at the last amount.
#[tokio::test]
async fn a_signed_payment_naming_a_key_twice_credits_nothing() {
    let app = app().await;
    let (browser, csrf) = signed_in(&app, "twice@example.com").await;
    let created = create_checkout(&app, &browser, &csrf, Some("twice"), "starter").await;
    assert_eq!(created.status(), 201);
    let checkout: Value = created.json().await.unwrap();
    let checkout_id = checkout["checkout_id"].as_str().unwrap();
    let secret = app.payments.as_ref().unwrap().webhook_secret();
    let send = async |id: &str, body: String| -> Value {
        let now = chrono::Utc::now().timestamp();
        let resp = reqwest::Client::new()
            .post(app.url("/api/billing/webhook"))
            .header("webhook-id", id)
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", secret.sign(id, now, body.as_bytes()))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    };
    let data = |amount: &str| {
        format!(
            r#"{{"type":"payment.succeeded","data":{{"payment_id":"pay_twice","client_reference_id":"{checkout_id}","currency":"usd",{amount}}}}}"#
        )
    };
    let twice = send("msg_twice_1", data(r#""amount":1,"amount":900"#)).await;
    assert_eq!(twice["status"], "rejected", "{twice}");
    assert!(
        twice["detail"].as_str().unwrap().contains("given twice"),
        "{twice}"
    );
    let account = billing_account(&app, &browser).await;
    assert_eq!(account["credits"]["spendable"], 0, "{account}");

    let once = send("msg_twice_2", data(r#""amount":900"#)).await;
    assert_eq!(once["status"], "applied", "{once}");
    let account = billing_account(&app, &browser).await;
    assert_eq!(account["credits"]["spendable"], 1000, "{account}");
    assert_eq!(
        json!(account["receipts"].as_array().unwrap().len()),
        json!(1)
    );
}

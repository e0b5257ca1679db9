//! The sandbox's action sites, wiremock servers on loopback that its executor may reach under
//! their `.sandbox.test` names: a shop (search, product, cart, order, payment, an HTML confirmation
//! page), a booking site whose actions need a connection, and a site that fails on purpose
//! (a 500, a 30-second answer, garbage, an unconfirmed submit). Their Agent Maps are in
//! `sandbox/maps/`, published by `svc sandbox`.

use std::{
    collections::HashSet,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{method, path, path_regex},
};

pub const SHOP_HOST: &str = "shop.sandbox.test";
pub const BOOKING_HOST: &str = "booking.sandbox.test";
pub const FLAKY_HOST: &str = "flaky.sandbox.test";

const SHOP_MAP: &str = include_str!("../maps/shop.json");
const BOOKING_MAP: &str = include_str!("../maps/booking.json");
const FLAKY_MAP: &str = include_str!("../maps/flaky.json");

/// The shop's catalog: (sku, name, price in cents, in stock).
const CATALOG: &[(&str, &str, i64, bool)] = &[
    ("TEA-GREEN", "Green tea, 100 g", 650, true),
    ("TEA-BLACK", "Black tea, 100 g", 590, true),
    ("MUG-BLUE", "Blue mug", 1200, true),
    ("MUG-RED", "Red mug", 1200, false),
    ("KETTLE-1", "Kettle, 1 litre", 3400, true),
];

fn json_response(status: u16, body: Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(body)
}

fn product(sku: &str) -> Option<Value> {
    CATALOG
        .iter()
        .find(|(s, ..)| *s == sku)
        .map(|(sku, name, price, stock)| json!({"sku": sku, "name": name, "price_cents": price, "in_stock": stock}))
}

struct Bookings {
    created: bool,
}

impl Respond for Bookings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let account = request
            .headers
            .get("authorization")
            .and_then(|h| h.to_str().ok())
            .and_then(crate::auth_server::account_of_bearer);
        match (account, self.created) {
            (None, _) => json_response(401, json!({"error": "sign in to book"})),
            (Some(account), false) => json_response(
                200,
                json!({"account": account, "bookings": [{"booking_id": "bk-0", "slot_id": "2026-12-01T10:00"}]}),
            ),
            (Some(account), true) => {
                json_response(201, json!({"account": account, "booking_id": "bk-1"}))
            }
        }
    }
}

struct Search;

impl Respond for Search {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let q = request
            .url
            .query_pairs()
            .find(|(k, _)| k == "q")
            .map(|(_, v)| v.to_lowercase())
            .unwrap_or_default();
        let results: Vec<Value> = CATALOG
            .iter()
            .filter(|(_, name, ..)| name.to_lowercase().contains(&q))
            .map(|(sku, name, price, _)| json!({"sku": sku, "name": name, "price_cents": price}))
            .collect();
        json_response(200, json!({"query": q, "results": results}))
    }
}

struct Product;

impl Respond for Product {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let sku = request.url.path().rsplit('/').next().unwrap_or_default();
        match product(sku) {
            Some(p) => json_response(200, p),
            None => json_response(404, json!({"error": "no such product"})),
        }
    }
}

struct Cart(AtomicU64);

impl Respond for Cart {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let sku = body["sku"].as_str().unwrap_or_default();
        let quantity = body["quantity"].as_i64().unwrap_or(0);
        match product(sku) {
            Some(p) if (1..=10).contains(&quantity) && p["in_stock"] == true => {
                let n = self.0.fetch_add(1, Ordering::Relaxed);
                json_response(
                    201,
                    json!({"cart_id": format!("cart-{n}"), "sku": sku, "quantity": quantity,
                        "total_cents": p["price_cents"].as_i64().unwrap_or(0) * quantity}),
                )
            }
            Some(p) if p["in_stock"] == false => {
                json_response(409, json!({"error": "out of stock"}))
            }
            _ => json_response(422, json!({"error": "unknown product or quantity"})),
        }
    }
}

struct Order(AtomicU64);

impl Respond for Order {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        match body["cart_id"].as_str() {
            Some(cart) if cart.starts_with("cart-") => {
                let n = self.0.fetch_add(1, Ordering::Relaxed);
                json_response(
                    201,
                    json!({"order_id": format!("ord-{n}"), "cart_id": cart, "status": "placed"}),
                )
            }
            // The trap a careless executor falls into: 200, but nothing was ordered.
            _ => json_response(200, json!({"status": "rejected", "error": "no such cart"})),
        }
    }
}

/// Order ids whose payment the shop has settled: the order page shows them paid.
type PaidOrders = Arc<Mutex<HashSet<String>>>;

/// Payments for orders: an `ord-...` order and a positive amount are paid; anything else is
/// declined (402), so a payment can fail on purpose. A payment for an `ord-pending...` order is
/// accepted but never settles, so its order page keeps showing it unpaid (a business outcome
/// that cannot be verified).
struct Payment(AtomicU64, PaidOrders);

impl Respond for Payment {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let amount = body["amount"].as_i64().unwrap_or(0);
        match body["order_id"].as_str() {
            // The shop breaks mid-payment: whether the money moved is unknown.
            Some(order) if order.starts_with("ord-crash") => {
                json_response(500, json!({"error": "payment processor error"}))
            }
            Some(order) if order.starts_with("ord-") && amount > 0 => {
                if !order.starts_with("ord-pending") {
                    self.1
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(order.to_owned());
                }
                let n = self.0.fetch_add(1, Ordering::Relaxed);
                json_response(
                    201,
                    json!({"payment_id": format!("pay-{n}"), "order_id": order, "amount": amount,
                        "currency": "usd", "status": "paid"}),
                )
            }
            _ => json_response(402, json!({"status": "declined", "error": "no such order"})),
        }
    }
}

/// An order's confirmation page: its status, and whether the shop has settled its payment.
struct OrderPage(PaidOrders);

impl Respond for OrderPage {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let id = request.url.path().rsplit('/').next().unwrap_or_default();
        let paid = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id);
        let payment = if paid { "Paid" } else { "Awaiting payment" };
        let html = format!(
            "<!doctype html><html><head><title>Order {id}</title></head><body><h1>Order {id}</h1>\
             <p>Status: <span id=\"order-status\">Placed</span></p>\
             <p>Payment: <span id=\"payment-status\">{payment}</span></p></body></html>"
        );
        ResponseTemplate::new(200).set_body_raw(html.into_bytes(), "text/html; charset=utf-8")
    }
}

async fn server() -> MockServer {
    // No request log: the sandbox serves benchmarks, and every recorded request is kept.
    MockServer::builder()
        .disable_request_recording()
        .start()
        .await
}

/// One running action site and its map.
pub struct ActionSite {
    pub host: &'static str,
    server: MockServer,
    map_template: &'static str,
}

impl ActionSite {
    pub fn address(&self) -> SocketAddr {
        *self.server.address()
    }

    /// `http://{host}:{port}`: the origin the site's map points at.
    pub fn origin(&self) -> String {
        format!("http://{}:{}", self.host, self.address().port())
    }

    /// The site's Agent Map document (JSON), pointing at this running site.
    pub fn map_json(&self) -> String {
        self.map_template.replace("{base_url}", &self.origin())
    }
}

/// All of the sandbox's action sites.
pub struct ActionSites {
    pub sites: Vec<ActionSite>,
}

impl ActionSites {
    pub async fn start() -> Self {
        let shop = server().await;
        let paid = PaidOrders::default();
        Mock::given(method("GET"))
            .and(path("/api/products"))
            .respond_with(Search)
            .mount(&shop)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(r"^/api/products/[^/]+$"))
            .respond_with(Product)
            .mount(&shop)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/cart"))
            .respond_with(Cart(AtomicU64::new(1)))
            .mount(&shop)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/orders"))
            .respond_with(Order(AtomicU64::new(1)))
            .mount(&shop)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/payments"))
            .respond_with(Payment(AtomicU64::new(1), paid.clone()))
            .mount(&shop)
            .await;
        Mock::given(method("GET"))
            .and(path_regex(r"^/orders/[^/]+$"))
            .respond_with(OrderPage(paid))
            .mount(&shop)
            .await;

        // The booking site acts for the account whose access token (from the sandbox's
        // authorization server) comes with the request; without one it answers 401.
        let booking = server().await;
        Mock::given(method("GET"))
            .and(path("/api/bookings"))
            .respond_with(Bookings { created: false })
            .mount(&booking)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/bookings"))
            .respond_with(Bookings { created: true })
            .mount(&booking)
            .await;

        let flaky = server().await;
        Mock::given(method("GET"))
            .and(path("/api/fail"))
            .respond_with(json_response(500, json!({"error": "boom"})))
            .mount(&flaky)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/slow"))
            .respond_with(
                json_response(200, json!({"ok": true})).set_delay(Duration::from_secs(30)),
            )
            .mount(&flaky)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/garbage"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(b"<<<\x00 not json".to_vec(), "application/json"),
            )
            .mount(&flaky)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/submit"))
            .respond_with(json_response(
                200,
                json!({"accepted": false, "reason": "queued for review"}),
            ))
            .mount(&flaky)
            .await;

        Self {
            sites: vec![
                ActionSite {
                    host: SHOP_HOST,
                    server: shop,
                    map_template: SHOP_MAP,
                },
                ActionSite {
                    host: BOOKING_HOST,
                    server: booking,
                    map_template: BOOKING_MAP,
                },
                ActionSite {
                    host: FLAKY_HOST,
                    server: flaky,
                    map_template: FLAKY_MAP,
                },
            ],
        }
    }

    pub fn site(&self, host: &str) -> Option<&ActionSite> {
        self.sites.iter().find(|s| s.host == host)
    }
}

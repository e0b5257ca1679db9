use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn xff(proxies: &TrustedProxies, peer: &str, values: &[&str]) -> IpAddr {
    proxies.client(ip(peer), values.iter().copied())
}

fn fwd(list: &str) -> TrustedProxies {
    TrustedProxies::parse(list)
        .unwrap()
        .reading(ForwardingHeader::Forwarded)
}

#[test]
fn lists_parse_blocks_and_bare_addresses_and_refuse_the_rest() {
    let p = TrustedProxies::parse(" 10.0.0.0/8, 192.0.2.7 ,2001:db8::/32,::1,").unwrap();
    assert_eq!(p.blocks().len(), 4);
    assert!(p.trusts(ip("10.200.3.4")));
    assert!(p.trusts(ip("192.0.2.7")));
    assert!(!p.trusts(ip("192.0.2.8")), "a bare address is a /32");
    assert!(p.trusts(ip("2001:db8:ffff::1")));
    assert!(p.trusts(ip("::1")));
    assert!(!p.trusts(ip("::2")), "a bare IPv6 address is a /128");
    assert!(
        p.trusts(ip("::ffff:10.1.2.3")),
        "an IPv4-mapped peer is its IPv4 address"
    );
    assert!(TrustedProxies::parse("").unwrap().is_empty());
    assert!(
        TrustedProxies::parse("0.0.0.0/0")
            .unwrap()
            .trusts(ip("8.8.8.8"))
    );
    for bad in [
        "10.0.0.0/33",
        "2001:db8::/129",
        "10.0.0.0/",
        "10.0.0.0/+8",
        "10.0.0/8",
        "example.com",
        "10.0.0.1/8/8",
        "10.0.0.1 10.0.0.2",
    ] {
        let err = TrustedProxies::parse(&format!("127.0.0.1,{bad}")).unwrap_err();
        assert_eq!(err.entry, bad.trim(), "{bad}");
    }
}

#[test]
fn an_untrusted_peer_is_the_client_whatever_the_headers_say() {
    let none = TrustedProxies::none();
    assert_eq!(
        xff(&none, "203.0.113.9", &["198.51.100.1"]),
        ip("203.0.113.9")
    );
    let some = TrustedProxies::parse("10.0.0.0/8").unwrap();
    assert_eq!(
        xff(&some, "203.0.113.9", &["198.51.100.1"]),
        ip("203.0.113.9")
    );
    assert_eq!(
        fwd("10.0.0.0/8").client(ip("203.0.113.9"), ["for=198.51.100.1"]),
        ip("203.0.113.9")
    );
}

#[test]
fn the_walk_goes_right_to_left_through_trusted_proxies() {
    let p = TrustedProxies::parse("10.0.0.0/8, 192.0.2.1").unwrap();
    // The client forged the left part; the proxies appended the rest.
    assert_eq!(
        xff(
            &p,
            "10.0.0.5",
            &["6.6.6.6, 198.51.100.7, 192.0.2.1, 10.1.1.1"]
        ),
        ip("198.51.100.7")
    );
    // Several headers are one list, in order.
    assert_eq!(
        xff(&p, "10.0.0.5", &["6.6.6.6", "198.51.100.7", "10.1.1.1"]),
        ip("198.51.100.7")
    );
    // All trusted: the left-most.
    assert_eq!(xff(&p, "10.0.0.5", &["10.9.9.9, 10.1.1.1"]), ip("10.9.9.9"));
    // No header: the peer.
    assert_eq!(xff(&p, "10.0.0.5", &[]), ip("10.0.0.5"));
    // A malformed entry ends the walk at the last good address.
    assert_eq!(
        xff(&p, "10.0.0.5", &["198.51.100.7, garbage, 10.1.1.1"]),
        ip("10.1.1.1")
    );
    assert_eq!(xff(&p, "10.0.0.5", &["198.51.100.7, "]), ip("10.0.0.5"));
    // Ports and brackets are tolerated; IPv4-mapped addresses are IPv4.
    assert_eq!(
        xff(&p, "10.0.0.5", &["198.51.100.7:5555"]),
        ip("198.51.100.7")
    );
    assert_eq!(
        xff(&p, "10.0.0.5", &["[2001:db8::7]:443"]),
        ip("2001:db8::7")
    );
    assert_eq!(xff(&p, "10.0.0.5", &["[2001:db8::7]"]), ip("2001:db8::7"));
    assert_eq!(
        xff(&p, "::ffff:10.0.0.5", &["::ffff:198.51.100.7"]),
        ip("198.51.100.7")
    );
}

#[test]
fn forwarded_nodes_are_read_per_rfc_7239() {
    let p = fwd("10.0.0.0/8");
    let client = |values: &[&str]| p.client(ip("10.0.0.5"), values.iter().copied());
    assert_eq!(
        client(&[r#"for=6.6.6.6, for="[2001:db8::1]:4711";proto=https, For=10.2.2.2"#]),
        ip("2001:db8::1")
    );
    assert_eq!(
        client(&["for=192.0.2.60;proto=http;by=203.0.113.43"]),
        ip("192.0.2.60")
    );
    assert_eq!(client(&[r#"for="192.0.2.60:8080""#]), ip("192.0.2.60"));
    // unknown and obfuscated identifiers end the walk: the last good address stands.
    assert_eq!(client(&["for=198.51.100.1, for=unknown"]), ip("10.0.0.5"));
    assert_eq!(
        client(&["for=198.51.100.1, for=_hidden, for=10.3.3.3"]),
        ip("10.3.3.3")
    );
    assert_eq!(client(&[r#"for="[2001:db8::1]:_port""#]), ip("2001:db8::1"));
    // Malformed: unbracketed IPv6, a missing `for`, an unclosed quote, two `for`s.
    for bad in [
        "for=2001:db8::1",
        "proto=https",
        r#"for="192.0.2.1"#,
        "for=192.0.2.1;for=192.0.2.2",
        "for=192.0.2.1:99999",
        "for",
    ] {
        assert_eq!(client(&[bad]), ip("10.0.0.5"), "{bad}");
    }
    // An unclosed quote from the client cannot swallow what the proxy appended.
    assert_eq!(
        client(&[r#"for="6.6.6.6, for=198.51.100.9"#]),
        ip("198.51.100.9")
    );
    // Several headers are one list; X-Forwarded-For is not read.
    assert_eq!(
        client(&["for=6.6.6.6", "for=198.51.100.9"]),
        ip("198.51.100.9")
    );
    let xff_reader = TrustedProxies::parse("10.0.0.0/8").unwrap();
    assert_eq!(
        xff(&xff_reader, "10.0.0.5", &["for=198.51.100.9"]),
        ip("10.0.0.5"),
        "a Forwarded-shaped value is malformed X-Forwarded-For"
    );
}

#[test]
fn the_old_switch_trusts_the_immediate_peer_for_one_hop() {
    let p = TrustedProxies::immediate_peer_only();
    assert!(!p.is_empty());
    assert_eq!(
        xff(&p, "203.0.113.1", &["6.6.6.6, 198.51.100.7"]),
        ip("198.51.100.7")
    );
    assert_eq!(
        xff(&p, "203.0.113.1", &["6.6.6.6, junk"]),
        ip("203.0.113.1")
    );
    assert_eq!(xff(&p, "203.0.113.1", &[]), ip("203.0.113.1"));
}

fn any_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    ]
}

/// Header text a client may send: addresses it picks, near-misses, separators and quotes.
fn client_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any_ip().prop_map(|ip| ip.to_string()),
        any_ip().prop_map(|ip| format!("for={ip}")),
        any_ip().prop_map(|ip| format!("for=\"[{ip}]:1\"")),
        Just(",".to_owned()),
        Just(";".to_owned()),
        Just("\"".to_owned()),
        Just(" ".to_owned()),
        Just("unknown".to_owned()),
        "[ -~]{0,12}",
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest! {
    /// From a peer that is not trusted, nothing a client writes in either header moves the
    /// client off the peer's own address.
    #[test]
    fn headers_from_an_untrusted_peer_never_choose_the_client(
        peer in any_ip(),
        values in proptest::collection::vec(client_text(), 0..3),
        forwarded in any::<bool>(),
    ) {
        let mut proxies = TrustedProxies::parse("10.0.0.0/8, 2001:db8::/32").unwrap();
        if forwarded {
            proxies = proxies.reading(ForwardingHeader::Forwarded);
        }
        prop_assume!(!proxies.trusts(peer));
        let got = proxies.client(peer, values.iter().map(String::as_str));
        prop_assert_eq!(got, peer.to_canonical());
        let none = TrustedProxies::none();
        prop_assert_eq!(none.client(peer, values.iter().map(String::as_str)), peer.to_canonical());
    }

    /// One trusted proxy appends the address it saw (its peer, the real client) to whatever
    /// the client sent: the forged left part never wins.
    #[test]
    fn behind_one_trusted_proxy_a_forged_left_part_never_wins(
        real in any_ip(),
        forged in client_text(),
        forwarded in any::<bool>(),
        separate_header in any::<bool>(),
    ) {
        let proxy = ip("10.0.0.1");
        let mut proxies = TrustedProxies::parse("10.0.0.1").unwrap();
        prop_assume!(!proxies.trusts(real));
        let appended = if forwarded {
            proxies = proxies.reading(ForwardingHeader::Forwarded);
            match real {
                IpAddr::V4(v4) => format!("for={v4}"),
                IpAddr::V6(v6) => format!("for=\"[{v6}]\""),
            }
        } else {
            real.to_string()
        };
        let values: Vec<String> = if separate_header {
            vec![forged, appended]
        } else {
            vec![format!("{forged}, {appended}")]
        };
        let got = proxies.client(proxy, values.iter().map(String::as_str));
        prop_assert_eq!(got, real.to_canonical());
    }
}

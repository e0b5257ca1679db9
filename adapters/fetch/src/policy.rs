//! Which hosts and addresses may be fetched. Everything that is not a public unicast address
//! is refused: loopback, private, link-local, CGNAT, unique-local, multicast, broadcast,
//! documentation and reserved ranges, cloud metadata, and IPv6 forms that embed an IPv4
//! address (mapped, compatible, NAT64, 6to4, Teredo) unless the embedded address is public.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use svc_ports::UrlRefusal;
use url::{Host, Url};

/// Host names that point at cloud metadata services or the machine itself, refused by name
/// before any lookup.
const INTERNAL_NAMES: &[&str] = &[
    "localhost",
    "localhost.localdomain",
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
];

const INTERNAL_SUFFIXES: &[&str] = &[
    ".localhost",
    ".internal",
    ".local",
    ".home.arpa",
    ".localdomain",
];

fn v4_in(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

/// The name of the forbidden range `ip` falls in, or `None` for a public unicast address.
pub fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([169, 254, 169, 254], 32, "cloud metadata"),
        ([100, 100, 100, 200], 32, "cloud metadata"),
        ([0, 0, 0, 0], 8, "unspecified (this network)"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "carrier-grade NAT"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "IETF protocol assignment"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 88, 99, 0], 24, "6to4 relay anycast"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([255, 255, 255, 255], 32, "broadcast"),
        ([240, 0, 0, 0], 4, "reserved"),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| v4_in(ip, *net, *prefix))
        .map(|(_, _, name)| *name)
}

fn v6_in(ip: Ipv6Addr, net: Ipv6Addr, prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(ip) & mask) == (u128::from(net) & mask)
}

fn embedded_v4(bits: u128, shift: u32) -> Ipv4Addr {
    Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32)
}

pub fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // Forms that carry an IPv4 address: judge by it (a public one is fine, anything else is not).
    let embedding: &[(Ipv6Addr, u32, u32, &str)] = &[
        (
            Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
            96,
            0,
            "IPv4-mapped",
        ),
        (
            Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
            96,
            0,
            "IPv4-compatible",
        ),
        (
            Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
            96,
            0,
            "NAT64",
        ),
        (
            Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
            48,
            0,
            "NAT64 (local)",
        ),
        (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, 80, "6to4"),
    ];
    for (net, prefix, shift, name) in embedding {
        if v6_in(ip, *net, *prefix) {
            let v4 = embedded_v4(bits, *shift);
            return forbidden_v4(v4).map(|_| *name).or(if *prefix == 48 {
                Some(*name)
            } else {
                None
            });
        }
    }
    const RANGES: &[(Ipv6Addr, u32, &str)] = &[
        (
            Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
            128,
            "cloud metadata",
        ),
        (
            Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
            64,
            "discard-only",
        ),
        (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "Teredo"),
        (
            Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
            23,
            "IETF protocol assignment",
        ),
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            32,
            "documentation",
        ),
        (
            Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
            20,
            "documentation",
        ),
        (
            Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
            16,
            "segment routing",
        ),
        (
            Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
            7,
            "unique-local",
        ),
        (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
        (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
        (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
    ];
    if let Some((_, _, name)) = RANGES
        .iter()
        .find(|(net, prefix, _)| v6_in(ip, *net, *prefix))
    {
        return Some(name);
    }
    // Only global unicast (2000::/3) is routable on the internet.
    if !v6_in(ip, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return Some("reserved");
    }
    None
}

pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn is_internal_name(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    INTERNAL_NAMES.contains(&host)
        || INTERNAL_SUFFIXES.iter().any(|s| host.ends_with(s))
        || !host.contains('.')
}

/// The Fetch Standard's bad ports (<https://fetch.spec.whatwg.org/#port-blocking>): services
/// that speak a line-based protocol a forged HTTP request could talk to (SMTP, IRC, SIP, ...).
const BAD_PORTS: &[u16] = &[
    0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101,
    102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427,
    465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990,
    993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667,
    6668, 6669, 6679, 6697, 10080,
];

/// Checks what can be checked without a lookup: scheme, credentials, bad ports, IP literals and
/// internal names. Returns the host name to resolve, or `None` when the host is an allowed IP
/// literal. `sandbox_host` says whether a name is one of the sandbox's own demo hosts (which
/// may listen on any port).
pub fn check_url(
    url: &Url,
    sandbox_host: impl Fn(&str, u16) -> bool,
) -> Result<Option<String>, UrlRefusal> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(UrlRefusal::Scheme {
                scheme: other.to_owned(),
            });
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlRefusal::Credentials);
    }
    let port = url.port_or_known_default().unwrap_or(0);
    match url.host() {
        None => Err(UrlRefusal::Unparsable {
            detail: "no host".into(),
        }),
        Some(Host::Ipv4(ip)) => refuse_ip(url, IpAddr::V4(ip))
            .and_then(|()| refuse_port(port))
            .map(|()| None),
        Some(Host::Ipv6(ip)) => refuse_ip(url, IpAddr::V6(ip))
            .and_then(|()| refuse_port(port))
            .map(|()| None),
        Some(Host::Domain(name)) => {
            // `demo.sandbox.test.` is `demo.sandbox.test`: the resolver reads it so, and the
            // checks must too (with the dot, a pinned name's port went unchecked).
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if sandbox_host(&name, port) {
                return Ok(Some(name));
            }
            if is_internal_name(&name) {
                return Err(UrlRefusal::InternalName { host: name });
            }
            refuse_port(port)?;
            Ok(Some(name))
        }
    }
}

fn refuse_port(port: u16) -> Result<(), UrlRefusal> {
    match BAD_PORTS.binary_search(&port) {
        Ok(_) => Err(UrlRefusal::Port { port }),
        Err(_) => Ok(()),
    }
}

fn refuse_ip(url: &Url, ip: IpAddr) -> Result<(), UrlRefusal> {
    match forbidden(ip) {
        Some(range) => Err(UrlRefusal::Address {
            host: url.host_str().unwrap_or_default().to_owned(),
            address: ip.to_string(),
            range,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bad_ports_are_sorted_for_the_search() {
        assert!(BAD_PORTS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:93.184.216.34",
            "64:ff9b::808:808",
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn every_non_public_range_is_refused() {
        let cases = [
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.0.1", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("169.254.1.1", "link-local"),
            ("169.254.169.254", "cloud metadata"),
            ("100.100.100.200", "cloud metadata"),
            ("0.0.0.0", "unspecified (this network)"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "IPv4-mapped"),
            ("::ffff:10.0.0.1", "IPv4-mapped"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("64:ff9b::7f00:1", "NAT64"),
            ("2002:7f00:1::", "6to4"),
            ("fd00:ec2::254", "cloud metadata"),
            ("fc00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001::1", "Teredo"),
        ];
        for (ip, range) in cases {
            assert_eq!(forbidden(ip.parse().unwrap()), Some(range), "{ip}");
        }
    }

    #[test]
    fn urls_are_checked_before_lookup() {
        let no_sandbox = |_: &str, _: u16| false;
        let check = |s: &str| check_url(&Url::parse(s).unwrap(), no_sandbox);
        assert!(matches!(
            check("ftp://example.com/"),
            Err(UrlRefusal::Scheme { .. })
        ));
        assert!(matches!(
            check("http://u:p@example.com/"),
            Err(UrlRefusal::Credentials)
        ));
        assert!(matches!(
            check("http://2130706433/"),
            Err(UrlRefusal::Address { .. })
        ));
        assert!(matches!(
            check("http://metadata.google.internal/"),
            Err(UrlRefusal::InternalName { .. })
        ));
        assert!(matches!(
            check("http://intranet/"),
            Err(UrlRefusal::InternalName { .. })
        ));
        assert_eq!(
            check("https://Example.COM/x").unwrap(),
            Some("example.com".into())
        );
        assert_eq!(check("http://93.184.216.34/").unwrap(), None);
        // Ports of other protocols, named or as IP literals; the web's usual ports pass.
        for bad in [
            "http://example.com:25/",
            "https://example.com:6667/",
            "http://93.184.216.34:22/",
            "http://[2606:4700:4700::1111]:5060/",
            "http://example.com:0/",
        ] {
            assert!(matches!(check(bad), Err(UrlRefusal::Port { .. })), "{bad}");
        }
        for good in [
            "http://example.com:8080/",
            "https://example.com:443/",
            "http://example.com:80/",
            "https://93.184.216.34:8443/",
            "http://example.com:3000/",
        ] {
            assert!(check(good).is_ok(), "{good}");
        }
        let sandbox = |h: &str, p: u16| h == "shop.sandbox.test" && p == 9000;
        assert!(
            check_url(
                &Url::parse("http://shop.sandbox.test:9000/").unwrap(),
                sandbox
            )
            .is_ok()
        );
    }

    proptest! {
        #[test]
        fn private_v4_is_refused_in_every_v6_wrapping(a in 0u8..=255, b in 0u8..=255) {
            let v4 = Ipv4Addr::new(10, a, b, 1);
            prop_assert!(forbidden(IpAddr::V4(v4)).is_some());
            prop_assert!(forbidden(IpAddr::V6(v4.to_ipv6_mapped())).is_some());
            prop_assert!(forbidden(IpAddr::V6(v4.to_ipv6_compatible())).is_some());
        }

        #[test]
        fn check_url_never_panics(s in "\\PC{0,80}") {
            if let Ok(u) = Url::parse(&s) {
                let _ = check_url(&u, |_, _| false);
            }
        }
    }
}

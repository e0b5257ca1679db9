//! Who a request comes from, as counted by every per-address limit.

use std::{
    fmt,
    net::{IpAddr, Ipv6Addr},
};

/// A client's address as limits count it: an IPv4 address, or the /64 network of an IPv6 one
/// (one IPv6 client usually holds a whole /64, so counting single addresses lets it rotate
/// past every limit). An IPv4-mapped IPv6 address counts as its IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientAddress(IpAddr);

impl ClientAddress {
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let mut segments = v6.segments();
                    segments[4..].fill(0);
                    Self(IpAddr::V6(Ipv6Addr::from(segments)))
                }
            },
        }
    }

    /// The counted address (an IPv6 one with its interface bits zeroed).
    pub fn ip(self) -> IpAddr {
        self.0
    }
}

impl From<IpAddr> for ClientAddress {
    fn from(ip: IpAddr) -> Self {
        Self::of(ip)
    }
}

impl std::str::FromStr for ClientAddress {
    type Err = std::net::AddrParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<IpAddr>().map(Self::of)
    }
}

impl fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(s: &str) -> ClientAddress {
        ClientAddress::of(s.parse().unwrap())
    }

    #[test]
    fn an_ipv6_client_counts_as_its_64_and_a_mapped_v4_as_itself() {
        assert_eq!(
            of("2001:db8:1:2::1"),
            of("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(of("2001:db8:1:2::1"), of("2001:db8:1:3::1"));
        assert_eq!(of("::ffff:203.0.113.7"), of("203.0.113.7"));
        assert_ne!(of("203.0.113.7"), of("203.0.113.8"));
        assert_eq!(of("2001:db8:1:2:aaaa::1").to_string(), "2001:db8:1:2::/64");
        assert_eq!(of("203.0.113.7").to_string(), "203.0.113.7");
    }
}

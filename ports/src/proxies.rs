//! Which proxies may name the client: `SVC_TRUSTED_PROXIES`, and the walk through
//! `X-Forwarded-For` / `Forwarded` (RFC 7239) that finds the client behind them.
//!
//! A client controls everything left of what the first trusted proxy appended, so the walk goes
//! from the right: the socket's peer, then each entry while the address reached so far is a
//! trusted proxy. The first address that is not a trusted proxy is the client. A header from a
//! peer that is not trusted is ignored, whatever it says.

use std::{fmt, net::IpAddr, str::FromStr};

/// One CIDR block (`10.0.0.0/8`, `2001:db8::/32`); a bare address is a /32 or /128.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}` is not an IP address or CIDR block (such as 10.0.0.0/8 or 2001:db8::/32)")]
pub struct ProxyListError {
    pub entry: String,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = ProxyListError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ProxyListError {
            entry: s.to_owned(),
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let network = addr.parse::<IpAddr>().map_err(|_| bad())?.to_canonical();
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?
            }
            Some(_) => return Err(bad()),
        };
        Ok(Self { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// Which header the trusted proxies write. Only that one is read: a proxy passes a header it
/// does not write through unchanged, so the other one is wholly the client's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardingHeader {
    /// `X-Forwarded-For: client, proxy1, proxy2` (what most proxies and load balancers write).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client;proto=https, for="[2001:db8::1]:4711"`.
    Forwarded,
}

impl ForwardingHeader {
    pub fn as_str(self) -> &'static str {
        match self {
            ForwardingHeader::XForwardedFor => "x-forwarded-for",
            ForwardingHeader::Forwarded => "forwarded",
        }
    }
}

impl FromStr for ForwardingHeader {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(Self::XForwardedFor),
            "forwarded" => Ok(Self::Forwarded),
            other => Err(format!(
                "`{other}` is not a forwarding header: use x-forwarded-for or forwarded"
            )),
        }
    }
}

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    blocks: Vec<Cidr>,
    header: ForwardingHeader,
    /// `SVC_TRUST_FORWARDED_FOR=true`: whatever the peer is, it is one trusted proxy, and the
    /// right-most entry (the one it appended) is the client.
    any_peer_one_hop: bool,
}

/// One entry of a forwarding header: an address, or something that ends the walk (`unknown`,
/// an obfuscated identifier, anything malformed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    Addr(IpAddr),
    Opaque,
}

impl TrustedProxies {
    /// No proxy is trusted: the client is the socket's peer and forwarding headers are ignored.
    pub fn none() -> Self {
        Self::default()
    }

    /// A comma-separated list of CIDR blocks or bare addresses; blanks around entries are
    /// ignored, an empty list trusts nobody.
    pub fn parse(list: &str) -> Result<Self, ProxyListError> {
        let blocks = list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::parse)
            .collect::<Result<Vec<Cidr>, _>>()?;
        Ok(Self {
            blocks,
            header: ForwardingHeader::default(),
            any_peer_one_hop: false,
        })
    }

    /// Reads `header` (instead of `X-Forwarded-For`).
    pub fn reading(mut self, header: ForwardingHeader) -> Self {
        self.header = header;
        self
    }

    pub fn header(&self) -> ForwardingHeader {
        self.header
    }

    /// The meaning of the old `SVC_TRUST_FORWARDED_FOR=true`: the immediate peer is trusted,
    /// whoever it is, for one hop.
    pub fn immediate_peer_only() -> Self {
        Self {
            blocks: Vec::new(),
            header: ForwardingHeader::XForwardedFor,
            any_peer_one_hop: true,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty() && !self.any_peer_one_hop
    }

    pub fn blocks(&self) -> &[Cidr] {
        &self.blocks
    }

    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.blocks.iter().any(|b| b.contains(ip))
    }

    /// The client behind `peer`. `values` are those of every header of the name
    /// [`TrustedProxies::header`] reads, in the order received (several headers of one name
    /// are one list); a peer that is not trusted is the client, whatever they say.
    pub fn client<'a>(&self, peer: IpAddr, values: impl IntoIterator<Item = &'a str>) -> IpAddr {
        let peer = peer.to_canonical();
        if !(self.any_peer_one_hop || self.trusts(peer)) {
            return peer;
        }
        let hops: Vec<Hop> = match self.header {
            ForwardingHeader::Forwarded => values.into_iter().flat_map(forwarded_hops).collect(),
            ForwardingHeader::XForwardedFor => values
                .into_iter()
                .flat_map(|v| v.split(','))
                .map(|e| parse_xff_entry(e.trim()))
                .collect(),
        };
        if self.any_peer_one_hop {
            return match hops.last() {
                Some(Hop::Addr(ip)) => *ip,
                _ => peer,
            };
        }
        let mut client = peer;
        for hop in hops.iter().rev() {
            match hop {
                Hop::Opaque => return client,
                Hop::Addr(ip) => {
                    client = *ip;
                    if !self.trusts(client) {
                        return client;
                    }
                }
            }
        }
        client
    }
}

impl FromStr for TrustedProxies {
    type Err = ProxyListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.any_peer_one_hop {
            return f.write_str("the immediate peer (one hop)");
        }
        let list: Vec<String> = self.blocks.iter().map(Cidr::to_string).collect();
        write!(f, "{} (read from {})", list.join(","), self.header.as_str())
    }
}

/// An `X-Forwarded-For` entry: an address, optionally with a port (`192.0.2.1:443`,
/// `[2001:db8::1]:443`, `[2001:db8::1]`).
fn parse_xff_entry(e: &str) -> Hop {
    if let Ok(ip) = e.parse::<IpAddr>() {
        return Hop::Addr(ip.to_canonical());
    }
    if let Ok(sa) = e.parse::<std::net::SocketAddr>() {
        return Hop::Addr(sa.ip().to_canonical());
    }
    if let Some(inner) = e.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
        && let Ok(ip) = inner.parse::<std::net::Ipv6Addr>()
    {
        return Hop::Addr(IpAddr::V6(ip).to_canonical());
    }
    Hop::Opaque
}

/// The `for=` node of each element of one `Forwarded` value (RFC 7239 §4), left to right. An
/// element without `for`, or one that does not parse, is [`Hop::Opaque`]. Elements and pairs
/// are split at every `,` and `;`, quoted or not: a quoted string a client left open must not
/// swallow the element a trusted proxy appended after it (no valid node holds either).
fn forwarded_hops(value: &str) -> Vec<Hop> {
    value
        .split(',')
        .map(|element| {
            let mut node = None;
            for pair in element.split(';') {
                let Some((name, v)) = pair.split_once('=') else {
                    if pair.trim().is_empty() {
                        continue;
                    }
                    return Hop::Opaque;
                };
                if name.trim().eq_ignore_ascii_case("for") {
                    if node.is_some() {
                        return Hop::Opaque;
                    }
                    node = Some(v.trim());
                }
            }
            node.and_then(unquote)
                .map(|n| parse_node(&n))
                .unwrap_or(Hop::Opaque)
        })
        .collect()
}

/// A token, or a quoted string with its escapes resolved; `None` for an unclosed quote.
fn unquote(v: &str) -> Option<String> {
    let Some(inner) = v.strip_prefix('"') else {
        return (!v.contains('"')).then(|| v.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// RFC 7239 §6: `IPv4[:port]`, `"[IPv6][:port]"`; `unknown` and `_obfuscated` are opaque.
fn parse_node(node: &str) -> Hop {
    if let Some(rest) = node.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return Hop::Opaque;
        };
        if !(after.is_empty() || after.starts_with(':') && valid_port(&after[1..])) {
            return Hop::Opaque;
        }
        return v6
            .parse::<std::net::Ipv6Addr>()
            .map(|ip| Hop::Addr(IpAddr::V6(ip).to_canonical()))
            .unwrap_or(Hop::Opaque);
    }
    let (host, port) = match node.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (node, None),
    };
    if port.is_some_and(|p| !valid_port(p)) {
        return Hop::Opaque;
    }
    host.parse::<std::net::Ipv4Addr>()
        .map(|ip| Hop::Addr(IpAddr::V4(ip)))
        .unwrap_or(Hop::Opaque)
}

/// A port number or an obfuscated port (`_` followed by letters, digits, `.`, `_`, `-`).
fn valid_port(p: &str) -> bool {
    (p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok())
        || (p.len() > 1
            && p.starts_with('_')
            && p[1..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')))
}

#[cfg(test)]
mod tests;

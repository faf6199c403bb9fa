//! `onrush agent --allow-targets CIDR,...`: the operator of a shared load farm lets its
//! agents load only some networks; a plan that targets anything else is refused before any
//! load, with the address named.

use std::net::{IpAddr, SocketAddr};

/// One network, `ADDR/BITS` (a bare address is the host alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 address seen as IPv6 (::ffff:a.b.c.d) is that IPv4 address.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Parses `10.0.0.0/8,192.168.1.7,::1/128`.
pub fn parse_list(s: &str) -> Result<Vec<Cidr>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (addr, bits) = match part.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (part, None),
            };
            let addr: IpAddr = addr.parse().map_err(|_| {
                format!(
                    "{part:?} is not an address or a network; write e.g. 10.0.0.0/8 or 127.0.0.1"
                )
            })?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(b) => b
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("{part:?}: the prefix length must be 0 to {max}"))?,
            };
            Ok(Cidr { addr, bits })
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|l| {
            if l.is_empty() {
                Err("--allow-targets is empty; give networks such as 10.0.0.0/8".into())
            } else {
                Ok(l)
            }
        })
}

/// `Err` naming the first target outside `allowed`.
pub fn check(targets: &[SocketAddr], allowed: &[Cidr]) -> Result<(), String> {
    for t in targets {
        if !allowed.iter().any(|c| c.contains(t.ip())) {
            let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            return Err(format!(
                "refused: the plan targets {t}, outside this agent's --allow-targets {}; no load \
                 was generated",
                list.join(",")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_contain_what_they_should() {
        let l = parse_list("10.0.0.0/8, 127.0.0.1,::1/128,fd00::/8").unwrap();
        let ok = |s: &str| check(&[s.parse().unwrap()], &l).is_ok();
        assert!(ok("10.200.3.4:80"));
        assert!(ok("127.0.0.1:8080"));
        assert!(!ok("127.0.0.2:8080"));
        assert!(ok("[::1]:443"));
        assert!(ok("[fd12::1]:443"));
        assert!(!ok("[fe80::1]:443"));
        assert!(ok("[::ffff:10.1.1.1]:80"));
        assert!(!ok("192.168.0.1:80"));
        assert!(check(&["192.168.0.1:80".parse().unwrap()], &l)
            .unwrap_err()
            .contains("192.168.0.1:80, outside"));
        assert!(parse_list("0.0.0.0/0").unwrap()[0].contains("8.8.8.8".parse().unwrap()));
        assert!(parse_list("10.0.0.0/33").unwrap_err().contains("0 to 32"));
        assert!(parse_list("banana").unwrap_err().contains("not an address"));
        assert!(parse_list(" , ").is_err());
    }
}

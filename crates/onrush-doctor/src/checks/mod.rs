//! The checks, one function each, and what they share: finding constructors, fix commands,
//! number formatting.

pub(crate) mod cpu;
pub(crate) mod memory;
pub(crate) mod net;
pub(crate) mod nofile;

use crate::host::Unreadable;
use crate::{Finding, Status};

/// The file the persistent sysctl lines go to.
pub(crate) const SYSCTL_FILE: &str = "/etc/sysctl.d/99-onrush.conf";

pub(crate) fn ok(
    check: &'static str,
    observed: impl Into<String>,
    detail: impl Into<String>,
) -> Finding {
    Finding {
        check,
        status: Status::Ok,
        observed: observed.into(),
        detail: detail.into(),
        fix: None,
    }
}

pub(crate) fn not_ok(
    check: &'static str,
    status: Status,
    observed: impl Into<String>,
    detail: impl Into<String>,
    fix: impl Into<String>,
) -> Finding {
    Finding {
        check,
        status,
        observed: observed.into(),
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}

/// A check that could not read what it needed: a warning, never an error.
pub(crate) fn unreadable(check: &'static str, e: &Unreadable, what: &str) -> Finding {
    Finding {
        check,
        status: Status::Warn,
        observed: e.to_string(),
        detail: format!("{what} is unknown, so this check could not be made."),
        fix: None,
    }
}

/// `sysctl -w` for now, and the line that keeps it after a reboot.
pub(crate) fn sysctl_fix(name: &str, value: &str) -> String {
    let now = if value.contains(' ') {
        format!("sysctl -w {name}=\"{value}\"")
    } else {
        format!("sysctl -w {name}={value}")
    };
    format!("{now}\necho '{name} = {value}' >> {SYSCTL_FILE}")
}

/// 28232 -> "28,232".
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate or count that may be fractional, rounded for people: "470", "0.5", "1,075".
pub(crate) fn rate(x: f64) -> String {
    if x >= 10.0 || x == 0.0 {
        thousands(x.round() as u64)
    } else {
        format!("{x:.1}")
    }
}

/// Bytes for people: "512 MiB", "21.3 GiB".
pub(crate) fn bytes(n: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = n as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(28_232), "28,232");
        assert_eq!(thousands(1_048_576), "1,048,576");
        assert_eq!(rate(470.53), "471");
        assert_eq!(rate(0.46), "0.5");
        assert_eq!(bytes(512 << 20), "512 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(
            sysctl_fix("net.ipv4.ip_local_port_range", "1024 65535"),
            "sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"\n\
             echo 'net.ipv4.ip_local_port_range = 1024 65535' >> /etc/sysctl.d/99-onrush.conf"
        );
    }
}

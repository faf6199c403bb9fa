//! Why a request failed: a class per failure, named in the result files and explained by a
//! plain-language hint in the summary and the report, which shows the classes by group (the
//! family a class belongs to: `connection`, `TLS`, `HTTP`, ..., or a protocol's own: `gRPC`).
//!
//! The classes are open. onrush's own are constants (`FailureClass::Timeout`); a protocol that
//! onrush does not ship registers its own by name, in its group, when its crate prepares a plan
//! ([`FailureClass::register_in`]), and a results reader meeting a name it does not know (a
//! file written by another build) registers it too ([`FailureClass::named_or_register`]). A
//! class is a one-byte index either way: a request's failure is counted in a fixed array of
//! [`FailureClass::CAPACITY`] counters, with no lookup on the hot path; its name, group and
//! hint are looked up by that index only when results are written or shown.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::RwLock;

use onrush_results::FailureClassInfo;

use builtin::BUILTIN;

mod builtin;

/// The class of a failed request. Counted per step; `as_str()` is the name used in the
/// result files, `hint()` the advice printed in the end-of-run summary, `group()` the family
/// the report shows it under.
///
/// onrush's own classes are the associated constants (`FailureClass::ConnectRefused`, ...:
/// written like the enum variants they were, so that `match` arms and paths read the same).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FailureClass(u8);

/// What is known of a class besides its index: all of it lives for the whole process.
#[derive(Clone, Copy)]
struct Entry {
    name: &'static str,
    group: &'static str,
    hint: &'static str,
}

/// The classes registered at run time (by protocols onrush does not ship, or read from files),
/// after onrush's own: index `BUILTIN.len() + i` is `REGISTERED[i]`. Names, groups and hints
/// are leaked: at most `CAPACITY` of them live for the whole process anyway (a group once).
static REGISTERED: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

fn registered() -> std::sync::RwLockReadGuard<'static, Vec<Entry>> {
    // A panic while registering leaves a consistent vector (one push): poison is no harm.
    REGISTERED.read().unwrap_or_else(|e| e.into_inner())
}

/// Why [`FailureClass::register_in`] refused a class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "failure class name {0:?} is not lower-case snake case (a-z, 0-9, `_`, at most 48 \
         characters, starting with a letter): results files and thresholds name it"
    )]
    BadName(String),
    #[error(
        "failure class group {0:?} is not a short label (1 to {max} characters, no control \
         characters, no spaces around it): the report shows it as a heading",
        max = FailureClass::GROUP_MAX_LEN
    )]
    BadGroup(String),
    #[error(
        "cannot register failure class {0:?}: all {cap} failure classes are taken (onrush's \
         own and the registered ones)",
        cap = FailureClass::CAPACITY
    )]
    Full(String),
}

/// Appends a new class to the registered ones, unless every slot is taken.
fn push_class(
    extra: &mut Vec<Entry>,
    group: &str,
    name: &str,
    hint: &str,
) -> Result<FailureClass, RegisterError> {
    let index = BUILTIN.len() + extra.len();
    if index >= FailureClass::CAPACITY {
        return Err(RegisterError::Full(name.to_string()));
    }
    // Many classes share a group: its text is leaked once.
    let known_group = BUILTIN
        .iter()
        .chain(extra.iter())
        .find(|e| e.group == group);
    let group = match known_group {
        Some(e) => e.group,
        None => leak(group),
    };
    extra.push(Entry {
        name: leak(name),
        group,
        hint: leak(hint),
    });
    Ok(FailureClass(index as u8))
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 48
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn valid_group(group: &str) -> bool {
    !group.is_empty()
        && group.chars().count() <= FailureClass::GROUP_MAX_LEN
        && group.trim() == group
        && !group.chars().any(char::is_control)
}

impl FailureClass {
    /// How many classes a process can know: onrush's own and registered ones. Per-step
    /// counters are arrays of this size.
    pub const CAPACITY: usize = 128;

    /// How many of onrush's own classes there are (the first indexes).
    pub const BUILTIN_COUNT: usize = BUILTIN.len();

    /// The group of a class registered without one ([`FailureClass::register`]), or read from a
    /// file that did not say (a results file of an older onrush, by a build that does not
    /// know the class).
    pub const OTHER_GROUP: &'static str = FailureClassInfo::OTHER_GROUP;

    /// The longest group label, in characters.
    pub const GROUP_MAX_LEN: usize = 24;

    /// Every class known now (onrush's own, then the registered ones), in index order.
    pub fn all() -> impl Iterator<Item = FailureClass> {
        (0..FailureClass::count()).map(|i| FailureClass(i as u8))
    }

    /// How many classes are known now.
    pub fn count() -> usize {
        BUILTIN.len() + registered().len()
    }

    /// The class called `name`, if one is known.
    pub fn named(name: &str) -> Option<FailureClass> {
        if let Some(i) = BUILTIN.iter().position(|e| e.name == name) {
            return Some(FailureClass(i as u8));
        }
        let extra = registered();
        extra
            .iter()
            .position(|e| e.name == name)
            .map(|i| FailureClass((BUILTIN.len() + i) as u8))
    }

    /// Registers a class of a protocol onrush does not ship (`redis_wrongtype`) in `group`, the
    /// short label the report shows its protocol's classes under (`"Redis"`), with the hint
    /// the summary and the report print for it. Registering a known name returns the known
    /// class (its group and hint unchanged), so a protocol may register at every plan it
    /// prepares.
    ///
    /// ```
    /// use onrush_metrics::FailureClass;
    ///
    /// let moved = FailureClass::register_in(
    ///     "Redis",
    ///     "doc_redis_moved",
    ///     "a cluster node redirected the command (MOVED/ASK)",
    /// )?;
    /// assert_eq!((moved.as_str(), moved.group()), ("doc_redis_moved", "Redis"));
    /// assert_eq!(FailureClass::Timeout.group(), "connection");
    /// # Ok::<(), onrush_metrics::RegisterError>(())
    /// ```
    pub fn register_in(group: &str, name: &str, hint: &str) -> Result<FailureClass, RegisterError> {
        if !valid_name(name) {
            return Err(RegisterError::BadName(name.to_string()));
        }
        if !valid_group(group) {
            return Err(RegisterError::BadGroup(group.to_string()));
        }
        if let Some(known) = FailureClass::named(name) {
            return Ok(known);
        }
        let mut extra = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        // Another thread may have registered it between the look-up and the lock.
        if let Some(i) = extra.iter().position(|e| e.name == name) {
            return Ok(FailureClass((BUILTIN.len() + i) as u8));
        }
        push_class(&mut extra, group, name, hint)
    }

    /// [`FailureClass::register_in`] the group [`FailureClass::OTHER_GROUP`]: for a class that
    /// belongs to no protocol of its own. A protocol's classes name their protocol's group.
    pub fn register(name: &str, hint: &str) -> Result<FailureClass, RegisterError> {
        FailureClass::register_in(FailureClass::OTHER_GROUP, name, hint)
    }

    /// The class called `name`, registered without a hint (in [`FailureClass::OTHER_GROUP`])
    /// if this process does not know it (a results file written by a build with more
    /// protocols: its summary says the class's group and hint). `None` only for a name that
    /// cannot be a class, or when every slot is taken.
    pub fn named_or_register(name: &str) -> Option<FailureClass> {
        FailureClass::named(name).or_else(|| FailureClass::register(name, "").ok())
    }

    /// Dense index of the class, for per-class counter arrays of [`FailureClass::CAPACITY`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The name used in the result files (`connect_refused`, `http_5xx`, ...).
    pub fn as_str(&self) -> &'static str {
        self.entry().name
    }

    /// The family the class belongs to, a short label the report groups failures by: for
    /// onrush's own `connection`, `TLS`, `HTTP`, `response`, `checks`, `variables` or `run`;
    /// for a protocol's, its group (`gRPC`, `Thrift`, `UDP`); [`FailureClass::OTHER_GROUP`]
    /// for a class registered without one.
    pub fn group(&self) -> &'static str {
        self.entry().group
    }

    /// Plain-language advice for this class (empty for a class read from a file that this
    /// build's protocols do not register).
    pub fn hint(&self) -> &'static str {
        self.entry().hint
    }

    /// The class's group and hint, as `summary.json` records them beside its name.
    pub fn info(&self) -> FailureClassInfo {
        let entry = self.entry();
        FailureClassInfo {
            group: entry.group.to_string(),
            hint: entry.hint.to_string(),
        }
    }

    /// Whether this is one of onrush's own classes (not registered at run time).
    pub fn is_builtin(&self) -> bool {
        self.index() < BUILTIN.len()
    }

    fn entry(&self) -> Entry {
        match BUILTIN.get(self.index()) {
            Some(&entry) => entry,
            // A class value exists only once registered: the index is in the vector.
            None => registered()[self.index() - BUILTIN.len()],
        }
    }

    /// The class for a response status when the step has no `expect_status`:
    /// 4xx and 5xx are failures, anything else is not.
    pub fn for_status(status: u16) -> Option<FailureClass> {
        match status {
            400..=499 => Some(FailureClass::Http4xx),
            500..=599 => Some(FailureClass::Http5xx),
            _ => None,
        }
    }

    /// The class of an I/O error; `connecting` tells whether it happened while opening the
    /// connection (a time-out there is `ConnectTimeout`, not `Timeout`).
    pub fn from_io_error(e: &io::Error, connecting: bool) -> FailureClass {
        use io::ErrorKind as K;
        match e.kind() {
            K::ConnectionRefused => FailureClass::ConnectRefused,
            K::AddrNotAvailable => FailureClass::AddrNotAvailable,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => FailureClass::Reset,
            K::TimedOut | K::WouldBlock if connecting => FailureClass::ConnectTimeout,
            K::TimedOut => FailureClass::Timeout,
            K::UnexpectedEof => FailureClass::ClosedEarly,
            K::InvalidData => FailureClass::BadResponse,
            _ => FailureClass::Io,
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`FailureClass::from_str`]: the name is not one of the classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure class {0:?}")]
pub struct UnknownFailureClass(pub String);

impl fmt::Debug for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FailureClass({})", self.as_str())
    }
}

impl FromStr for FailureClass {
    type Err = UnknownFailureClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailureClass::named(s).ok_or_else(|| UnknownFailureClass(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indexes_are_dense() {
        for (i, c) in FailureClass::all()
            .take(FailureClass::BUILTIN_COUNT)
            .enumerate()
        {
            assert_eq!(c.index(), i);
            assert_eq!(c.as_str().parse::<FailureClass>().unwrap(), c);
            assert!(!c.hint().is_empty());
        }
        assert!("nope".parse::<FailureClass>().is_err());
        // onrush's own: transport, TLS, HTTP, checks, run events and scripts; each protocol's own
        // (gRPC's statuses, Thrift's exceptions, UDP's `no_reply`) are registered by its crate.
        assert_eq!(FailureClass::BUILTIN_COUNT, 28);
        assert!(FailureClass::all().all(|c| c.index() < FailureClass::CAPACITY));
    }

    #[test]
    fn tls_class_names_round_trip() {
        let names = [
            (
                "tls_certificate_unknown",
                FailureClass::TlsCertificateUnknown,
            ),
            (
                "tls_certificate_expired",
                FailureClass::TlsCertificateExpired,
            ),
            ("tls_name_mismatch", FailureClass::TlsNameMismatch),
            (
                "tls_client_certificate_required",
                FailureClass::TlsClientCertificateRequired,
            ),
            (
                "tls_client_certificate_rejected",
                FailureClass::TlsClientCertificateRejected,
            ),
            ("tls_protocol", FailureClass::TlsProtocol),
            ("tls_handshake_timeout", FailureClass::TlsHandshakeTimeout),
            ("tls_other", FailureClass::TlsOther),
        ];
        for (name, class) in names {
            assert_eq!(name.parse::<FailureClass>().unwrap(), class);
            assert_eq!(class.to_string(), name);
            assert_eq!(FailureClass::all().nth(class.index()), Some(class));
            assert!(!class.hint().is_empty());
        }
        assert!(FailureClass::TlsCertificateUnknown
            .hint()
            .contains("http.tls.ca_file"));
    }

    #[test]
    fn a_protocol_registers_its_own_classes_by_name() {
        let wrongtype = FailureClass::register("test_wrongtype", "the key holds another type")
            .expect("a valid name registers");
        assert!(!wrongtype.is_builtin());
        assert_eq!(wrongtype.as_str(), "test_wrongtype");
        assert_eq!(wrongtype.hint(), "the key holds another type");
        assert_eq!("test_wrongtype".parse::<FailureClass>(), Ok(wrongtype));
        assert_eq!(format!("{wrongtype:?}"), "FailureClass(test_wrongtype)");
        // Registering again (another plan, another thread) gives the same class and hint.
        assert_eq!(
            FailureClass::register("test_wrongtype", "other"),
            Ok(wrongtype)
        );
        assert_eq!(wrongtype.hint(), "the key holds another type");
        // A built-in name is the built-in class.
        assert_eq!(
            FailureClass::register("timeout", "x"),
            Ok(FailureClass::Timeout)
        );
        assert!(FailureClass::all().any(|c| c == wrongtype));
        for bad in ["", "Upper", "has-dash", "9lives", &"x".repeat(49)] {
            assert!(matches!(
                FailureClass::register(bad, ""),
                Err(RegisterError::BadName(_))
            ));
        }
        // A name read from a file written by a build with more protocols.
        let read = FailureClass::named_or_register("test_from_file").unwrap();
        assert_eq!(read.as_str(), "test_from_file");
        assert_eq!(read.hint(), "");
        assert_eq!(read.group(), FailureClass::OTHER_GROUP);
    }

    #[test]
    fn every_class_has_a_group_onrush_own_by_family_a_protocol_own_by_protocol() {
        let family = |names: &[&str]| -> Vec<&str> {
            names
                .iter()
                .map(|n| n.parse::<FailureClass>().unwrap().group())
                .collect()
        };
        assert_eq!(
            family(&[
                "connect_refused",
                "connect_timeout",
                "addr_not_available",
                "reset"
            ]),
            ["connection"; 4]
        );
        assert_eq!(
            family(&["timeout", "closed_early", "io"]),
            ["connection"; 3]
        );
        assert_eq!(
            family(&["tls_certificate_unknown", "tls_other"]),
            ["TLS"; 2]
        );
        assert_eq!(family(&["http_4xx", "http_5xx"]), ["HTTP"; 2]);
        assert_eq!(
            family(&["bad_response", "unexpected_status", "unsolicited_response"]),
            ["response"; 3]
        );
        assert_eq!(
            family(&["check_failed", "variable_unset", "bad_argument"]),
            ["checks", "variables", "variables"]
        );
        assert_eq!(family(&["interrupted", "group_failed"]), ["run"; 2]);
        for c in FailureClass::all().take(FailureClass::BUILTIN_COUNT) {
            assert!(valid_group(c.group()), "{c:?}: {:?}", c.group());
        }

        let status = FailureClass::register_in("Test RPC", "test_status", "the call failed")
            .expect("a valid group registers");
        assert_eq!(status.group(), "Test RPC");
        assert_eq!(status.hint(), "the call failed");
        let second = FailureClass::register_in("Test RPC", "test_status_2", "").unwrap();
        assert!(
            std::ptr::eq(second.group(), status.group()),
            "a group is kept once"
        );
        // A known name keeps its group, as it keeps its hint; a built-in one is the built-in.
        assert_eq!(
            FailureClass::register_in("Other RPC", "test_status", "x"),
            Ok(status)
        );
        assert_eq!(status.group(), "Test RPC");
        assert_eq!(
            FailureClass::register_in("Test RPC", "reset", "x"),
            Ok(FailureClass::Reset)
        );
        assert_eq!(FailureClass::Reset.group(), "connection");
        // `register` is `register_in` the group "other".
        let plain = FailureClass::register("test_plain", "").unwrap();
        assert_eq!(plain.group(), "other");
        let long = "x".repeat(FailureClass::GROUP_MAX_LEN + 1);
        for bad in ["", " gRPC", "gRPC ", "two\nlines", &long] {
            assert_eq!(
                FailureClass::register_in(bad, "test_bad_group", ""),
                Err(RegisterError::BadGroup(bad.to_string()))
            );
        }
        assert_eq!(FailureClass::named("test_bad_group"), None);
        assert!(RegisterError::BadGroup(String::new())
            .to_string()
            .contains("1 to 24 characters"));
    }

    #[test]
    fn registering_stops_at_capacity_with_a_clear_error() {
        // A registry of its own: the process's is shared by the tests of this binary.
        let mut extra = Vec::new();
        let free = FailureClass::CAPACITY - FailureClass::BUILTIN_COUNT;
        for i in 0..free {
            let class = push_class(&mut extra, "Fill", &format!("fill_{i}"), "").unwrap();
            assert_eq!(class.index(), FailureClass::BUILTIN_COUNT + i);
        }
        // One group text for all of them.
        assert!(extra.iter().all(|e| std::ptr::eq(e.group, extra[0].group)));
        let full = push_class(&mut extra, "Fill", "one_too_many", "");
        assert_eq!(full, Err(RegisterError::Full("one_too_many".into())));
        assert!(full
            .unwrap_err()
            .to_string()
            .contains("all 128 failure classes"));
    }

    #[test]
    fn io_errors_map_to_classes() {
        let e = io::Error::from(io::ErrorKind::AddrNotAvailable);
        assert_eq!(
            FailureClass::from_io_error(&e, true),
            FailureClass::AddrNotAvailable
        );
        let e = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(
            FailureClass::from_io_error(&e, true),
            FailureClass::ConnectTimeout
        );
        assert_eq!(
            FailureClass::from_io_error(&e, false),
            FailureClass::Timeout
        );
        assert_eq!(FailureClass::for_status(503), Some(FailureClass::Http5xx));
        assert_eq!(FailureClass::for_status(302), None);
    }
}

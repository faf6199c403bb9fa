//! Redis's own failure classes, registered by name in the group `Redis` when the binary
//! starts: results files, the summary, the report and the exporters name them (the report
//! shows them under `Redis`).

use std::sync::OnceLock;

use onrush_protocol::FailureClass;

/// The classes of a Redis reply or connection that failed.
pub struct Classes {
    /// `-WRONGTYPE`: the key holds another type than the command works on.
    pub wrongtype: FailureClass,
    /// `-NOAUTH`, `-WRONGPASS`, `-NOPERM`: authentication or ACLs refused the command.
    pub auth: FailureClass,
    /// `-MOVED`, `-ASK`: a cluster node redirected the command to another.
    pub moved: FailureClass,
    /// `-LOADING`, `-BUSY`, `-MASTERDOWN`, `-TRYAGAIN`: the server cannot serve it now.
    pub busy: FailureClass,
    /// `-OOM`: the server is at `maxmemory`.
    pub oom: FailureClass,
    /// Any other error reply (`-ERR ...`).
    pub error: FailureClass,
    /// The reply was not valid RESP, or larger than allowed.
    pub protocol: FailureClass,
}

const DEFINITIONS: [(&str, &str); 7] = [
    ("redis_wrongtype", "the key holds a value of another type than the command works on (WRONGTYPE): use distinct keys per data type, e.g. `k:${vu}:list`"),
    ("redis_auth", "the server refused the connection's credentials or ACLs (NOAUTH, WRONGPASS, NOPERM): check the step's `auth:` and the user's ACL rules"),
    ("redis_moved", "a cluster node redirected the command (MOVED/ASK): this protocol talks to one node; target the node that owns the key's slot, or a non-cluster server"),
    ("redis_busy", "the server could not serve the command now (LOADING, BUSY, MASTERDOWN, TRYAGAIN): it is loading its data set, running a long script, or its replica lost its master"),
    ("redis_oom", "the server is at maxmemory and refused a write (OOM): raise maxmemory, choose an eviction policy, or write less"),
    ("redis_error", "the server answered an error (-ERR ...): the command or its arguments are wrong for it; the first example shows the message"),
    ("redis_protocol", "the reply was not valid RESP, or larger than allowed: is a Redis server really on that port (not TLS-only, not another service)?"),
];

static CLASSES: OnceLock<Classes> = OnceLock::new();

/// Registers the classes (once per process) and returns them.
pub fn classes() -> Result<&'static Classes, String> {
    if let Some(classes) = CLASSES.get() {
        return Ok(classes);
    }
    let mut registered = Vec::with_capacity(DEFINITIONS.len());
    for (name, hint) in DEFINITIONS {
        let class = FailureClass::register_in("Redis", name, hint).map_err(|e| e.to_string())?;
        registered.push(class);
    }
    let classes = Classes {
        wrongtype: registered[0],
        auth: registered[1],
        moved: registered[2],
        busy: registered[3],
        oom: registered[4],
        error: registered[5],
        protocol: registered[6],
    };
    Ok(CLASSES.get_or_init(|| classes))
}

impl Classes {
    /// The class of an error reply, by its first word.
    pub fn of_error(&self, kind: &[u8]) -> FailureClass {
        match kind {
            b"WRONGTYPE" => self.wrongtype,
            b"NOAUTH" | b"WRONGPASS" | b"NOPERM" => self.auth,
            b"MOVED" | b"ASK" => self.moved,
            b"LOADING" | b"BUSY" | b"MASTERDOWN" | b"TRYAGAIN" => self.busy,
            b"OOM" => self.oom,
            _ => self.error,
        }
    }
}

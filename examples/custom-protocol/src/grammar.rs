//! How a Redis step is written in a plan: the `redis:` key and its own keys, read into a
//! [`RedisSpec`] when the plan loads (with the plan's file:line:col errors).
//!
//! ```yaml
//! - redis: 127.0.0.1:6379            # or tls://HOST:PORT (TLS from the scenario's http.tls)
//!   command: [SET, "k:${vu}", "${value}"]
//! - redis: 127.0.0.1:6379
//!   pipeline:                        # N commands written at once, N replies read
//!     - [INCR, counter]
//!     - [GET, counter]
//!   connections: shared              # per_vu (default) or a pool per worker thread
//!   auth: { username: app, password: "${redis_password}" }
//!   database: 2                      # SELECT on connect
//!   resp: 3                          # HELLO 3 on connect (RESP3 replies)
//! ```

use onrush_plan::grammar::{CompiledStep, Mapping, StepGrammar, Value};
use onrush_plan::{PlanError, Template};
use serde_json::json;

/// A Redis step as the plan wrote it.
#[derive(Debug)]
pub struct RedisSpec {
    pub host: String,
    pub port: u16,
    /// `tls://HOST:PORT`.
    pub tls: bool,
    /// One command (`command:`) or several written at once (`pipeline:`): each a list of
    /// arguments, each a template.
    pub commands: Vec<Vec<Template>>,
    pub pipeline: bool,
    /// `connections: shared`: a pool per worker thread instead of a connection per VU.
    pub shared: bool,
    /// What every new connection is told first: `resp: 3`, `auth:`, `database:`.
    pub connect: ConnectSettings,
}

/// The commands a new connection sends before the step's (HELLO, AUTH, SELECT).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ConnectSettings {
    pub resp3: bool,
    pub username: Option<String>,
    pub password: Option<String>,
    pub database: Option<u64>,
}

const KEYS: &[&str] = &[
    "command",
    "pipeline",
    "connections",
    "auth",
    "database",
    "resp",
];
const EXAMPLE: &str = "{ redis: 127.0.0.1:6379, command: [GET, \"k:${vu}\"] }";

/// The `redis:` step grammar.
pub struct RedisGrammar;

impl StepGrammar for RedisGrammar {
    fn key(&self) -> &'static str {
        "redis"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        EXAMPLE
    }

    fn schema(&self) -> serde_json::Value {
        let command = json!({
            "type": "array", "minItems": 1,
            "items": { "type": ["string", "number"] },
            "description": "A command and its arguments, each a template: [SET, \"k:${vu}\", \"${value}\"]"
        });
        json!({
            "redis": { "type": "string", "description": "HOST:PORT of the Redis server, or tls://HOST:PORT", "examples": ["127.0.0.1:6379"] },
            "command": command,
            "pipeline": { "type": "array", "minItems": 1, "items": command, "description": "Commands written at once; the step waits for all their replies (a JSON array)" },
            "connections": { "enum": ["per_vu", "shared"], "description": "per_vu (default): a connection per VU, kept; shared: a pool per worker thread" },
            "auth": {
                "type": "object", "additionalProperties": false, "required": ["password"],
                "properties": { "username": { "type": "string" }, "password": { "type": "string" } },
                "description": "AUTH sent on every new connection"
            },
            "database": { "type": "integer", "minimum": 0, "description": "SELECT sent on every new connection" },
            "resp": { "enum": [2, 3], "description": "3: HELLO 3 on every new connection (RESP3 replies)" }
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let (host, port, tls) = step
            .required("redis", "HOST:PORT of the Redis server")?
            .stream_target("e.g. `redis: 127.0.0.1:6379`, or `redis: tls://HOST:PORT` for TLS")?;
        let which = step.at_most_one(
            &["command", "pipeline"],
            "command or pipeline per step",
            "a step sends one `command:` or a `pipeline:` of several",
        )?;
        let (commands, pipeline) = match which {
            Some("command") => (
                vec![command(&step.get("command").expect("present"))?],
                false,
            ),
            Some(_) => {
                let list = step.get("pipeline").expect("present");
                let items = list.list()?;
                if items.is_empty() {
                    return Err(list
                        .error("the pipeline is empty; expected a list of commands")
                        .with_hint("e.g. `pipeline: [[INCR, n], [GET, n]]`"));
                }
                (items.iter().map(command).collect::<Result<_, _>>()?, true)
            }
            None => {
                return Err(step
                    .error("missing key `command`; expected the command to send")
                    .with_hint(format!(
                        "e.g. `- {EXAMPLE}`, or `pipeline: [[INCR, n], [GET, n]]`"
                    )))
            }
        };
        let shared = match step.get("connections") {
            None => false,
            Some(v) => match v.string()?.trim() {
                "per_vu" => false,
                "shared" => true,
                other => {
                    return Err(v
                        .error(format!("expected `per_vu` or `shared`, found {other:?}"))
                        .with_hint("per_vu keeps a connection per VU; shared draws from a pool per worker thread"))
                }
            },
        };
        let mut connect = ConnectSettings::default();
        if let Some(auth) = step.get("auth") {
            let auth = auth.mapping(&["username", "password"])?;
            connect.password = Some(
                auth.required("password", "the password AUTH sends")?
                    .string()?,
            );
            connect.username = auth.get("username").map(|u| u.string()).transpose()?;
        }
        if let Some(db) = step.get("database") {
            connect.database =
                Some(db.uint(0, 1 << 20, "the database SELECT picks, e.g. `database: 2`")?);
        }
        if let Some(resp) = step.get("resp") {
            connect.resp3 = resp.uint(2, 3, "the protocol version: `resp: 2` or `resp: 3`")? == 3;
        }
        let verb = |c: &Vec<Template>| match c[0].constant_bytes() {
            Some(bytes) => String::from_utf8_lossy(bytes).to_ascii_uppercase(),
            None => c[0].source().to_string(),
        };
        let name = if pipeline {
            let verbs: Vec<String> = commands.iter().map(verb).collect();
            format!("redis pipeline {}", verbs.join(" "))
        } else {
            format!("redis {}", verb(&commands[0]))
        };
        Ok(CompiledStep {
            spec: Box::new(RedisSpec {
                host,
                port,
                tls,
                commands,
                pipeline,
                shared,
                connect,
            }),
            name,
        })
    }
}

/// One command: a non-empty list of arguments, each a template.
fn command(value: &Value<'_>) -> Result<Vec<Template>, PlanError> {
    if !value.is_list() {
        return Err(value
            .error("expected a list: the command and its arguments")
            .with_hint("e.g. `command: [SET, \"k:${vu}\", \"v\"]`"));
    }
    let args = value.list()?;
    if args.is_empty() {
        return Err(value
            .error("the command is empty; expected the command's name first")
            .with_hint("e.g. `command: [PING]`"));
    }
    args.iter().map(|a| a.template()).collect()
}

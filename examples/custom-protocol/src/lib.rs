//! Redis (RESP2/RESP3) as a protocol of onrush, built outside onrush's workspace: the worked
//! example of docs/extending.md. Nothing under onrush's `crates/` names it; its binary,
//! `onrush-redis`, is onrush's command line with this protocol added.
//!
//! - `grammar.rs`: the `redis:` step as a plan writes it ([`onrush_plan::StepGrammar`]);
//! - `classes.rs`: its failure classes (`redis_wrongtype`, `redis_auth`, ...), registered by name;
//! - `plan.rs`: what is resolved once per run (servers, first commands, pre-encoded steps);
//! - `session.rs`: a VU's connections and one exchange;
//! - `resp.rs`: the sans-I/O RESP codec (scan a reply in place, write it as JSON).

mod classes;
pub mod grammar;
mod plan;
pub mod resp;
mod session;

use std::net::SocketAddr;
use std::sync::Arc;

use onrush_plan::{Grammars, Plan, Step};
use onrush_protocol::Protocol;

pub use plan::{RedisPlan, RedisStep};
pub use session::{Pool, RedisSession};

/// Redis as a protocol of onrush's engine.
pub struct Redis;

impl Protocol for Redis {
    type Plan = RedisPlan;
    type Step = RedisStep;
    /// The worker's pool of idle connections (`connections: shared`).
    type Worker = Pool;
    type Session = RedisSession;

    fn register(grammars: &mut Grammars) -> Result<(), String> {
        classes::classes()?;
        grammars.add(Arc::new(grammar::RedisGrammar))
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<RedisPlan> {
        classes::classes().map_err(anyhow::Error::msg)?;
        Ok(RedisPlan::new(plan, builtin))
    }

    fn compile(
        state: &mut RedisPlan,
        plan: &Plan,
        scenario: usize,
        step: &Step,
    ) -> anyhow::Result<Option<RedisStep>> {
        let Step::Custom(custom) = step else {
            return Ok(None);
        };
        match custom.spec::<grammar::RedisSpec>() {
            Some(spec) => state.compile(plan, scenario, custom, spec).map(Some),
            None => Ok(None),
        }
    }

    fn targets(state: &RedisPlan) -> Vec<SocketAddr> {
        state.addresses()
    }

    fn worker(_state: &RedisPlan, _scenario: usize) -> Pool {
        Pool::default()
    }

    fn session(state: &Arc<RedisPlan>, scenario: usize, vu: u64, worker: &Pool) -> RedisSession {
        let classes = classes::classes().expect("registered when the plan was prepared");
        RedisSession::new(state, worker, classes, scenario, vu)
    }
}

//! A virtual user: its protocol session and what it needs to run one iteration of a scenario.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use onrush_metrics::WorkerMetrics;
use onrush_plan::RenderContext;

use super::prepare::ScenarioRun;
use super::program::{control, Op};
use crate::protocol::http::HttpClient;
use crate::protocol::Client;

pub struct Vu {
    /// 1-based, unique within a scenario.
    pub id: u64,
    /// Iterations this VU has started (0-based index of the next one).
    pub iteration: u64,
    client: HttpClient,
    loop_counters: Vec<u64>,
    rng: u64,
}

impl Vu {
    pub fn new(id: u64, scenario: &ScenarioRun, target_slots: usize) -> Self {
        Vu {
            id,
            iteration: 0,
            client: HttpClient::new(
                scenario.scope,
                target_slots,
                scenario.source_addresses.clone(),
                scenario.close_reset,
                id,
                scenario
                    .tls
                    .as_ref()
                    .map(|(client, mode)| client.session(*mode)),
            ),
            loop_counters: Vec::new(),
            // Any odd non-zero seed works for xorshift; mix the id so VUs differ.
            rng: (id.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1,
        }
    }

    /// Runs one iteration. The first request's latency counts from `intended_start`.
    pub async fn run_iteration(
        &mut self,
        scenario_index: usize,
        scenario: &ScenarioRun,
        intended_start: Instant,
        metrics: &Rc<RefCell<WorkerMetrics>>,
    ) {
        let ctx = RenderContext {
            vu: self.id,
            iteration: self.iteration,
        };
        let ops = &scenario.program;
        let mut intended = Some(intended_start);
        let mut pc = 0;
        self.loop_counters.clear();
        while pc < ops.len() {
            match &ops[pc] {
                Op::Request { metric, step } => {
                    let start = intended.take().unwrap_or_else(Instant::now);
                    let exchange = self.client.execute(step, &ctx, start).await;
                    let mut m = metrics.borrow_mut();
                    if exchange.opened_connection {
                        m.record_connection_opened(scenario_index);
                    }
                    m.record_request(scenario_index, *metric, &exchange.record);
                    pc += 1;
                }
                Op::Think { min, max } => {
                    tokio::time::sleep(self.pick(*min, *max)).await;
                    pc += 1;
                }
                Op::LoopStart { .. } | Op::LoopEnd { .. } => {
                    pc = control(ops, pc, &mut self.loop_counters);
                }
            }
        }
        self.client.end_iteration();
        self.iteration += 1;
        metrics.borrow_mut().record_iteration(scenario_index);
    }

    /// A uniformly random duration in [min, max] (xorshift64*: think times need no crypto).
    fn pick(&mut self, min: Duration, max: Duration) -> Duration {
        if max <= min {
            return min;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let span = (max - min).as_nanos() as u64;
        min + Duration::from_nanos(r % (span + 1))
    }
}

//! Two protocols as one: how a binary adds a protocol onrush does not ship to the ones it does.
//!
//! `With<onrush_protocols::Protocols, Redis>` is a [`Protocol`] whose steps are either kind:
//! a step the added protocol compiles (its [`Step::Custom`](onrush_plan::Step::Custom) steps)
//! is its; every other step goes to the base. A VU holds the base's session and, once its
//! first step of the added protocol runs, that protocol's session too. Dispatch is a `match`
//! on a two-variant enum, compiled into the engine as the base's own dispatch is: adding a
//! protocol costs the base's steps one branch, not an allocation or a virtual call.

use std::net::SocketAddr;
use std::sync::Arc;

use onrush_plan::{Check, Extract, Grammars, OnFailure, Plan, RenderContext, Step};

use crate::{Exchange, Protocol, RequestStart, ResponseView, Session, StepSpec, Warmed};

/// `Base`'s protocols and `Added`.
pub struct With<Base, Added>(std::marker::PhantomData<(Base, Added)>);

/// What both protocols resolved for the run.
pub struct WithPlan<B: Protocol, A: Protocol> {
    base: Arc<B::Plan>,
    added: Arc<A::Plan>,
}

/// A compiled step of either protocol.
pub enum WithStep<B, A> {
    Base(B),
    Added(A),
}

/// A worker's shared state of both protocols.
pub struct WithWorker<B: Protocol, A: Protocol> {
    base: B::Worker,
    added: A::Worker,
}

impl<B: Protocol, A: Protocol> Clone for WithWorker<B, A> {
    fn clone(&self) -> Self {
        WithWorker {
            base: self.base.clone(),
            added: self.added.clone(),
        }
    }
}

/// A VU's sessions: the base's, and the added protocol's once a step of it ran.
pub struct WithSession<B: Protocol, A: Protocol> {
    base: B::Session,
    added: Option<Box<A::Session>>,
    plan: Arc<A::Plan>,
    worker: A::Worker,
    scenario: usize,
    vu: u64,
    /// The last step was the added protocol's: its response is the one extractors see.
    last_added: bool,
}

impl<B: StepSpec, A: StepSpec> StepSpec for WithStep<B, A> {
    #[inline]
    fn metric(&self) -> usize {
        match self {
            WithStep::Base(s) => s.metric(),
            WithStep::Added(s) => s.metric(),
        }
    }

    #[inline]
    fn extract(&self) -> &[Extract] {
        match self {
            WithStep::Base(s) => s.extract(),
            WithStep::Added(s) => s.extract(),
        }
    }

    #[inline]
    fn checks(&self) -> &[Check] {
        match self {
            WithStep::Base(s) => s.checks(),
            WithStep::Added(s) => s.checks(),
        }
    }

    #[inline]
    fn on_failure(&self) -> OnFailure {
        match self {
            WithStep::Base(s) => s.on_failure(),
            WithStep::Added(s) => s.on_failure(),
        }
    }
}

/// A protocol's state while steps are compiled: each protocol's state is in an `Arc` (so that
/// a VU's lazily made session can hold it), and nothing else holds it yet.
pub fn unique<T>(state: &mut Arc<T>) -> &mut T {
    Arc::get_mut(state).expect("protocol state is not shared while the plan is compiled")
}

impl<B: Protocol, A: Protocol> Protocol for With<B, A> {
    type Plan = WithPlan<B, A>;
    type Step = WithStep<B::Step, A::Step>;
    type Worker = WithWorker<B, A>;
    type Session = WithSession<B, A>;

    fn register(grammars: &mut Grammars) -> Result<(), String> {
        B::register(grammars)?;
        A::register(grammars)
    }

    fn prepare(plan: &Plan, builtin: Option<SocketAddr>) -> anyhow::Result<Self::Plan> {
        Ok(WithPlan {
            base: Arc::new(B::prepare(plan, builtin)?),
            added: Arc::new(A::prepare(plan, builtin)?),
        })
    }

    fn compile(
        state: &mut Self::Plan,
        plan: &Plan,
        scenario: usize,
        step: &Step,
    ) -> anyhow::Result<Option<Self::Step>> {
        // The added protocol first: its steps are `Step::Custom`, which the base compiles to
        // nothing (or refuses, naming the key it does not know).
        if let Some(s) = A::compile(unique(&mut state.added), plan, scenario, step)? {
            return Ok(Some(WithStep::Added(s)));
        }
        Ok(B::compile(unique(&mut state.base), plan, scenario, step)?.map(WithStep::Base))
    }

    fn targets(state: &Self::Plan) -> Vec<SocketAddr> {
        let mut all = B::targets(&state.base);
        all.extend(A::targets(&state.added));
        all
    }

    fn worker(state: &Self::Plan, scenario: usize) -> Self::Worker {
        WithWorker {
            base: B::worker(&state.base, scenario),
            added: A::worker(&state.added, scenario),
        }
    }

    fn session(
        state: &Arc<Self::Plan>,
        scenario: usize,
        vu: u64,
        worker: &Self::Worker,
    ) -> Self::Session {
        WithSession {
            base: B::session(&state.base, scenario, vu, &worker.base),
            added: None,
            plan: state.added.clone(),
            worker: worker.added.clone(),
            scenario,
            vu,
            last_added: false,
        }
    }
}

impl<B: Protocol, A: Protocol> WithSession<B, A> {
    fn added(&mut self) -> &mut A::Session {
        let (plan, scenario, vu, worker) = (&self.plan, self.scenario, self.vu, &self.worker);
        self.added
            .get_or_insert_with(|| Box::new(A::session(plan, scenario, vu, worker)))
    }
}

impl<B: Protocol, A: Protocol> Session for WithSession<B, A> {
    type Step = WithStep<B::Step, A::Step>;

    async fn execute(
        &mut self,
        step: &Self::Step,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        match step {
            WithStep::Base(step) => {
                self.last_added = false;
                self.base.execute(step, ctx, start).await
            }
            WithStep::Added(step) => {
                self.last_added = true;
                self.added().execute(step, ctx, start).await
            }
        }
    }

    #[inline]
    fn response(&self) -> ResponseView<'_> {
        match (&self.added, self.last_added) {
            (Some(added), true) => added.response(),
            _ => self.base.response(),
        }
    }

    fn request(&self) -> Option<crate::RequestView<'_>> {
        match (&self.added, self.last_added) {
            (Some(added), true) => added.request(),
            _ => self.base.request(),
        }
    }

    fn take_unset(&mut self) -> Option<usize> {
        match (&mut self.added, self.last_added) {
            (Some(added), true) => added.take_unset(),
            _ => self.base.take_unset(),
        }
    }

    fn begin_iteration(&mut self) {
        if self.base.iteration_hooks() {
            self.base.begin_iteration();
        }
        if let Some(added) = &mut self.added {
            if added.iteration_hooks() {
                added.begin_iteration();
            }
        }
    }

    fn iteration_hooks(&self) -> bool {
        // The added session may be made later, with hooks: ask at every iteration.
        true
    }

    fn end_iteration(&mut self) {
        if self.base.iteration_hooks() {
            self.base.end_iteration();
        }
        if let Some(added) = &mut self.added {
            if added.iteration_hooks() {
                added.end_iteration();
            }
        }
    }

    async fn warm_up(&mut self, step: &Self::Step) -> Warmed {
        match step {
            WithStep::Base(step) => self.base.warm_up(step).await,
            WithStep::Added(step) => self.added().warm_up(step).await,
        }
    }
}

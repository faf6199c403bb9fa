//! One QuickJS engine: the plan's modules loaded, and calls into them from a VU.
//!
//! A worker thread makes one ([`Engine::new`]); all of its VUs call into it. Each VU has its
//! own `ctx` object inside the engine (its `vars` a proxy onto the VU's runtime variables,
//! plus whatever else the script keeps there), made at the VU's first call: memory grows by
//! that object per VU, not by a runtime per VU (k6's model). The same type, without the
//! plan's functions, checks the scripts when the plan loads ([`Engine::checking`]).

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use onrush_template::Vars;
use rquickjs::{Array, Context, Ctx, Error, Function, Module, Object, Persistent, Runtime, Value};

use crate::bridge::{
    coerce_string, install_globals, load_error, read_request, reply_object, request_object, truthy,
};
use crate::glue::{glue, inline_function, GLUE, PRELUDE};
use crate::load::{Function as PlanFunction, LoadError, Scripts};
use crate::modules::{normalize, Load, Resolve, Sources};
use crate::{builtins, FunctionId};

/// The modules (name, source), the plan's entries, and the files opened (name, contents).
pub(crate) type SourceLists = (Vec<(String, String)>, Vec<String>, Vec<(String, String)>);

/// Why a call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// It threw (`script_error`).
    Error,
    /// It ran past the time limit and was interrupted (`script_timeout`).
    Timeout,
    /// It failed the step on purpose: `ctx.fail(message)`, or an `after` hook returned `false`
    /// (`script_failed`).
    Failed,
}

/// A failed call: its kind and a message with the script's file:line:col.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

/// A request as a `before` hook sees and changes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The path and query (HTTP), or the target the step addresses.
    pub url: String,
    /// Names lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A reply as `after` hooks and `js` checks see it.
pub struct Reply<'a> {
    pub status: u16,
    pub headers: Vec<(&'a [u8], &'a [u8])>,
    pub body: &'a [u8],
    pub url: &'a [u8],
}

/// Which VU calls, and where it is.
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    pub scenario: u32,
    pub vu: u64,
    pub iteration: u64,
}

/// The VU's variables as the call may use them.
pub(crate) enum VarsAccess {
    None,
    Read(*const Vars),
    Write(*mut Vars),
}

thread_local! {
    /// The calling VU's variables, for the duration of one call (see [`VarsGuard`]).
    pub(crate) static VARS: RefCell<VarsAccess> = const { RefCell::new(VarsAccess::None) };
}

/// Points the engine's `vars` at a VU's variables for one call, and away again when dropped
/// (also when the call unwinds).
struct VarsGuard;

impl VarsGuard {
    fn read(vars: &Vars) -> VarsGuard {
        VARS.with(|v| *v.borrow_mut() = VarsAccess::Read(vars));
        VarsGuard
    }
    fn write(vars: &mut Vars) -> VarsGuard {
        VARS.with(|v| *v.borrow_mut() = VarsAccess::Write(vars));
        VarsGuard
    }
}

impl Drop for VarsGuard {
    fn drop(&mut self) {
        VARS.with(|v| *v.borrow_mut() = VarsAccess::None);
    }
}

/// One QuickJS runtime and context with the plan's modules loaded.
pub struct Engine {
    // Dropped before the runtime (fields drop in order).
    dispatch: Option<Persistent<Function<'static>>>,
    template_call: Option<Persistent<Function<'static>>>,
    context: Context,
    _runtime: Runtime,
    sources: Rc<RefCell<Sources>>,
    entries: Vec<String>,
    exports: Vec<(String, String)>,
    deadline: Rc<Cell<Option<Instant>>>,
    timeout: Duration,
    origins: Vec<Option<String>>,
}

fn runtime(deadline: &Rc<Cell<Option<Instant>>>) -> Result<(Runtime, Context), String> {
    let rt = Runtime::new().map_err(|e| format!("cannot start the JavaScript engine: {e}"))?;
    let d = deadline.clone();
    // QuickJS asks every few thousand instructions: an endless loop is interrupted once the
    // call's deadline has passed.
    rt.set_interrupt_handler(Some(Box::new(move || {
        d.get().is_some_and(|at| Instant::now() >= at)
    })));
    let context =
        Context::full(&rt).map_err(|e| format!("cannot start the JavaScript engine: {e}"))?;
    Ok((rt, context))
}

impl Engine {
    /// The checking engine of plan load: modules read from `dir`, their top-level code run.
    pub(crate) fn checking(
        dir: PathBuf,
        entries: &[String],
        timeout: Duration,
    ) -> Result<Engine, LoadError> {
        let sources = Sources {
            dir: Some(dir),
            modules: Vec::new(),
            opened: Vec::new(),
        };
        let mut entries_norm = Vec::new();
        for e in entries {
            entries_norm.push(normalize("", e).map_err(|m| LoadError {
                place: None,
                message: m,
            })?);
        }
        Engine::start(sources, entries_norm, timeout)
    }

    fn start(
        sources: Sources,
        entries: Vec<String>,
        timeout: Duration,
    ) -> Result<Engine, LoadError> {
        let deadline = Rc::new(Cell::new(None));
        let (rt, context) = runtime(&deadline).map_err(|m| LoadError {
            place: None,
            message: m,
        })?;
        let sources = Rc::new(RefCell::new(sources));
        rt.set_loader(Resolve, Load(sources.clone()));
        let mut engine = Engine {
            dispatch: None,
            template_call: None,
            context,
            _runtime: rt,
            sources,
            entries,
            exports: Vec::new(),
            deadline,
            timeout,
            origins: Vec::new(),
        };
        engine.load_entries()?;
        Ok(engine)
    }

    fn load_entries(&mut self) -> Result<(), LoadError> {
        let sources = self.sources.clone();
        let mut exports = Vec::new();
        self.deadline.set(Some(
            Instant::now() + self.timeout.max(Duration::from_secs(5)),
        ));
        let result = self.context.with(|ctx| -> Result<(), LoadError> {
            let fail = |e: Error| load_error(&ctx, e);
            builtins::install(&ctx).map_err(fail)?;
            install_globals(&ctx, &sources).map_err(fail)?;
            ctx.eval::<(), _>(PRELUDE).map_err(fail)?;
            for name in &self.entries {
                let namespace: Object = Module::import(&ctx, name.as_str())
                    .and_then(|p| p.finish::<Object>())
                    .map_err(fail)?;
                for key in namespace.keys::<String>() {
                    let key = key.map_err(fail)?;
                    let value: Value = namespace.get(key.as_str()).map_err(fail)?;
                    if value.is_function() {
                        exports.push((name.clone(), key));
                    }
                }
            }
            Ok(())
        });
        self.deadline.set(None);
        result?;
        self.exports = exports;
        Ok(())
    }

    /// The exported functions of the plan's modules: (module, name).
    pub(crate) fn exports(&self) -> &[(String, String)] {
        &self.exports
    }

    pub(crate) fn check_inline(&self, code: &str, expression: bool) -> Result<(), String> {
        let wrapped = inline_function(code, expression);
        self.context.with(|ctx| {
            let opts = {
                let mut o = rquickjs::context::EvalOptions::default();
                o.global = true;
                o.strict = false;
                o.filename = Some("<inline>".into());
                o
            };
            ctx.eval_with_options::<Value, _>(wrapped, opts)
                .map(|_| ())
                .map_err(|e| {
                    let le = load_error(&ctx, e);
                    // The wrapper adds one line above the code.
                    match le.place.as_deref().and_then(crate::location::line_col) {
                        Some((line, col)) if line > 1 => {
                            format!(
                                "{} (line {} column {col} of the code)",
                                le.message,
                                line - 1
                            )
                        }
                        _ => le.message,
                    }
                })
        })
    }

    pub(crate) fn sources(&self) -> SourceLists {
        let s = self.sources.borrow();
        (s.modules.clone(), self.entries.clone(), s.opened.clone())
    }

    /// A worker's engine for the plan's `scripts`, with the plan's functions ready to call.
    pub fn new(scripts: &Scripts, scenarios: &[(String, Vec<String>)]) -> Result<Engine, String> {
        let sources = Sources {
            dir: None,
            modules: scripts.modules.clone(),
            opened: scripts.opened.clone(),
        };
        let mut engine = Engine::start(sources, scripts.entries.clone(), scripts.timeout)
            .map_err(|e| e.to_string())?;
        let glue = glue(scripts, &engine.exports, scenarios);
        engine.origins = scripts
            .functions
            .iter()
            .map(|f| match f {
                PlanFunction::Inline { origin, .. } => Some(origin.clone()),
                PlanFunction::Export { .. } => None,
            })
            .collect();
        let (dispatch, template_call) = engine
            .context
            .with(|ctx| -> rquickjs::Result<_> {
                let (module, promise) = Module::declare(ctx.clone(), GLUE, glue)?.eval()?;
                promise.finish::<()>()?;
                let ns = module.namespace()?;
                let d: Function = ns.get("dispatch")?;
                let t: Function = ns.get("templateCall")?;
                Ok((Persistent::save(&ctx, d), Persistent::save(&ctx, t)))
            })
            .map_err(|e| engine.context.with(|ctx| load_error(&ctx, e).to_string()))?;
        engine.dispatch = Some(dispatch);
        engine.template_call = Some(template_call);
        Ok(engine)
    }

    /// A `script:` step: runs function `f` with the VU's `ctx` (variables read and written).
    pub fn run_step(&self, f: FunctionId, who: Caller, vars: &mut Vars) -> Result<(), Failure> {
        let _g = VarsGuard::write(vars);
        self.call(f, who, |_| Ok(None)).map(|_| ())
    }

    /// An `after` hook: `f(res, ctx)`; returning `false` fails the step.
    pub fn after(
        &self,
        f: FunctionId,
        who: Caller,
        vars: &mut Vars,
        reply: &Reply,
    ) -> Result<(), Failure> {
        let _g = VarsGuard::write(vars);
        match self.call(f, who, |ctx| reply_object(ctx, reply).map(Some))? {
            Some(false) => Err(Failure {
                kind: FailureKind::Failed,
                message: format!("{} returned false", self.name(f)),
            }),
            _ => Ok(()),
        }
    }

    /// A `js` check: whether `f(res, ctx)` (or the inline expression) is truthy.
    /// Variables are read-only in checks (extractors and `after` hooks set them).
    pub fn check(
        &self,
        f: FunctionId,
        who: Caller,
        vars: &Vars,
        reply: &Reply,
    ) -> Result<bool, Failure> {
        let _g = VarsGuard::read(vars);
        Ok(self
            .call(f, who, |ctx| reply_object(ctx, reply).map(Some))?
            .unwrap_or(false))
    }

    /// An `if: { js: ... }` condition.
    pub fn condition(&self, f: FunctionId, who: Caller, vars: &Vars) -> Result<bool, Failure> {
        let _g = VarsGuard::read(vars);
        Ok(self.call(f, who, |_| Ok(None))?.unwrap_or(false))
    }

    /// A `before` hook: `f(req, ctx)` may change the request's method, URL, headers and body.
    pub fn before(
        &self,
        f: FunctionId,
        who: Caller,
        vars: &Vars,
        req: &mut Request,
    ) -> Result<(), Failure> {
        let _g = VarsGuard::read(vars);
        let out: RefCell<Option<Persistent<Object<'static>>>> = RefCell::new(None);
        self.call(f, who, |ctx| {
            let o = request_object(ctx, req)?;
            *out.borrow_mut() = Some(Persistent::save(ctx, o.clone()));
            Ok(Some(o.into_value()))
        })?;
        let Some(saved) = out.into_inner() else {
            return Ok(());
        };
        self.context
            .with(|ctx| -> rquickjs::Result<()> {
                let o = saved.restore(&ctx)?;
                read_request(&o, req)
            })
            .map_err(|e| self.context.with(|ctx| self.failure(&ctx, e, f)))
    }

    /// A template's call of an exported function with its rendered arguments.
    pub fn template_call(
        &self,
        f: FunctionId,
        args: &[Vec<u8>],
        vars: &Vars,
        out: &mut Vec<u8>,
    ) -> Result<(), Failure> {
        let _g = VarsGuard::read(vars);
        let Some(call) = &self.template_call else {
            return Ok(());
        };
        self.deadline.set(Some(Instant::now() + self.timeout));
        let result = self.context.with(|ctx| -> Result<(), Failure> {
            let run = || -> rquickjs::Result<String> {
                let call = call.clone().restore(&ctx)?;
                let list = Array::new(ctx.clone())?;
                for (i, a) in args.iter().enumerate() {
                    list.set(i, crate::bridge::text(a).as_ref())?;
                }
                let v: Value = call.call((f, list))?;
                coerce_string(&ctx, v)
            };
            let s = run().map_err(|e| self.failure(&ctx, e, f))?;
            out.extend_from_slice(s.as_bytes());
            Ok(())
        });
        self.deadline.set(None);
        result
    }

    /// Calls function `f` through the dispatcher with the argument `arg` makes (a request or a
    /// reply object, or none); the result as a boolean when it is one.
    fn call(
        &self,
        f: FunctionId,
        who: Caller,
        arg: impl for<'js> FnOnce(&Ctx<'js>) -> rquickjs::Result<Option<Value<'js>>>,
    ) -> Result<Option<bool>, Failure> {
        let Some(dispatch) = &self.dispatch else {
            return Ok(None);
        };
        self.deadline.set(Some(Instant::now() + self.timeout));
        let result = self.context.with(|ctx| {
            let run = || -> rquickjs::Result<Value> {
                let d = dispatch.clone().restore(&ctx)?;
                let a = arg(&ctx)?.unwrap_or_else(|| Value::new_undefined(ctx.clone()));
                let key = ((who.scenario as u64) << 40 | who.vu) as f64;
                d.call((f, key, who.scenario, who.vu as f64, who.iteration as f64, a))
            };
            match run() {
                Ok(v) => Ok(v
                    .as_bool()
                    .or_else(|| (!v.is_undefined() && !v.is_null()).then(|| truthy(&v)))),
                Err(e) => Err(self.failure(&ctx, e, f)),
            }
        });
        self.deadline.set(None);
        result
    }

    fn name(&self, f: FunctionId) -> String {
        match self.origins.get(f as usize).cloned().flatten() {
            Some(origin) => format!("the script at {origin}"),
            None => format!("function #{f}"),
        }
    }

    /// The failure a call's error is: timed out, failed on purpose, or threw.
    fn failure(&self, ctx: &Ctx<'_>, e: Error, f: FunctionId) -> Failure {
        let timed_out = self.deadline.get().is_some_and(|at| Instant::now() >= at);
        let le = load_error(ctx, e);
        if timed_out {
            return Failure {
                kind: FailureKind::Timeout,
                message: format!(
                    "interrupted after {:?}{}",
                    self.timeout,
                    le.place.map(|p| format!(" at {p}")).unwrap_or_default()
                ),
            };
        }
        let failed = le.message.starts_with("OnrushFail: ");
        let message = le.message.trim_start_matches("OnrushFail: ").to_string();
        let place = le
            .place
            .or_else(|| self.origins.get(f as usize).cloned().flatten());
        Failure {
            kind: if failed {
                FailureKind::Failed
            } else {
                FailureKind::Error
            },
            message: match place {
                Some(p) => format!("{p}: {message}"),
                None => message,
            },
        }
    }
}

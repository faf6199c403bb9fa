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

use onrush_template::{VarValue, Vars};
use rquickjs::loader::{Loader, Resolver};
use rquickjs::{
    Array, Context, Ctx, Error, Exception, Function, Module, Object, Persistent, Runtime, Value,
};

use crate::load::{Function as PlanFunction, LoadError, Scripts};
use crate::location::first_frame;
use crate::{builtins, FunctionId};

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
enum VarsAccess {
    None,
    Read(*const Vars),
    Write(*mut Vars),
}

thread_local! {
    /// The calling VU's variables, for the duration of one call (see [`VarsGuard`]).
    static VARS: RefCell<VarsAccess> = const { RefCell::new(VarsAccess::None) };
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

/// The plan's modules, from disk at load (recorded), from memory in the workers.
struct Sources {
    /// Read files from here (load) or only from `modules` (workers).
    dir: Option<PathBuf>,
    modules: Vec<(String, String)>,
    opened: Vec<(String, String)>,
}

impl Sources {
    fn module(&mut self, name: &str) -> Result<String, String> {
        if let Some(src) = builtins::source(name) {
            return Ok(src.to_string());
        }
        if let Some((_, src)) = self.modules.iter().find(|(n, _)| n == name) {
            return Ok(src.clone());
        }
        let Some(dir) = &self.dir else {
            return Err(format!("module {name:?} is not in the plan's scripts"));
        };
        let src = std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        self.modules.push((name.to_string(), src.clone()));
        Ok(src)
    }

    fn open(&mut self, name: &str) -> Result<String, String> {
        let name = normalize("", name)?;
        if let Some((_, c)) = self.opened.iter().find(|(n, _)| *n == name) {
            return Ok(c.clone());
        }
        let Some(dir) = &self.dir else {
            return Err(format!(
                "open({name:?}): files are opened when the plan loads (at a module's top level), not during the run"
            ));
        };
        let c =
            std::fs::read_to_string(dir.join(&name)).map_err(|e| format!("open({name:?}): {e}"))?;
        self.opened.push((name, c.clone()));
        Ok(c)
    }
}

/// `base`'s folder joined with `name`, `.` and `..` resolved; never above the plan's folder.
fn normalize(base: &str, name: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for p in name.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "{name:?} is outside the plan's folder: scripts and the files they open must be in it or below (they travel with the plan)"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    parts.retain(|p| !p.is_empty());
    Ok(parts.join("/"))
}

struct Resolve;

impl Resolver for Resolve {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if builtins::source(name).is_some() {
            return Ok(name.to_string());
        }
        if name.starts_with("./") || name.starts_with("../") {
            return normalize(base, name).map_err(|m| Error::new_resolving_message(base, name, m));
        }
        // The glue module imports the plan's modules by their plan-relative names.
        if base == GLUE || base.is_empty() {
            return Ok(name.to_string());
        }
        Err(Error::new_resolving_message(
            base,
            name,
            format!(
                "expected a path relative to the importing file (`./{name}`) or a built-in module ({})",
                builtins::MODULES.join(", ")
            ),
        ))
    }
}

struct Load(Rc<RefCell<Sources>>);

impl Loader for Load {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<rquickjs::loader::ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let src = self
            .0
            .borrow_mut()
            .module(name)
            .map_err(|m| Error::new_loading_message(name, m))?;
        Module::declare(ctx.clone(), name, src)
    }
}

/// The name of the module onrush writes to reach the plan's functions.
const GLUE: &str = "<onrush>";

/// What every engine defines before the plan's modules: each VU's `ctx`, `vars` as a proxy onto
/// the VU's runtime variables, `ctx.fail`, and the dispatcher the engine calls through.
const PRELUDE: &str = r#"
class OnrushFail extends Error { constructor(m) { super(m); this.name = 'OnrushFail'; } }
globalThis.__onrush_fail_class = OnrushFail;
"#;

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

    pub(crate) fn sources(&self) -> (Vec<(String, String)>, Vec<String>, Vec<(String, String)>) {
        let s = self.sources.borrow();
        (s.modules.clone(), self.entries.clone(), s.opened.clone())
    }

    pub(crate) fn into_sources(
        self,
    ) -> (Vec<(String, String)>, Vec<String>, Vec<(String, String)>) {
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
                    list.set(i, String::from_utf8_lossy(a).as_ref())?;
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

/// JavaScript's truthiness of a value that is neither a boolean, `undefined` nor `null`.
fn truthy(v: &Value) -> bool {
    if let Some(n) = v.as_number() {
        return n != 0.0 && !n.is_nan();
    }
    if let Some(s) = v.as_string() {
        return s.to_string().is_ok_and(|s| !s.is_empty());
    }
    true
}

/// A template's value as text: strings as they are, anything else as `String(v)` would.
fn coerce_string<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<String> {
    if let Some(s) = v.as_string() {
        return s.to_string();
    }
    let string: Function = ctx.globals().get("String")?;
    string.call((v,))
}

/// `open(path)` and `console.log` (to stderr, at most 100 lines per worker).
fn install_globals<'js>(ctx: &Ctx<'js>, sources: &Rc<RefCell<Sources>>) -> rquickjs::Result<()> {
    let s = sources.clone();
    ctx.globals().set(
        "open",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'_>, path: String| -> rquickjs::Result<String> {
                s.borrow_mut()
                    .open(&path)
                    .map_err(|m| Exception::throw_message(&ctx, &m))
            },
        )?,
    )?;
    let console = Object::new(ctx.clone())?;
    let printed = Rc::new(Cell::new(0u32));
    for level in ["log", "info", "warn", "error", "debug"] {
        let printed = printed.clone();
        console.set(
            level,
            Function::new(ctx.clone(), move |args: rquickjs::function::Rest<Value<'_>>| {
                let n = printed.get();
                printed.set(n + 1);
                if n < 100 {
                    let text: Vec<String> = args
                        .0
                        .iter()
                        .map(|v| match v.as_string() {
                            Some(s) => s.to_string().unwrap_or_default(),
                            None => format!("{v:?}"),
                        })
                        .collect();
                    eprintln!("script {level}: {}", text.join(" "));
                } else if n == 100 {
                    eprintln!("script: more console output on this worker is dropped (100 lines shown)");
                }
            })?,
        )?;
    }
    ctx.globals().set("console", console)?;
    ctx.globals().set(
        "__onrush_getvar",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, slot: u32| -> rquickjs::Result<Value<'js>> {
                VARS.with(|v| {
                    let access = v.borrow();
                    let vars: &Vars = match &*access {
                        // SAFETY: the pointer was made from a live reference by `VarsGuard`, which
                        // clears it before that reference's call returns; the engine is the
                        // thread's own, so no other code runs while the script reads.
                        VarsAccess::Read(p) => unsafe { &**p },
                        // SAFETY: as above; only read here.
                        VarsAccess::Write(p) => unsafe { &**p },
                        VarsAccess::None => return Ok(Value::new_undefined(ctx.clone())),
                    };
                    var_value(&ctx, vars.get(slot as usize))
                })
            },
        )?,
    )?;
    ctx.globals().set(
        "__onrush_setvar",
        Function::new(ctx.clone(), |ctx: Ctx<'_>, slot: u32, value: Value<'_>| -> rquickjs::Result<()> {
            VARS.with(|v| {
                let access = v.borrow();
                let vars: &mut Vars = match &*access {
                    // SAFETY: made from a live `&mut Vars` by `VarsGuard::write` for this call
                    // only; the VU does not touch its variables until the call returns.
                    VarsAccess::Write(p) => unsafe { &mut **p },
                    _ => {
                        return Err(Exception::throw_type(
                            &ctx,
                            "variables are read-only in templates, conditions and before hooks: set them in a script step or an after hook",
                        ))
                    }
                };
                let slot = slot as usize;
                if value.is_undefined() || value.is_null() {
                    vars.unset(slot);
                } else if value.is_array() {
                    let list: Vec<String> = value.get()?;
                    vars.set_value(slot, VarValue::Many(list.into_iter().map(String::into_bytes).collect()));
                } else {
                    let s: String = value.get()?;
                    vars.set(slot, s.as_bytes());
                }
                Ok(())
            })
        })?,
    )?;
    Ok(())
}

fn var_value<'js>(ctx: &Ctx<'js>, v: &VarValue) -> rquickjs::Result<Value<'js>> {
    Ok(match v {
        VarValue::Unset => Value::new_undefined(ctx.clone()),
        VarValue::One(b) => {
            rquickjs::String::from_str(ctx.clone(), &String::from_utf8_lossy(b))?.into_value()
        }
        VarValue::Many(list) => {
            let a = Array::new(ctx.clone())?;
            for (i, b) in list.iter().enumerate() {
                a.set(i, String::from_utf8_lossy(b).as_ref())?;
            }
            a.into_value()
        }
    })
}

/// `res`: status, headers (lower-case names; repeated ones joined with `, `), body as text,
/// `json()` (parsed once), url.
fn reply_object<'js>(ctx: &Ctx<'js>, reply: &Reply) -> rquickjs::Result<Value<'js>> {
    let make: Function = ctx.globals().get("__onrush_reply")?;
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &reply.headers {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        let value = String::from_utf8_lossy(value);
        let joined = match headers.get::<_, Option<String>>(name.as_str())? {
            Some(prev) => format!("{prev}, {value}"),
            None => value.into_owned(),
        };
        headers.set(name, joined)?;
    }
    make.call((
        reply.status,
        headers,
        String::from_utf8_lossy(reply.body).as_ref(),
        String::from_utf8_lossy(reply.url).as_ref(),
    ))
}

fn request_object<'js>(ctx: &Ctx<'js>, req: &Request) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("method", req.method.as_str())?;
    o.set("url", req.url.as_str())?;
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &req.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    o.set("headers", headers)?;
    o.set("body", String::from_utf8_lossy(&req.body).as_ref())?;
    Ok(o)
}

fn read_request(o: &Object<'_>, req: &mut Request) -> rquickjs::Result<()> {
    req.method = o.get::<_, String>("method")?.to_ascii_uppercase();
    req.url = o.get("url")?;
    let headers: Object = o.get("headers")?;
    req.headers.clear();
    for key in headers.keys::<String>() {
        let key = key?;
        let value: Value = headers.get(key.as_str())?;
        if value.is_undefined() || value.is_null() {
            continue;
        }
        let value: String = match value.as_string() {
            Some(s) => s.to_string()?,
            None => value.get::<f64>().map(|n| n.to_string())?,
        };
        req.headers.push((key.to_ascii_lowercase(), value));
    }
    let body: String = o.get("body")?;
    req.body = body.into_bytes();
    Ok(())
}

/// An exception as a message and the script's place.
fn load_error(ctx: &Ctx<'_>, e: Error) -> LoadError {
    if !matches!(e, Error::Exception) {
        return LoadError {
            place: None,
            message: e.to_string(),
        };
    }
    let v = ctx.catch();
    let Some(o) = v.as_object() else {
        let text = match v.as_string() {
            Some(s) => s.to_string().unwrap_or_default(),
            None => format!("{v:?}"),
        };
        return LoadError {
            place: None,
            message: format!("threw {text}"),
        };
    };
    let name: Option<String> = o.get("name").ok();
    let message: Option<String> = o.get("message").ok();
    let stack: Option<String> = o.get("stack").ok();
    // A syntax error's place is where the parser stopped: QuickJS puts it in the stack too.
    let place = stack.as_deref().and_then(first_frame);
    LoadError {
        place,
        message: match (name, message) {
            (Some(n), Some(m)) => format!("{n}: {m}"),
            (None, Some(m)) => m,
            _ => "threw an exception".to_string(),
        },
    }
}

fn inline_function(code: &str, expression: bool) -> String {
    if expression {
        format!("(function (ctx, vars, res, req) {{ return (\n{code}\n); }})")
    } else {
        format!("(function (ctx, vars, res, req) {{\n{code}\n}})")
    }
}

/// The module that reaches the plan's functions: each of the plan's modules imported, the
/// functions in an array, each VU's `ctx` made at its first call, and the dispatcher.
fn glue(
    scripts: &Scripts,
    exports: &[(String, String)],
    scenarios: &[(String, Vec<String>)],
) -> String {
    use std::fmt::Write;
    let mut g = String::new();
    for (i, m) in scripts.entries.iter().enumerate() {
        let _ = writeln!(g, "import * as m{i} from {m:?};");
    }
    // Inline code may call exported functions by their bare names (those exported once).
    for (i, m) in scripts.entries.iter().enumerate() {
        for (module, name) in exports.iter().filter(|(module, _)| module == m) {
            let once = exports.iter().filter(|(_, n)| n == name).count() == 1;
            if once && is_identifier(name) {
                let _ = writeln!(g, "const {name} = m{i}.{name}; // {module}");
            }
        }
    }
    g.push_str("const fns = [\n");
    let mut inline = Vec::new();
    for f in &scripts.functions {
        match f {
            PlanFunction::Export { module, name } => {
                let i = scripts
                    .entries
                    .iter()
                    .position(|e| e == module)
                    .unwrap_or(0);
                let _ = writeln!(g, "  m{i}[{name:?}],");
                inline.push(false);
            }
            PlanFunction::Inline {
                code, expression, ..
            } => {
                let _ = writeln!(g, "  {},", inline_function(code, *expression));
                inline.push(true);
            }
        }
    }
    g.push_str("];\n");
    let _ = writeln!(g, "const inline = {inline:?};");
    g.push_str("const scenarios = [\n");
    for (name, vars) in scenarios {
        let slots: Vec<String> = vars
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{v:?}: {i}"))
            .collect();
        let _ = writeln!(
            g,
            "  {{ name: {name:?}, slots: Object.assign(Object.create(null), {{ {} }}) }},",
            slots.join(", ")
        );
    }
    g.push_str("];\n");
    g.push_str(
        r#"const getvar = globalThis.__onrush_getvar, setvar = globalThis.__onrush_setvar;
const Fail = globalThis.__onrush_fail_class;
const ctxs = new Map();
function handler(slots) {
  return {
    get(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; return s === undefined ? t[k] : getvar(s); },
    set(t, k, v) {
      const s = typeof k === 'string' ? slots[k] : undefined;
      if (s === undefined) { t[k] = v; return true; }
      setvar(s, v === undefined || v === null ? undefined : Array.isArray(v) ? v.map(String) : String(v));
      return true;
    },
    has(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; return s === undefined ? k in t : getvar(s) !== undefined; },
    deleteProperty(t, k) { const s = typeof k === 'string' ? slots[k] : undefined; if (s === undefined) delete t[k]; else setvar(s, undefined); return true; },
  };
}
const handlers = scenarios.map((s) => handler(s.slots));
function fail(message) { throw new Fail(String(message)); }
function ctxOf(key, sc, vu, it) {
  let c = ctxs.get(key);
  if (c === undefined) {
    const s = scenarios[sc];
    c = { vu, iteration: it, scenario: s ? s.name : '', vars: new Proxy({}, handlers[sc] || handler(Object.create(null))), fail };
    ctxs.set(key, c);
  }
  c.iteration = it;
  return c;
}
globalThis.__onrush_reply = function (status, headers, body, url) {
  let parsed;
  return { status, headers, body, url, json() { if (parsed === undefined) parsed = JSON.parse(body); return parsed; } };
};
export function dispatch(i, key, sc, vu, it, arg) {
  const c = ctxOf(key, sc, vu, it);
  const f = fns[i];
  if (inline[i]) return f(c, c.vars, arg, arg);
  return arg === undefined ? f(c) : f(arg, c);
}
export function templateCall(i, args) { return fns[i](...args); }
"#,
    );
    g
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !matches!(
            s,
            "fns"
                | "inline"
                | "scenarios"
                | "getvar"
                | "setvar"
                | "Fail"
                | "ctxs"
                | "handler"
                | "handlers"
                | "fail"
                | "ctxOf"
                | "dispatch"
                | "templateCall"
        )
}

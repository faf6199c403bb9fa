//! Values across the boundary: the VU's variables, requests and replies as JavaScript objects,
//! exceptions as messages with the script's place, and the globals every engine has (`open`,
//! `console`, the variables' accessors).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use onrush_template::{VarValue, Vars};
use rquickjs::{Array, Ctx, Error, Exception, Function, Object, Value};

use crate::engine::{Reply, Request, VarsAccess, VARS};
use crate::load::LoadError;
use crate::location::first_frame;
use crate::modules::Sources;

/// JavaScript's truthiness of a value that is neither a boolean, `undefined` nor `null`.
/// Bytes as text: borrowed when they are UTF-8 (checked a word at a time), else with
/// replacement characters. `String::from_utf8_lossy` checks byte by byte even when all is
/// well: ~7 instructions a byte of a 1 KiB body, measured (callgrind).
pub(crate) fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

pub(crate) fn truthy(v: &Value) -> bool {
    if let Some(n) = v.as_number() {
        return n != 0.0 && !n.is_nan();
    }
    if let Some(s) = v.as_string() {
        return s.to_string().is_ok_and(|s| !s.is_empty());
    }
    true
}

/// A template's value as text: strings as they are, anything else as `String(v)` would.
pub(crate) fn coerce_string<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<String> {
    if let Some(s) = v.as_string() {
        return s.to_string();
    }
    let string: Function = ctx.globals().get("String")?;
    string.call((v,))
}

/// `open(path)` and `console.log` (to stderr, at most 100 lines per worker).
pub(crate) fn install_globals<'js>(
    ctx: &Ctx<'js>,
    sources: &Rc<RefCell<Sources>>,
) -> rquickjs::Result<()> {
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
        VarValue::One(b) => rquickjs::String::from_str(ctx.clone(), &text(b))?.into_value(),
        VarValue::Many(list) => {
            let a = Array::new(ctx.clone())?;
            for (i, b) in list.iter().enumerate() {
                a.set(i, text(b).as_ref())?;
            }
            a.into_value()
        }
    })
}

/// `res`: status, headers (lower-case names; repeated ones joined with `, `), body as text,
/// `json()` (parsed once), `bytes()` (a Uint8Array of the body as it came), url.
pub(crate) fn reply_object<'js>(ctx: &Ctx<'js>, reply: &Reply) -> rquickjs::Result<Value<'js>> {
    let make: Function = ctx.globals().get("__onrush_reply")?;
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &reply.headers {
        let name = text(name).to_ascii_lowercase();
        let value = text(value);
        let joined = match headers.get::<_, Option<String>>(name.as_str())? {
            Some(prev) => format!("{prev}, {value}"),
            None => value.into_owned(),
        };
        headers.set(name, joined)?;
    }
    make.call((
        reply.status,
        headers,
        text(reply.body).as_ref(),
        text(reply.url).as_ref(),
        // `res.bytes()`: the body as it came, for a binary one (text() replaced what is not
        // UTF-8); one copy, as the text is.
        rquickjs::TypedArray::<u8>::new_copy(ctx.clone(), reply.body)?,
    ))
}

pub(crate) fn request_object<'js>(ctx: &Ctx<'js>, req: &Request) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("method", req.method.as_str())?;
    o.set("url", req.url.as_str())?;
    let headers = Object::new(ctx.clone())?;
    for (name, value) in &req.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    o.set("headers", headers)?;
    o.set("body", text(&req.body).as_ref())?;
    Ok(o)
}

pub(crate) fn read_request(o: &Object<'_>, req: &mut Request) -> rquickjs::Result<()> {
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
pub(crate) fn load_error(ctx: &Ctx<'_>, e: Error) -> LoadError {
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

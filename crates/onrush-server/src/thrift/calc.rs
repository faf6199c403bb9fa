//! The Calculator service of `examples/idl/calculator.thrift` (Apache's tutorial calculator,
//! widened), served from that IDL read at start: function names, argument and field ids,
//! result and exception ids, enum values all come from the [`Schema`], none is written here.
//!
//! What each call does:
//! - `ping()`: nothing; `zip(n)` (oneway): nothing, no reply.
//! - `add(num1, num2)`: the i32 sum (wrapping, as Java's and C++'s tutorial servers do).
//! - `calculate(logid, w)`: `w.num1 op w.num2`; DIVIDE by 0 throws the declared
//!   `InvalidOperation { whatOp, why }`; an op that is not an `Operation` is an application
//!   exception (`INTERNAL_ERROR`, what Apache's processors send for an undeclared error). The
//!   result is logged under `logid` for `getStruct`, as the tutorial server does — per
//!   connection, at most [`MAX_LOG`] entries, so no client grows the server's memory.
//! - `getStruct(key)`: the `SharedStruct { key, value }` that `calculate` logged under `key`
//!   on this connection (`value` is the result as text), or `{ key, value: "" }`.
//! - `summarize(works, weights, flag)`: `Stats { values: each work's result (i64), counts: works
//!   per operation name, tags: the works' comments, flag: as sent, ratio: the weights' sum over
//!   the number of works (0 without works), last: the last work's op }`; a division by 0 is an
//!   application exception (`summarize` declares none).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use onrush_thrift::wire::ttype;
use onrush_thrift::{Function, Schema, Service};

use super::val::Val;

/// The IDL, embedded: the server runs wherever it is installed.
const CALCULATOR_IDL: &str = include_str!("../../../../examples/idl/calculator.thrift");
const SHARED_IDL: &str = include_str!("../../../../examples/idl/shared.thrift");

/// Results `calculate` remembers per connection for `getStruct` (oldest forgotten first).
pub(crate) const MAX_LOG: usize = 256;

/// `TApplicationException` types (Apache's numbering).
pub(crate) const UNKNOWN_METHOD: i32 = 1;
pub(crate) const INTERNAL_ERROR: i32 = 6;

/// What a call produced.
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    /// The result struct's fields: `(0, value)` for a non-void success, `(id, exception)` for
    /// a declared exception, none for a void success.
    Result(Vec<(i16, Val)>),
    /// A `TApplicationException`: its type and message.
    Application(i32, String),
    /// A oneway call: nothing is sent back.
    None,
}

/// Which function a call named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Ping,
    Add,
    Calculate,
    Summarize,
    Zip,
    GetStruct,
}

/// Ids resolved from the IDL once, at start.
pub(crate) struct Calculator {
    schema: Schema,
    /// Services by name ("Calculator", "SharedService"), for the multiplexed protocol.
    services: Vec<String>,
    ops: Vec<(String, i32)>,
    // Work's fields.
    w_num1: i16,
    w_num2: i16,
    w_op: i16,
    w_comment: i16,
    /// InvalidOperation's fields, and its id in calculate's `throws`.
    ex_what: i16,
    ex_why: i16,
    ex_id: i16,
    // SharedStruct's fields.
    s_key: i16,
    s_value: i16,
    // Stats' fields: values, counts, tags, flag, ratio, last.
    stats: [i16; 6],
}

/// A connection's state: the `calculate` log.
#[derive(Default)]
pub(crate) struct Log {
    entries: VecDeque<(i32, i32)>,
}

impl Calculator {
    /// Reads the embedded IDL. An error here is a bug in the build (a test loads it).
    pub(crate) fn load() -> Result<Calculator, String> {
        let read = |p: &Path| -> std::io::Result<String> {
            match p.file_name().and_then(|n| n.to_str()) {
                Some("calculator.thrift") => Ok(CALCULATOR_IDL.to_owned()),
                Some("shared.thrift") => Ok(SHARED_IDL.to_owned()),
                _ => Err(std::io::ErrorKind::NotFound.into()),
            }
        };
        let schema = onrush_thrift::load_with(&[PathBuf::from("calculator.thrift")], &read)
            .map_err(|e| e.to_string())?;
        let strukt = |name: &str| -> Result<&onrush_thrift::StructDef, String> {
            schema
                .structs
                .iter()
                .find(|s| s.name == name)
                .ok_or(format!("the IDL has no struct {name}"))
        };
        let id = |s: &onrush_thrift::StructDef, field: &str| -> Result<i16, String> {
            s.fields
                .iter()
                .find(|f| f.name == field)
                .map(|f| f.id)
                .ok_or(format!("{} has no field {field}", s.name))
        };
        let work = strukt("Work")?;
        let ex = strukt("InvalidOperation")?;
        let shared = strukt("SharedStruct")?;
        let stats = strukt("Stats")?;
        let calc = schema
            .service("Calculator")
            .ok_or("the IDL has no service Calculator")?;
        let calculate = calc.function("calculate").ok_or("no calculate")?;
        let ex_id = calculate
            .throws
            .first()
            .map(|f| f.id)
            .ok_or("calculate throws nothing")?;
        let ops = schema
            .enums
            .iter()
            .find(|e| e.name == "Operation")
            .ok_or("the IDL has no enum Operation")?
            .values
            .clone();
        let c = Calculator {
            services: schema.services.iter().map(|s| s.name.clone()).collect(),
            ops,
            w_num1: id(work, "num1")?,
            w_num2: id(work, "num2")?,
            w_op: id(work, "op")?,
            w_comment: id(work, "comment")?,
            ex_what: id(ex, "whatOp")?,
            ex_why: id(ex, "why")?,
            ex_id,
            s_key: id(shared, "key")?,
            s_value: id(shared, "value")?,
            stats: [
                id(stats, "values")?,
                id(stats, "counts")?,
                id(stats, "tags")?,
                id(stats, "flag")?,
                id(stats, "ratio")?,
                id(stats, "last")?,
            ],
            schema,
        };
        // Every function the service declares must be served here.
        for f in &c.service().functions {
            Method::of(&f.name).ok_or(format!("Calculator.{} is not served", f.name))?;
        }
        Ok(c)
    }

    fn service(&self) -> &Service {
        self.schema.service("Calculator").expect("checked at load")
    }

    /// The function a message names: `name` or, multiplexed, `Service:name` with a service of
    /// the IDL that has it.
    pub(crate) fn function(&self, name: &[u8]) -> Option<&Function> {
        let name = std::str::from_utf8(name).ok()?;
        let bare = match name.split_once(':') {
            Some((service, bare)) => {
                if !self.services.iter().any(|s| s == service) {
                    return None;
                }
                self.schema.service(service)?.function(bare)?;
                bare
            }
            None => name,
        };
        self.service().function(bare)
    }

    /// Runs the call `f` with its argument struct `args`.
    pub(crate) fn call(&self, f: &Function, args: &Val, log: &mut Log) -> Answer {
        let arg = |name: &str| f.args.iter().find(|a| a.name == name).map(|a| a.id);
        let int = |name: &str| arg(name).and_then(|id| args.int(id)).unwrap_or(0);
        match Method::of(&f.name).expect("checked at load") {
            Method::Ping => Answer::Result(Vec::new()),
            Method::Zip => Answer::None,
            Method::Add => {
                let sum = (int("num1") as i32).wrapping_add(int("num2") as i32);
                Answer::Result(vec![(0, Val::I32(sum))])
            }
            Method::Calculate => {
                let empty = Val::Struct(Vec::new());
                let w = arg("w").and_then(|id| args.field(id)).unwrap_or(&empty);
                match self.work(w) {
                    Ok(n) => {
                        let n = n as i32;
                        log.push(int("logid") as i32, n);
                        Answer::Result(vec![(0, Val::I32(n))])
                    }
                    Err(Failed::Declared(what, why)) => Answer::Result(vec![(
                        self.ex_id,
                        Val::Struct(vec![
                            (self.ex_what, Val::I32(what)),
                            (self.ex_why, Val::Bytes(why.into())),
                        ]),
                    )]),
                    Err(Failed::Application(why)) => Answer::Application(INTERNAL_ERROR, why),
                }
            }
            Method::GetStruct => {
                let key = int("key") as i32;
                let value = log.get(key).map(|n| n.to_string()).unwrap_or_default();
                Answer::Result(vec![(
                    0,
                    Val::Struct(vec![
                        (self.s_key, Val::I32(key)),
                        (self.s_value, Val::Bytes(value.into_bytes())),
                    ]),
                )])
            }
            Method::Summarize => match self.summarize(f, args) {
                Ok(stats) => Answer::Result(vec![(0, stats)]),
                Err(why) => Answer::Application(INTERNAL_ERROR, why),
            },
        }
    }

    /// One `Work`'s result, in i64 (summarize's values are i64; calculate narrows).
    fn work(&self, w: &Val) -> Result<i64, Failed> {
        let (a, b) = (
            w.int(self.w_num1).unwrap_or(0) as i32 as i64,
            w.int(self.w_num2).unwrap_or(0) as i32 as i64,
        );
        let op = w.int(self.w_op).unwrap_or(0) as i32;
        match self.op_name(op) {
            Some("ADD") => Ok(a + b),
            Some("SUBTRACT") => Ok(a - b),
            Some("MULTIPLY") => Ok(a * b),
            Some("DIVIDE") if b == 0 => Err(Failed::Declared(op, "Cannot divide by 0")),
            Some("DIVIDE") => Ok(a / b),
            _ => Err(Failed::Application(format!("Invalid operation {op}"))),
        }
    }

    fn op_name(&self, op: i32) -> Option<&str> {
        self.ops
            .iter()
            .find(|(_, v)| *v == op)
            .map(|(n, _)| n.as_str())
    }

    fn summarize(&self, f: &Function, args: &Val) -> Result<Val, String> {
        let arg = |name: &str| {
            f.args
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| args.field(a.id))
        };
        let works: &[Val] = match arg("works") {
            Some(Val::List(_, items)) => items,
            _ => &[],
        };
        let mut values = Vec::with_capacity(works.len());
        let mut counts: Vec<(Val, Val)> = Vec::new();
        let mut tags: Vec<Val> = Vec::new();
        let mut last = None;
        for w in works {
            values.push(Val::I64(self.work(w).map_err(|e| match e {
                Failed::Declared(_, why) => why.to_owned(),
                Failed::Application(why) => why,
            })?));
            let op = w.int(self.w_op).unwrap_or(0) as i32;
            let name = Val::Bytes(self.op_name(op).unwrap_or("?").into());
            match counts.iter_mut().find(|(k, _)| *k == name) {
                Some((_, Val::I32(n))) => *n += 1,
                _ => counts.push((name, Val::I32(1))),
            }
            if let Some(Val::Bytes(c)) = w.field(self.w_comment) {
                let tag = Val::Bytes(c.clone());
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            last = Some(op);
        }
        let weight: i64 = match arg("weights") {
            Some(Val::Map(_, _, entries)) => entries
                .iter()
                .map(|(_, v)| match v {
                    Val::I32(n) => *n as i64,
                    _ => 0,
                })
                .sum(),
            _ => 0,
        };
        let ratio = if works.is_empty() {
            0.0
        } else {
            weight as f64 / works.len() as f64
        };
        let flag = matches!(arg("flag"), Some(Val::Bool(true)));
        let [v, c, t, fl, r, l] = self.stats;
        let mut fields = vec![
            (v, Val::List(ttype::I64, values)),
            (c, Val::Map(ttype::STRING, ttype::I32, counts)),
            (t, Val::set(ttype::STRING, tags)),
            (fl, Val::Bool(flag)),
            (r, Val::Double(ratio)),
        ];
        if let Some(op) = last {
            fields.push((l, Val::I32(op)));
        }
        Ok(Val::Struct(fields))
    }

    /// The schema's types, for a test that the embedded IDL is what the server serves.
    #[cfg(test)]
    pub(crate) fn returns(&self, name: &str) -> Option<onrush_thrift::Type> {
        self.service().function(name)?.returns.clone()
    }
}

enum Failed {
    /// InvalidOperation: the op and why.
    Declared(i32, &'static str),
    /// An undeclared error: why.
    Application(String),
}

impl Method {
    fn of(name: &str) -> Option<Method> {
        Some(match name {
            "ping" => Method::Ping,
            "add" => Method::Add,
            "calculate" => Method::Calculate,
            "summarize" => Method::Summarize,
            "zip" => Method::Zip,
            "getStruct" => Method::GetStruct,
            _ => return None,
        })
    }
}

impl Log {
    fn push(&mut self, key: i32, value: i32) {
        self.entries.retain(|(k, _)| *k != key);
        if self.entries.len() == MAX_LOG {
            self.entries.pop_front();
        }
        self.entries.push_back((key, value));
    }

    fn get(&self, key: i32) -> Option<i32> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(c: &Calculator, a: i32, b: i32, op: i32) -> Val {
        Val::Struct(vec![
            (c.w_num1, Val::I32(a)),
            (c.w_num2, Val::I32(b)),
            (c.w_op, Val::I32(op)),
        ])
    }

    #[test]
    fn serves_the_embedded_idl() {
        let c = Calculator::load().unwrap();
        assert_eq!(c.returns("add"), Some(onrush_thrift::Type::I32));
        assert!(c.function(b"getStruct").is_some());
        assert!(c.function(b"Calculator:add").is_some());
        assert!(c.function(b"SharedService:getStruct").is_some());
        assert!(c.function(b"SharedService:add").is_none());
        assert!(c.function(b"Nope:add").is_none());
        assert!(c.function(b"nope").is_none());
    }

    #[test]
    fn calculates_throws_and_logs() {
        let c = Calculator::load().unwrap();
        let mut log = Log::default();
        let calc = c.function(b"calculate").unwrap();
        let args = |w| Val::Struct(vec![(1, Val::I32(7)), (2, w)]);
        assert_eq!(
            c.call(calc, &args(work(&c, 9, 3, 2)), &mut log),
            Answer::Result(vec![(0, Val::I32(6))])
        );
        let Answer::Result(ex) = c.call(calc, &args(work(&c, 1, 0, 4)), &mut log) else {
            panic!("a declared exception")
        };
        assert_eq!(ex[0].0, 1);
        assert_eq!(
            c.call(calc, &args(work(&c, 1, 0, 99)), &mut log),
            Answer::Application(INTERNAL_ERROR, "Invalid operation 99".into())
        );
        let get = c.function(b"getStruct").unwrap();
        let Answer::Result(r) = c.call(get, &Val::Struct(vec![(1, Val::I32(7))]), &mut log) else {
            panic!("a result")
        };
        assert_eq!(r[0].1.field(c.s_value), Some(&Val::Bytes(b"6".to_vec())));
        for k in 0..1000 {
            log.push(k, k);
        }
        assert_eq!(log.entries.len(), MAX_LOG);
    }
}

//! Apache Thrift without generated code, for load testing: `.thrift` IDL files read at run
//! time into a [`Schema`], calls encoded from typed values ([`value`]), replies decoded into
//! JSON ([`reply`]), over the binary or compact protocol ([`wire`]).
//!
//! Rust's `thrift` crate needs code generated from the IDL ahead of time and blocking I/O, and
//! no crate reads IDL at run time: a load tool given a `.thrift` file and a plan needs both
//! halves here. Everything a call needs (field ids, wire types, enum values) is resolved once
//! when the plan loads; a call then costs an encode into a reused buffer.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("onrush-thrift-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let idl = dir.join("calc.thrift");
//! std::fs::write(&idl, "service Calc { i32 add(1: i32 a, 2: i32 b) }").unwrap();
//! let schema = onrush_thrift::load(&[idl]).unwrap();
//! let add = schema.service("Calc").unwrap().function("add").unwrap();
//! assert_eq!(add.args[1].name, "b");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod idl;
pub mod reply;
pub mod value;
pub mod wire;

pub use idl::parse::{ConstValue, Requiredness, StructKind};
pub use idl::resolve::{
    load, load_with, Constant, EnumDef, Field, Function, IdlError, Schema, Service, StructDef, Type,
};

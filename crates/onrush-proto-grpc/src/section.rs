//! The top-level `grpc:` section of a plan: where the gRPC steps' services and messages come
//! from — `.proto` files compiled now (protox: no protoc), or a server's reflection fetched
//! now (`reflection.rs`; the error is still at the plan's `reflection:` line).
//!
//! Checked here, before any load: a `.proto` that does not compile (its file, line and
//! column), a reflection server that cannot be reached, does not reflect or sends descriptors
//! that do not fit together (the plan's line and the server).

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;

use onrush_plan::grammar::{SectionGrammar, Value};
use onrush_plan::{HttpSettings, PlanError};
use prost_reflect::DescriptorPool;
use serde_json::json;

use crate::spec::ReflectionSource;

const SECTION_KEYS: [&str; 3] = ["protos", "import_paths", "reflection"];

/// The plan's gRPC descriptors and where they came from (for errors).
pub struct Descriptors {
    pub pool: DescriptorPool,
    /// "the plan's .proto files", or the reflecting server.
    pub origin: String,
}

const REFLECTION_EXAMPLE: &str = "e.g. `grpc: { reflection: 127.0.0.1:50051 }` \
    (`grpcs://HOST:PORT` for TLS with the plan's `http.tls`)";

/// The `grpc:` section: its `.proto` files compiled into one descriptor pool, or the
/// descriptors its `reflection:` server gives.
pub struct ProtoSection;

impl SectionGrammar for ProtoSection {
    fn key(&self) -> &'static str {
        "grpc"
    }

    fn schema(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "description": "Where gRPC steps' services and messages come from: .proto files compiled when the plan loads (no protoc needed), or a server's reflection",
            "additionalProperties": false,
            "properties": {
                "reflection": { "type": "string", "description": "HOST:PORT (or grpc://HOST:PORT) of a gRPC server that serves reflection (grpc.reflection.v1, else v1alpha): its services and messages are fetched once when the plan loads; grpcs://HOST:PORT is TLS with the plan's http.tls. Instead of `protos`", "examples": ["127.0.0.1:50051"] },
                "protos": { "type": ["array", "string"], "items": { "type": "string" }, "description": "The .proto files (relative to the plan)", "examples": [["protos/greeter.proto"]] },
                "import_paths": { "type": ["array", "string"], "items": { "type": "string" }, "description": "Directories imports are looked up in (relative to the plan); default: each file's own directory" }
            }
        })
    }

    fn compile(
        &self,
        section: &Value<'_>,
        http: &HttpSettings,
    ) -> Result<Arc<dyn Any + Send + Sync>, PlanError> {
        let f = section.mapping(&SECTION_KEYS)?;
        if let Some(r) = f.get("reflection") {
            if let Some(other) = ["protos", "import_paths"]
                .into_iter()
                .find(|k| f.get(k).is_some())
            {
                return Err(f
                    .key_error(
                        other,
                        "both `reflection:` and .proto files; expected one source of descriptors",
                    )
                    .with_hint(
                        "`reflection: HOST:PORT` asks the server; `protos: [...]` reads files",
                    ));
            }
            return Ok(Arc::new(reflection(&r, http)?));
        }
        let protos_value = f.required(
            "protos",
            "a list of .proto files (or `reflection: HOST:PORT`, a server's descriptors)",
        )?;
        let mut protos: Vec<(PathBuf, Value<'_>)> = Vec::new();
        for item in protos_value.one_or_many(
            "protos",
            "e.g. `protos: [protos/greeter.proto]` (paths relative to the plan)",
        )? {
            let path = item.plan_path()?;
            if !path.is_file() {
                return Err(item
                    .error(format!("{} is not a readable file", path.display()))
                    .with_hint("paths are relative to the plan's directory"));
            }
            protos.push((path, item));
        }
        let mut includes: Vec<PathBuf> = Vec::new();
        if let Some(ip) = f.get("import_paths") {
            for item in ip.one_or_many(
                "import_paths",
                "e.g. `import_paths: [protos]` (directories relative to the plan)",
            )? {
                let rel = item.string()?;
                let dir = section.base_dir().join(&rel);
                if !dir.is_dir() {
                    return Err(item
                        .error(format!("{} is not a directory", dir.display()))
                        .with_hint("paths are relative to the plan's directory"));
                }
                includes.push(dir);
            }
        }
        if includes.is_empty() {
            // Without import paths, each file's own directory is where its imports are found.
            for (path, _) in &protos {
                let dir = path.parent().map(PathBuf::from).unwrap_or_default();
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
        let mut compiler = protox::Compiler::new(&includes)
            .map_err(|e| section.error(format!("the .proto compiler failed: {e}")))?;
        compiler.include_source_info(true);
        for (path, item) in &protos {
            if let Err(e) = compiler.open_file(path) {
                return Err(proto_error(&e, &includes, item));
            }
        }
        Ok(Arc::new(Descriptors {
            pool: compiler.descriptor_pool(),
            origin: "the plan's .proto files".to_string(),
        }))
    }
}

/// `reflection: HOST:PORT`: the server's descriptors, fetched now.
fn reflection(value: &Value<'_>, http: &HttpSettings) -> Result<Descriptors, PlanError> {
    let (tls, host, port) = address(value, REFLECTION_EXAMPLE)?;
    let source = ReflectionSource {
        tls,
        host,
        port,
        tls_settings: http.tls.clone(),
        timeout: http.timeout,
    };
    let files = crate::reflection::fetch(&source).map_err(|e| {
        value
            .error(format!(
                "cannot read the gRPC descriptors of {source} by server reflection: {e}"
            ))
            .with_hint(
                "the server must be up and serve grpc.reflection.v1.ServerReflection (or \
                 v1alpha); or list the .proto files instead: `grpc: { protos: [...] }`",
            )
    })?;
    // The files as one FileDescriptorSet (field 1, repeated): prost-reflect orders them.
    let mut set = Vec::new();
    for file in &files {
        set.push(0x0a);
        let mut len = file.len() as u64;
        while len >= 0x80 {
            set.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        set.push(len as u8);
        set.extend_from_slice(file);
    }
    let pool = DescriptorPool::decode(&set[..]).map_err(|e| {
        value.error(format!(
            "the descriptors {source} gave by reflection do not fit together: {e}"
        ))
    })?;
    Ok(Descriptors {
        pool,
        origin: format!("the services {source} gave by reflection"),
    })
}

/// `HOST:PORT`, `grpc://HOST:PORT` or `grpcs://HOST:PORT` (TLS): (tls, host, port).
pub(crate) fn address(value: &Value<'_>, example: &str) -> Result<(bool, String, u16), PlanError> {
    let text = value.string()?;
    let (tls, rest) = if let Some(r) = text.trim().strip_prefix("grpcs://") {
        (true, r)
    } else {
        (
            false,
            text.trim().strip_prefix("grpc://").unwrap_or(text.trim()),
        )
    };
    let (host, port) = onrush_plan::grammar::split_host_port(rest.trim_end_matches('/'))
        .ok_or_else(|| {
            value
                .error(format!(
                    "expected HOST:PORT, grpc://HOST:PORT or grpcs://HOST:PORT, found {text:?}"
                ))
                .with_hint(example)
        })?;
    Ok((tls, host, port))
}

/// A protox error as a plan error: at the `.proto`'s line and column when it names one,
/// else at the plan's `protos:` entry.
fn proto_error(e: &protox::Error, includes: &[PathBuf], entry: &Value<'_>) -> PlanError {
    use miette::Diagnostic;
    let message = e.to_string();
    let help = e.help().map(|h| h.to_string());
    let offset = e
        .labels()
        .and_then(|mut l| l.next())
        .map(|l| l.offset()..l.offset() + l.len().max(1));
    let file = e.file().and_then(|name| {
        includes
            .iter()
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if let (Some(span), Some(file)) = (offset, file) {
        if let Ok(text) = std::fs::read_to_string(&file) {
            let shown = file.display().to_string();
            let end = span.end.min(text.len());
            return PlanError::at(
                &shown,
                &text,
                span.start.min(end)..end,
                entry.path(),
                message,
            )
            .with_hint(
                help.unwrap_or_else(|| {
                    format!("this .proto is listed in the plan {}", entry.source())
                }),
            );
        }
    }
    let err = entry.error(format!("the .proto does not compile: {message}"));
    match help {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

//! The top-level `grpc:` section of a plan: where the gRPC steps' services and messages come
//! from — `.proto` files compiled now (protox: no protoc), or a server's reflection fetched now
//! through the fetch the binary installed ([`crate::grpc::set_reflection_fetch`]: this crate
//! does no I/O itself, and the error is still at the plan's `reflection:` line).
//!
//! Checked here, before any load: a `.proto` that does not compile (its file, line and
//! column), a reflection server that cannot be reached, does not reflect or sends descriptors
//! that do not fit together (the plan's line and the server).

use std::path::PathBuf;

use prost_reflect::DescriptorPool;

use super::endpoint::split_host_port;
use super::Ctx;
use crate::error::PlanError;
use crate::grpc::ReflectionSource;
use crate::yaml::Node;
use crate::HttpSettings;

const SECTION_KEYS: [&str; 3] = ["protos", "import_paths", "reflection"];

/// The plan's gRPC descriptors and where they came from (for errors).
pub(super) struct Descriptors {
    pub(super) pool: DescriptorPool,
    /// "the plan's .proto files", or the reflecting server.
    pub(super) origin: String,
}

const REFLECTION_EXAMPLE: &str = "e.g. `grpc: { reflection: 127.0.0.1:50051 }` \
    (`grpcs://HOST:PORT` for TLS with the plan's `http.tls`)";

impl Ctx<'_> {
    /// The top-level `grpc:` section: its `.proto` files compiled into one descriptor pool,
    /// or the descriptors its `reflection:` server gives.
    pub(super) fn grpc_section(
        &self,
        node: Option<&Node>,
        http: &HttpSettings,
    ) -> Result<Option<Descriptors>, PlanError> {
        let Some(node) = node else {
            return Ok(None);
        };
        let f = self.map(node, "grpc", &SECTION_KEYS)?;
        if let Some(r) = f.get("reflection") {
            let field = f.child("reflection");
            if let Some(other) = f.key("protos").or_else(|| f.key("import_paths")) {
                return Err(self
                    .err(
                        other,
                        &field,
                        "both `reflection:` and .proto files; expected one source of descriptors",
                    )
                    .with_hint(
                        "`reflection: HOST:PORT` asks the server; `protos: [...]` reads files",
                    ));
            }
            return self.grpc_reflection(r, &field, http).map(Some);
        }
        let protos_node = self.required(
            &f,
            "protos",
            "a list of .proto files (or `reflection: HOST:PORT`, a server's descriptors)",
        )?;
        let mut protos: Vec<(PathBuf, &Node, String)> = Vec::new();
        for (n, p) in self.one_or_many(
            protos_node,
            &f.child("protos"),
            "protos",
            "e.g. `protos: [protos/greeter.proto]` (paths relative to the plan)",
        )? {
            let rel = self.string(n, &p)?;
            let path = self.plan_path(&rel);
            if !path.is_file() {
                return Err(self
                    .err(n, &p, format!("{} is not a readable file", path.display()))
                    .with_hint("paths are relative to the plan's directory"));
            }
            protos.push((path, n, p));
        }
        let mut includes: Vec<PathBuf> = Vec::new();
        if let Some(ip) = f.get("import_paths") {
            for (n, p) in self.one_or_many(
                ip,
                &f.child("import_paths"),
                "import_paths",
                "e.g. `import_paths: [protos]` (directories relative to the plan)",
            )? {
                let rel = self.string(n, &p)?;
                let dir = self.base_dir().join(&rel);
                if !dir.is_dir() {
                    return Err(self
                        .err(n, &p, format!("{} is not a directory", dir.display()))
                        .with_hint("paths are relative to the plan's directory"));
                }
                includes.push(dir);
            }
        }
        if includes.is_empty() {
            // Without import paths, each file's own directory is where its imports are found.
            for (path, _, _) in &protos {
                let dir = path.parent().map(PathBuf::from).unwrap_or_default();
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
        let mut compiler = protox::Compiler::new(&includes)
            .map_err(|e| self.err(node, "grpc", format!("the .proto compiler failed: {e}")))?;
        compiler.include_source_info(true);
        for (path, n, p) in &protos {
            if let Err(e) = compiler.open_file(path) {
                return Err(self.proto_error(&e, &includes, n, p));
            }
        }
        Ok(Some(Descriptors {
            pool: compiler.descriptor_pool(),
            origin: "the plan's .proto files".to_string(),
        }))
    }

    /// `reflection: HOST:PORT`: the server's descriptors, fetched now.
    fn grpc_reflection(
        &self,
        node: &Node,
        field: &str,
        http: &HttpSettings,
    ) -> Result<Descriptors, PlanError> {
        let text = self.string(node, field)?;
        let (tls, host, port) = self.grpc_address(node, field, &text, REFLECTION_EXAMPLE)?;
        let source = ReflectionSource {
            tls,
            host,
            port,
            tls_settings: http.tls.clone(),
            timeout: http.timeout,
        };
        let Some(fetch) = crate::grpc::reflection_fetch() else {
            return Err(self
                .err(
                    node,
                    field,
                    "this program cannot fetch gRPC descriptors by server reflection",
                )
                .with_hint("run the plan with `onrush`, or list the .proto files: `grpc: { protos: [...] }`"));
        };
        let files = fetch(&source).map_err(|e| {
            self.err(
                node,
                field,
                format!("cannot read the gRPC descriptors of {source} by server reflection: {e}"),
            )
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
            self.err(
                node,
                field,
                format!("the descriptors {source} gave by reflection do not fit together: {e}"),
            )
        })?;
        Ok(Descriptors {
            pool,
            origin: format!("the services {source} gave by reflection"),
        })
    }

    /// `HOST:PORT`, `grpc://HOST:PORT` or `grpcs://HOST:PORT` (TLS): (tls, host, port).
    pub(super) fn grpc_address(
        &self,
        node: &Node,
        field: &str,
        text: &str,
        example: &str,
    ) -> Result<(bool, String, u16), PlanError> {
        let (tls, rest) = if let Some(r) = text.trim().strip_prefix("grpcs://") {
            (true, r)
        } else {
            (
                false,
                text.trim().strip_prefix("grpc://").unwrap_or(text.trim()),
            )
        };
        let (host, port) = split_host_port(rest.trim_end_matches('/')).ok_or_else(|| {
            self.err(
                node,
                field,
                format!(
                    "expected HOST:PORT, grpc://HOST:PORT or grpcs://HOST:PORT, found {text:?}"
                ),
            )
            .with_hint(example)
        })?;
        Ok((tls, host, port))
    }

    /// A protox error as a plan error: at the `.proto`'s line and column when it names one,
    /// else at the plan's `protos:` entry.
    fn proto_error(
        &self,
        e: &protox::Error,
        includes: &[PathBuf],
        entry: &Node,
        field: &str,
    ) -> PlanError {
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
                return PlanError::at(&shown, &text, span.start.min(end)..end, field, message)
                    .with_hint(help.unwrap_or_else(|| {
                        format!("this .proto is listed in the plan {}", self.source)
                    }));
            }
        }
        self.err(
            entry,
            field,
            format!("the .proto does not compile: {message}"),
        )
        .with_opt_hint(help)
    }
}

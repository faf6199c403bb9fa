//! `.thrift` files (and what they include) → one [`Schema`] with every name resolved: typedefs
//! followed, `included.Name` looked up in the included file, services flattened with what they
//! extend. Errors name the file and the byte span of the offending name.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::parse::{parse, ConstValue, Document, FieldAst, Requiredness, StructKind, TypeRef};

/// An IDL error: the file, its text (to turn the span into a line and column) and the message.
#[derive(Debug, Clone)]
pub struct IdlError {
    pub path: PathBuf,
    pub text: String,
    /// Byte range in `text`; empty text for a file that could not be read.
    pub span: Range<usize>,
    pub message: String,
}

impl IdlError {
    /// 1-based line and column of the span's start.
    pub fn line_col(&self) -> (usize, usize) {
        let before = &self.text[..self.span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

impl std::fmt::Display for IdlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (line, col) = self.line_col();
        write!(f, "{}:{line}:{col}: {}", self.path.display(), self.message)
    }
}

/// A resolved type.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    String,
    Binary,
    Uuid,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// Index into [`Schema::structs`].
    Struct(usize),
    /// Index into [`Schema::enums`].
    Enum(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub id: i16,
    pub name: String,
    pub req: Requiredness,
    pub ty: Type,
    pub default: Option<ConstValue>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructDef {
    pub name: String,
    pub kind: StructKind,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    pub name: String,
    pub values: Vec<(String, i32)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    pub oneway: bool,
    /// None: `void`.
    pub returns: Option<Type>,
    pub args: Vec<Field>,
    pub throws: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    /// Its own functions, then those of the services it extends (nearest first).
    pub functions: Vec<Function>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub name: String,
    pub ty: Type,
    pub value: ConstValue,
}

/// Every type, service and constant of a set of IDL files.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Schema {
    pub structs: Vec<StructDef>,
    pub enums: Vec<EnumDef>,
    pub services: Vec<Service>,
    pub consts: Vec<Constant>,
    /// Every file read, includes too (a distributed run sends them to its agents).
    pub files: Vec<PathBuf>,
}

impl Schema {
    /// The service called `name` (as written in its file, without an include prefix).
    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    /// A readable name of `ty`, for messages.
    pub fn type_name(&self, ty: &Type) -> String {
        match ty {
            Type::Bool => "bool".into(),
            Type::Byte => "byte".into(),
            Type::I16 => "i16".into(),
            Type::I32 => "i32".into(),
            Type::I64 => "i64".into(),
            Type::Double => "double".into(),
            Type::String => "string".into(),
            Type::Binary => "binary".into(),
            Type::Uuid => "uuid".into(),
            Type::List(e) => format!("list<{}>", self.type_name(e)),
            Type::Set(e) => format!("set<{}>", self.type_name(e)),
            Type::Map(k, v) => format!("map<{}, {}>", self.type_name(k), self.type_name(v)),
            Type::Struct(i) => self.structs[*i].name.clone(),
            Type::Enum(i) => self.enums[*i].name.clone(),
        }
    }
}

impl Service {
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Where a name points before it is resolved.
#[derive(Clone, Copy)]
enum Def {
    Struct(usize),
    Enum(usize),
    Typedef(usize, usize),
    Service(usize, usize),
}

struct File {
    path: PathBuf,
    text: String,
    doc: Document,
    /// Include prefix (file stem) → file index.
    includes: HashMap<String, usize>,
    names: HashMap<String, Def>,
}

/// Reads `paths` and every file they include (relative to the including file) into one schema.
pub fn load(paths: &[PathBuf]) -> Result<Schema, IdlError> {
    load_with(paths, &|path| std::fs::read_to_string(path))
}

/// [`load`], with `read` supplying each file's text: a program that embeds its IDL
/// (`include_str!`) serves it from memory, so that it runs wherever it is installed.
pub fn load_with(
    paths: &[PathBuf],
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Schema, IdlError> {
    let mut files: Vec<File> = Vec::new();
    let mut by_path: HashMap<PathBuf, usize> = HashMap::new();
    for path in paths {
        read_file(path, None, &mut files, &mut by_path, 0, read)?;
    }
    let mut schema = Schema {
        files: files.iter().map(|f| f.path.clone()).collect(),
        ..Schema::default()
    };
    // Declare every struct and enum first, so that fields may name types declared later or in
    // other files.
    for (fi, file) in files.iter_mut().enumerate() {
        for e in &file.doc.enums {
            file.names
                .insert(e.name.clone(), Def::Enum(schema.enums.len()));
            schema.enums.push(EnumDef {
                name: e.name.clone(),
                values: e.values.clone(),
            });
        }
        for (si, s) in file.doc.structs.iter().enumerate() {
            let _ = si;
            file.names
                .insert(s.name.clone(), Def::Struct(schema.structs.len()));
            schema.structs.push(StructDef {
                name: s.name.clone(),
                kind: s.kind,
                fields: Vec::new(),
            });
        }
        for (ti, t) in file.doc.typedefs.iter().enumerate() {
            file.names.insert(t.name.clone(), Def::Typedef(fi, ti));
        }
        for (si, s) in file.doc.services.iter().enumerate() {
            file.names.insert(s.name.clone(), Def::Service(fi, si));
        }
    }
    let r = Resolver { files: &files };
    let mut next_struct = 0;
    for (fi, file) in files.iter().enumerate() {
        for s in &file.doc.structs {
            let fields = r.fields(fi, &s.fields)?;
            schema.structs[next_struct].fields = fields;
            next_struct += 1;
        }
        for c in &file.doc.consts {
            schema.consts.push(Constant {
                name: c.name.clone(),
                ty: r.ty(fi, &c.ty, 0)?,
                value: c.value.clone(),
            });
        }
    }
    for (fi, file) in files.iter().enumerate() {
        for si in 0..file.doc.services.len() {
            let mut functions = Vec::new();
            let (mut f, mut s) = (fi, si);
            let mut seen = Vec::new();
            loop {
                if seen.contains(&(f, s)) {
                    let svc = &files[fi].doc.services[si];
                    return Err(r.error(fi, 0..0, format!("service {} extends itself", svc.name)));
                }
                seen.push((f, s));
                let svc = &files[f].doc.services[s];
                for func in &svc.functions {
                    if functions.iter().any(|g: &Function| g.name == func.name) {
                        continue;
                    }
                    functions.push(Function {
                        name: func.name.clone(),
                        oneway: func.oneway,
                        returns: match &func.returns {
                            Some(t) => Some(r.ty(f, t, 0)?),
                            None => None,
                        },
                        args: r.fields(f, &func.args)?,
                        throws: r.fields(f, &func.throws)?,
                    });
                }
                let Some((parent, span)) = &svc.extends else {
                    break;
                };
                match r.lookup(f, parent, span)? {
                    Def::Service(pf, ps) => (f, s) = (pf, ps),
                    _ => {
                        return Err(r.error(
                            f,
                            span.clone(),
                            format!("`{parent}` is not a service"),
                        ))
                    }
                }
            }
            schema.services.push(Service {
                name: file.doc.services[si].name.clone(),
                functions,
            });
        }
    }
    Ok(schema)
}

fn read_file(
    path: &Path,
    from: Option<(usize, Range<usize>)>,
    files: &mut Vec<File>,
    by_path: &mut HashMap<PathBuf, usize>,
    depth: usize,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<usize, IdlError> {
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if let Some(&i) = by_path.get(&key) {
        return Ok(i);
    }
    let unreadable = |message: String| match &from {
        Some((fi, span)) => IdlError {
            path: files[*fi].path.clone(),
            text: files[*fi].text.clone(),
            span: span.clone(),
            message,
        },
        None => IdlError {
            path: path.to_path_buf(),
            text: String::new(),
            span: 0..0,
            message,
        },
    };
    if depth > 32 {
        return Err(unreadable("includes nested more than 32 deep".into()));
    }
    let text =
        read(path).map_err(|e| unreadable(format!("cannot read {}: {e}", path.display())))?;
    let doc = parse(&text).map_err(|e| IdlError {
        path: path.to_path_buf(),
        text: text.clone(),
        span: e.span,
        message: e.message,
    })?;
    let index = files.len();
    by_path.insert(key, index);
    let includes_list = doc.includes.clone();
    files.push(File {
        path: path.to_path_buf(),
        text,
        doc,
        includes: HashMap::new(),
        names: HashMap::new(),
    });
    let dir = path.parent().unwrap_or(Path::new("."));
    for (name, span) in includes_list {
        let target = dir.join(&name);
        let i = read_file(
            &target,
            Some((index, span)),
            files,
            by_path,
            depth + 1,
            read,
        )?;
        let stem = Path::new(&name)
            .file_stem()
            .map_or(name.clone(), |s| s.to_string_lossy().into_owned());
        files[index].includes.insert(stem, i);
    }
    Ok(index)
}

struct Resolver<'a> {
    files: &'a [File],
}

impl Resolver<'_> {
    fn error(&self, file: usize, span: Range<usize>, message: String) -> IdlError {
        IdlError {
            path: self.files[file].path.clone(),
            text: self.files[file].text.clone(),
            span,
            message,
        }
    }

    /// `Name` in `file`, or `prefix.Name` in the file it includes as `prefix`.
    fn lookup(&self, file: usize, name: &str, span: &Range<usize>) -> Result<Def, IdlError> {
        let f = &self.files[file];
        if let Some(d) = f.names.get(name) {
            return Ok(*d);
        }
        if let Some((prefix, rest)) = name.split_once('.') {
            if let Some(&inc) = f.includes.get(prefix) {
                if let Some(d) = self.files[inc].names.get(rest) {
                    return Ok(*d);
                }
            }
        }
        let mut known: Vec<&str> = f.names.keys().map(String::as_str).collect();
        known.sort();
        Err(self.error(
            file,
            span.clone(),
            format!(
                "unknown type `{name}`; known here: {}{}",
                if known.is_empty() { "none" } else { "" },
                known.join(", ")
            ),
        ))
    }

    fn ty(&self, file: usize, t: &TypeRef, depth: usize) -> Result<Type, IdlError> {
        Ok(match t {
            TypeRef::Base(b) => match *b {
                "bool" => Type::Bool,
                "byte" | "i8" => Type::Byte,
                "i16" => Type::I16,
                "i32" => Type::I32,
                "i64" => Type::I64,
                "double" => Type::Double,
                "string" => Type::String,
                "binary" => Type::Binary,
                _ => Type::Uuid,
            },
            TypeRef::List(e) => Type::List(Box::new(self.ty(file, e, depth)?)),
            TypeRef::Set(e) => Type::Set(Box::new(self.ty(file, e, depth)?)),
            TypeRef::Map(k, v) => Type::Map(
                Box::new(self.ty(file, k, depth)?),
                Box::new(self.ty(file, v, depth)?),
            ),
            TypeRef::Named(name, span) => match self.lookup(file, name, span)? {
                Def::Struct(i) => Type::Struct(i),
                Def::Enum(i) => Type::Enum(i),
                Def::Typedef(f, t) => {
                    if depth > 32 {
                        return Err(self.error(
                            file,
                            span.clone(),
                            format!("typedef `{name}` refers to itself"),
                        ));
                    }
                    self.ty(f, &self.files[f].doc.typedefs[t].ty, depth + 1)?
                }
                Def::Service(..) => {
                    return Err(self.error(
                        file,
                        span.clone(),
                        format!("`{name}` is a service, not a type"),
                    ))
                }
            },
        })
    }

    fn fields(&self, file: usize, fields: &[FieldAst]) -> Result<Vec<Field>, IdlError> {
        fields
            .iter()
            .map(|f| {
                Ok(Field {
                    id: f.id,
                    name: f.name.clone(),
                    req: f.req,
                    ty: self.ty(file, &f.ty, 0)?,
                    default: f.default.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A directory of the test's own, removed when the test is done with it.
    struct Temp(PathBuf);

    impl std::ops::Deref for Temp {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp(name: &str) -> Temp {
        let d = std::env::temp_dir().join(format!("onrush-thrift-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Temp(d)
    }

    #[test]
    fn includes_typedefs_and_extends_resolve() {
        let d = temp("resolve");
        write(
            &d,
            "shared.thrift",
            "struct SharedStruct { 1: i32 key, 2: string value }\n\
             service SharedService { SharedStruct getStruct(1: i32 key) }",
        );
        let main = write(
            &d,
            "calc.thrift",
            "include \"shared.thrift\"\ntypedef list<shared.SharedStruct> Many\n\
             service Calc extends shared.SharedService { Many all(1: Many m) }",
        );
        let s = load(&[main]).unwrap();
        let calc = s.service("Calc").unwrap();
        assert_eq!(calc.functions[0].name, "all");
        assert_eq!(calc.functions[1].name, "getStruct");
        assert_eq!(
            s.type_name(calc.functions[0].returns.as_ref().unwrap()),
            "list<SharedStruct>"
        );
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let d = temp("errors");
        let bad = write(
            &d,
            "bad.thrift",
            "struct A {\n  1: i32 x,\n  2: Missing y\n}\n",
        );
        let e = load(&[bad]).unwrap_err();
        assert_eq!(e.line_col(), (3, 6));
        assert!(
            e.to_string()
                .contains("bad.thrift:3:6: unknown type `Missing`"),
            "{e}"
        );
        let syntax = write(&d, "syntax.thrift", "enum E {\n  A = x\n}\n");
        let e = load(&[syntax]).unwrap_err();
        assert_eq!(e.line_col(), (2, 7));
        let inc = write(&d, "inc.thrift", "include \"nope.thrift\"\n");
        let e = load(&[inc]).unwrap_err();
        assert_eq!(e.line_col(), (1, 9));
        assert!(e.message.contains("cannot read"), "{e}");
    }
}

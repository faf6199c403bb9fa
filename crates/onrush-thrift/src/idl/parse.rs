//! Tokens of one `.thrift` file → its syntax tree ([`Document`]); type names stay unresolved
//! (the resolver in `resolve.rs` joins files). Follows Apache Thrift's IDL grammar; annotations
//! `( key = "value" )`, `cpp_include`, `xsd_*` and `senum` are read and dropped.

use std::ops::Range;

use super::lexer::{lex, Tok, Token};

/// A syntax error: where, and what.
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub span: Range<usize>,
    pub message: String,
}

#[derive(Debug, Default)]
pub(crate) struct Document {
    /// `include "file.thrift"` and where it was written.
    pub includes: Vec<(String, Range<usize>)>,
    pub typedefs: Vec<Typedef>,
    pub consts: Vec<ConstDef>,
    pub enums: Vec<EnumAst>,
    pub structs: Vec<StructAst>,
    pub services: Vec<ServiceAst>,
}

/// A type as written: a base type, a name to resolve, or a container.
#[derive(Debug, Clone)]
pub(crate) enum TypeRef {
    Base(&'static str),
    Named(String, Range<usize>),
    List(Box<TypeRef>),
    Set(Box<TypeRef>),
    Map(Box<TypeRef>, Box<TypeRef>),
}

#[derive(Debug)]
pub(crate) struct Typedef {
    pub name: String,
    pub ty: TypeRef,
}

/// A constant value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Int(i64),
    Double(f64),
    Str(String),
    /// An enum value (`Op.ADD`) or another constant's name.
    Ident(String),
    List(Vec<ConstValue>),
    Map(Vec<(ConstValue, ConstValue)>),
}

#[derive(Debug)]
pub(crate) struct ConstDef {
    pub name: String,
    pub ty: TypeRef,
    pub value: ConstValue,
}

#[derive(Debug)]
pub(crate) struct EnumAst {
    pub name: String,
    pub values: Vec<(String, i32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructKind {
    Struct,
    Union,
    Exception,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requiredness {
    Required,
    Optional,
    /// Neither keyword: written when set, may be absent.
    Default,
}

#[derive(Debug)]
pub(crate) struct FieldAst {
    pub id: i16,
    pub req: Requiredness,
    pub ty: TypeRef,
    pub name: String,
    pub default: Option<ConstValue>,
}

#[derive(Debug)]
pub(crate) struct StructAst {
    pub name: String,
    pub kind: StructKind,
    pub fields: Vec<FieldAst>,
}

#[derive(Debug)]
pub(crate) struct FunctionAst {
    pub name: String,
    pub oneway: bool,
    /// None: `void`.
    pub returns: Option<TypeRef>,
    pub args: Vec<FieldAst>,
    pub throws: Vec<FieldAst>,
}

#[derive(Debug)]
pub(crate) struct ServiceAst {
    pub name: String,
    pub extends: Option<(String, Range<usize>)>,
    pub functions: Vec<FunctionAst>,
}

const BASE_TYPES: [&str; 10] = [
    "bool", "byte", "i8", "i16", "i32", "i64", "double", "string", "binary", "uuid",
];

pub(crate) fn parse(text: &str) -> Result<Document, SyntaxError> {
    let tokens = lex(text).map_err(|e| SyntaxError {
        span: e.span,
        message: e.message,
    })?;
    let mut p = Parser {
        tokens,
        at: 0,
        end: text.len(),
    };
    let mut doc = Document::default();
    while p.peek().is_some() {
        p.definition(&mut doc)?;
    }
    Ok(doc)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// The text's length: where "end of file" errors point.
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at).map(|t| &t.tok)
    }

    fn span(&self) -> Range<usize> {
        self.tokens
            .get(self.at)
            .map_or(self.end..self.end, |t| t.span.clone())
    }

    fn error<T>(&self, expected: &str) -> Result<T, SyntaxError> {
        let found = match self.peek() {
            None => "the end of the file".to_string(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Int(i)) => format!("the number {i}"),
            Some(Tok::Double(d)) => format!("the number {d}"),
            Some(Tok::Str(s)) => format!("the string {s:?}"),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        };
        Err(SyntaxError {
            span: self.span(),
            message: format!("expected {expected}, found {found}"),
        })
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, c: char) -> Result<(), SyntaxError> {
        if self.eat(c) {
            Ok(())
        } else {
            self.error(&format!("`{c}`"))
        }
    }

    fn keyword(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(s)) if s == word) {
            self.at += 1;
            return true;
        }
        false
    }

    fn ident(&mut self, what: &str) -> Result<(String, Range<usize>), SyntaxError> {
        match self.peek() {
            Some(Tok::Ident(_)) => {
                let t = self.next().expect("peeked");
                let Tok::Ident(s) = t.tok else { unreachable!() };
                Ok((s, t.span))
            }
            _ => self.error(what),
        }
    }

    fn string(&mut self, what: &str) -> Result<(String, Range<usize>), SyntaxError> {
        match self.peek() {
            Some(Tok::Str(_)) => {
                let t = self.next().expect("peeked");
                let Tok::Str(s) = t.tok else { unreachable!() };
                Ok((s, t.span))
            }
            _ => self.error(what),
        }
    }

    /// `,` or `;` between items, optional.
    fn separator(&mut self) {
        let _ = self.eat(',') || self.eat(';');
    }

    /// `( name = "value", ... )`, dropped.
    fn annotations(&mut self) -> Result<(), SyntaxError> {
        if !self.eat('(') {
            return Ok(());
        }
        while !self.eat(')') {
            self.ident("an annotation name")?;
            if self.eat('=') {
                self.string("an annotation value (a string)")?;
            }
            self.separator();
        }
        Ok(())
    }

    fn definition(&mut self, doc: &mut Document) -> Result<(), SyntaxError> {
        let (word, span) = self.ident(
            "a definition (`include`, `namespace`, `typedef`, `const`, `enum`, `struct`, \
             `union`, `exception` or `service`)",
        )?;
        match word.as_str() {
            "include" => {
                let (file, span) = self.string("the included file's name in quotes")?;
                doc.includes.push((file, span));
            }
            "cpp_include" => {
                self.string("a file name in quotes")?;
            }
            "namespace" => {
                // `namespace SCOPE NAME`; scope `*` allowed.
                if !self.eat('*') {
                    self.ident("a namespace scope (e.g. `py`, `java`, `*`)")?;
                }
                self.ident("a namespace name")?;
                self.annotations()?;
            }
            "typedef" => {
                let ty = self.field_type()?;
                let (name, _) = self.ident("the typedef's name")?;
                self.annotations()?;
                self.separator();
                doc.typedefs.push(Typedef { name, ty });
            }
            "const" => {
                let ty = self.field_type()?;
                let (name, _) = self.ident("the constant's name")?;
                self.expect('=')?;
                let value = self.const_value()?;
                self.separator();
                doc.consts.push(ConstDef { name, ty, value });
            }
            "enum" => {
                let (name, _) = self.ident("the enum's name")?;
                self.expect('{')?;
                let mut values = Vec::new();
                let mut next: i64 = 0;
                while !self.eat('}') {
                    let (value, _) = self.ident("an enum value's name, or `}`")?;
                    if self.eat('=') {
                        let span = self.span();
                        match self.next().map(|t| t.tok) {
                            Some(Tok::Int(n)) if i32::try_from(n).is_ok() => next = n,
                            _ => {
                                return Err(SyntaxError {
                                    span,
                                    message: "expected an integer (a 32-bit enum value)".into(),
                                })
                            }
                        }
                    }
                    values.push((value, next as i32));
                    next += 1;
                    self.annotations()?;
                    self.separator();
                }
                self.annotations()?;
                doc.enums.push(EnumAst { name, values });
            }
            "senum" => {
                self.ident("the senum's name")?;
                self.expect('{')?;
                while !self.eat('}') {
                    self.string("a string")?;
                    self.separator();
                }
            }
            "struct" | "union" | "exception" => {
                let kind = match word.as_str() {
                    "struct" => StructKind::Struct,
                    "union" => StructKind::Union,
                    _ => StructKind::Exception,
                };
                let (name, _) = self.ident(&format!("the {word}'s name"))?;
                self.keyword("xsd_all");
                self.expect('{')?;
                let fields = self.fields('}')?;
                self.annotations()?;
                doc.structs.push(StructAst { name, kind, fields });
            }
            "service" => {
                let (name, _) = self.ident("the service's name")?;
                let extends = if self.keyword("extends") {
                    Some(self.ident("the name of the service it extends")?)
                } else {
                    None
                };
                self.expect('{')?;
                let mut functions = Vec::new();
                while !self.eat('}') {
                    functions.push(self.function()?);
                }
                self.annotations()?;
                doc.services.push(ServiceAst {
                    name,
                    extends,
                    functions,
                });
            }
            _ => {
                return Err(SyntaxError {
                    span,
                    message: format!(
                        "unknown definition `{word}`; expected `include`, `namespace`, \
                         `typedef`, `const`, `enum`, `struct`, `union`, `exception` or `service`"
                    ),
                })
            }
        }
        Ok(())
    }

    fn function(&mut self) -> Result<FunctionAst, SyntaxError> {
        let oneway = self.keyword("oneway");
        let returns = if self.keyword("void") {
            None
        } else {
            Some(self.field_type()?)
        };
        let (name, _) = self.ident("the function's name")?;
        self.expect('(')?;
        let args = self.fields(')')?;
        let throws = if self.keyword("throws") {
            self.expect('(')?;
            self.fields(')')?
        } else {
            Vec::new()
        };
        self.annotations()?;
        self.separator();
        Ok(FunctionAst {
            name,
            oneway,
            returns,
            args,
            throws,
        })
    }

    /// Fields up to `close`; fields without an id get -1, -2, ... as Apache's compiler does.
    fn fields(&mut self, close: char) -> Result<Vec<FieldAst>, SyntaxError> {
        let mut fields: Vec<FieldAst> = Vec::new();
        let mut auto: i16 = 0;
        while !self.eat(close) {
            let id_span = self.span();
            let id = match self.peek() {
                Some(Tok::Int(n)) => {
                    let n = *n;
                    self.at += 1;
                    self.expect(':')?;
                    if !(1..=i16::MAX as i64).contains(&n) {
                        return Err(SyntaxError {
                            span: id_span,
                            message: format!("field id {n}; expected 1 to 32767"),
                        });
                    }
                    n as i16
                }
                _ => {
                    auto -= 1;
                    auto
                }
            };
            let req = if self.keyword("required") {
                Requiredness::Required
            } else if self.keyword("optional") {
                Requiredness::Optional
            } else {
                Requiredness::Default
            };
            let ty = self.field_type()?;
            let (name, name_span) = self.ident("the field's name")?;
            if fields.iter().any(|f| f.id == id) {
                return Err(SyntaxError {
                    span: id_span,
                    message: format!("field id {id} is used twice"),
                });
            }
            if fields.iter().any(|f| f.name == name) {
                return Err(SyntaxError {
                    span: name_span,
                    message: format!("field name `{name}` is used twice"),
                });
            }
            let default = if self.eat('=') {
                Some(self.const_value()?)
            } else {
                None
            };
            self.keyword("xsd_optional");
            self.keyword("xsd_nillable");
            self.annotations()?;
            self.separator();
            fields.push(FieldAst {
                id,
                req,
                ty,
                name,
                default,
            });
        }
        Ok(fields)
    }

    fn field_type(&mut self) -> Result<TypeRef, SyntaxError> {
        let (name, span) = self.ident("a type (e.g. `i32`, `string`, `list<T>` or a name)")?;
        let ty = match name.as_str() {
            "list" | "set" => {
                self.expect('<')?;
                let elem = Box::new(self.field_type()?);
                self.expect('>')?;
                if name == "list" {
                    TypeRef::List(elem)
                } else {
                    TypeRef::Set(elem)
                }
            }
            "map" => {
                self.expect('<')?;
                let k = Box::new(self.field_type()?);
                self.expect(',')?;
                let v = Box::new(self.field_type()?);
                self.expect('>')?;
                TypeRef::Map(k, v)
            }
            _ => match BASE_TYPES.iter().find(|b| **b == name) {
                Some(b) => TypeRef::Base(b),
                None => TypeRef::Named(name, span),
            },
        };
        if self.keyword("cpp_type") {
            self.string("a C++ type name")?;
        }
        self.annotations()?;
        Ok(ty)
    }

    fn const_value(&mut self) -> Result<ConstValue, SyntaxError> {
        let span = self.span();
        match self.next().map(|t| t.tok) {
            Some(Tok::Int(n)) => Ok(ConstValue::Int(n)),
            Some(Tok::Double(d)) => Ok(ConstValue::Double(d)),
            Some(Tok::Str(s)) => Ok(ConstValue::Str(s)),
            Some(Tok::Ident(s)) => Ok(ConstValue::Ident(s)),
            Some(Tok::Punct('[')) => {
                let mut items = Vec::new();
                while !self.eat(']') {
                    items.push(self.const_value()?);
                    self.separator();
                }
                Ok(ConstValue::List(items))
            }
            Some(Tok::Punct('{')) => {
                let mut entries = Vec::new();
                while !self.eat('}') {
                    let k = self.const_value()?;
                    self.expect(':')?;
                    let v = self.const_value()?;
                    entries.push((k, v));
                    self.separator();
                }
                Ok(ConstValue::Map(entries))
            }
            _ => {
                self.at -= 1;
                let _ = span;
                self.error("a constant value (a number, a string, a name, `[...]` or `{...}`)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_definition() {
        let doc = parse(
            r#"
            include "shared.thrift"
            namespace py tutorial
            namespace * t
            typedef i32 MyInteger
            const i32 INT32CONSTANT = 9853
            const map<string,string> MAPCONSTANT = {'hello':'world', 'goodnight':'moon'}
            enum Operation { ADD = 1, SUBTRACT = 2, MULTIPLY, DIVIDE = 4 }
            struct Work {
              1: i32 num1 = 0,
              2: required i32 num2,
              3: Operation op,
              4: optional string comment,
              5: list<map<string, set<i64>>> deep (a = "b")
            }
            union U { 1: string s; 2: i64 n }
            exception InvalidOperation { 1: i32 whatOp, 2: string why }
            service Calculator extends shared.SharedService {
              void ping(),
              i32 calculate(1:i32 logid, 2:Work w) throws (1:InvalidOperation ouch),
              oneway void zip()
            }
            "#,
        )
        .unwrap();
        assert_eq!(doc.includes[0].0, "shared.thrift");
        assert_eq!(doc.typedefs[0].name, "MyInteger");
        assert_eq!(doc.consts.len(), 2);
        assert_eq!(
            doc.enums[0].values,
            vec![
                ("ADD".into(), 1),
                ("SUBTRACT".into(), 2),
                ("MULTIPLY".into(), 3),
                ("DIVIDE".into(), 4)
            ]
        );
        let work = &doc.structs[0];
        assert_eq!(work.fields[0].default, Some(ConstValue::Int(0)));
        assert_eq!(work.fields[1].req, Requiredness::Required);
        assert_eq!(work.fields[3].req, Requiredness::Optional);
        assert_eq!(doc.structs[1].kind, StructKind::Union);
        assert_eq!(doc.structs[2].kind, StructKind::Exception);
        let calc = &doc.services[0];
        assert_eq!(calc.extends.as_ref().unwrap().0, "shared.SharedService");
        assert!(calc.functions[0].returns.is_none());
        assert_eq!(calc.functions[1].throws[0].name, "ouch");
        assert!(calc.functions[2].oneway);
    }

    #[test]
    fn errors_point_at_the_token() {
        let text = "struct A {\n  1: i32 x\n  2: i32\n}";
        let e = parse(text).unwrap_err();
        // `}` on line 4 where the field's name was expected.
        assert_eq!(&text[e.span.clone()], "}");
        assert!(
            e.message.contains("expected the field's name"),
            "{}",
            e.message
        );
        let e = parse("struct A { 1: i32 a, 1: i32 b }").unwrap_err();
        assert!(e.message.contains("used twice"));
        let e = parse("strukt A {}").unwrap_err();
        assert_eq!(e.span, 0..6);
        let e = parse("service S { i32 f(").unwrap_err();
        assert!(e.message.contains("end of the file"), "{}", e.message);
    }
}

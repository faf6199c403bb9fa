//! A thrift step's `args:` (YAML or JSON) typed against the method's IDL into a value tree:
//! field ids and wire types looked up once, constants converted now, `${...}` leaves kept as
//! templates rendered per call. A value that does not fit its type, an unknown field and a
//! missing required field are errors at the plan's line with the field path.

use onrush_plan::grammar::{did_you_mean, one_of, Mapping, Value};
use onrush_plan::{PlanError, Template};
use onrush_thrift::value::{self, parse_bool, wire_type, FieldValue, Leaf};
use onrush_thrift::{ConstValue, Field, Function, Requiredness, Schema, Service, StructKind, Type};

type V = value::Value<Template>;

/// The argument struct of `func` from the step's `args:` (absent: no arguments given; errors
/// about missing ones are then at the step).
pub(crate) fn args(
    schema: &Schema,
    step: &Mapping<'_>,
    svc: &Service,
    func: &Function,
) -> Result<Vec<FieldValue<Template>>, PlanError> {
    let what = format!("{}.{}", svc.name, func.name);
    let (node, given) = match step.get("args") {
        Some(args) => (args, true),
        None => (step.as_value(), false),
    };
    let path = match given {
        true => node.path().to_string(),
        false => format!("{}.args", node.path()),
    };
    structure(
        schema,
        &node,
        given,
        &path,
        &func.args,
        StructKind::Struct,
        &what,
        "argument",
    )
}

#[allow(clippy::too_many_arguments)]
fn structure(
    schema: &Schema,
    node: &Value<'_>,
    given: bool,
    path: &str,
    fields: &[Field],
    kind: StructKind,
    what: &str,
    member: &str,
) -> Result<Vec<FieldValue<Template>>, PlanError> {
    let entries = if given && node.is_mapping() {
        node.entries()?
    } else if !given || node.is_null() {
        Vec::new()
    } else {
        return Err(node
            .error_for_field(
                path,
                format!(
                    "expected a mapping of {what}'s {member}s, found {}",
                    node.describe()
                ),
            )
            .with_hint(format!(
                "{what}'s {member}s: {}",
                field_list(schema, fields)
            )));
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    for (k, _) in &entries {
        let key = k.written().unwrap_or("");
        if !names.contains(&key) {
            let hint = match did_you_mean(key, names.iter().copied()) {
                Some(s) => format!(
                    "did you mean `{s}`? {what}'s {member}s: {}",
                    field_list(schema, fields)
                ),
                None => format!("{what}'s {member}s: {}", field_list(schema, fields)),
            };
            return Err(k
                .error_for_field(
                    &format!("{path}.{key}"),
                    format!("unknown {member} `{key}` of {what}"),
                )
                .with_hint(hint));
        }
    }
    let mut out = Vec::new();
    for field in fields {
        let child = format!("{path}.{}", field.name);
        let given = entries
            .iter()
            .find(|(k, _)| k.written() == Some(field.name.as_str()));
        let value = match given {
            Some((_, v)) => Some(typed(schema, v, &child, &field.ty)?),
            None if field.req == Requiredness::Optional => None,
            None => match field
                .default
                .as_ref()
                .and_then(|d| const_value(schema, d, &field.ty))
            {
                Some(v) => Some(v),
                None if field.req == Requiredness::Required => {
                    return Err(node
                        .error_for_field(
                            path,
                            format!("missing required {member} `{}` of {what}", field.name),
                        )
                        .with_hint(format!(
                            "add `{}: ...` ({})",
                            field.name,
                            schema.type_name(&field.ty)
                        )))
                }
                None => None,
            },
        };
        if let Some(value) = value {
            out.push(FieldValue {
                id: field.id,
                ty: wire_type(&field.ty),
                value,
            });
        }
    }
    if kind == StructKind::Union && out.len() != 1 {
        return Err(node
            .error_for_field(
                path,
                format!("union {what} takes exactly one field, found {}", out.len()),
            )
            .with_hint(format!("set one of {}", one_of(&names))));
    }
    Ok(out)
}

fn typed(schema: &Schema, node: &Value<'_>, path: &str, ty: &Type) -> Result<V, PlanError> {
    let type_name = schema.type_name(ty);
    let mismatch =
        |found: &str| node.error_for_field(path, format!("expected {type_name}, found {found}"));
    if node.is_null() {
        return Err(mismatch("nothing (an empty value)"));
    }
    match ty {
        Type::List(elem) | Type::Set(elem) => {
            if !node.is_list() {
                return Err(mismatch(&node.describe()).with_hint("write a list: `[a, b]`"));
            }
            let values = node
                .list()?
                .iter()
                .enumerate()
                .map(|(i, item)| typed(schema, item, &format!("{path}[{i}]"), elem))
                .collect::<Result<_, _>>()?;
            Ok(V::List(wire_type(elem), values))
        }
        Type::Map(k, v) => {
            if !node.is_mapping() {
                return Err(
                    mismatch(&node.describe()).with_hint("write a mapping: `{ key: value }`")
                );
            }
            let mut out = Vec::new();
            for (key, value) in node.entries()? {
                let child = format!("{path}.{}", key.written().unwrap_or(""));
                out.push((
                    typed(schema, &key, &child, k)?,
                    typed(schema, &value, &child, v)?,
                ));
            }
            Ok(V::Map(wire_type(k), wire_type(v), out))
        }
        Type::Struct(i) => {
            let def = &schema.structs[*i];
            if !node.is_mapping() {
                return Err(mismatch(&node.describe()).with_hint(format!(
                    "{}'s fields: {}",
                    def.name,
                    field_list(schema, &def.fields)
                )));
            }
            Ok(V::Struct(structure(
                schema,
                node,
                true,
                path,
                &def.fields,
                def.kind,
                &def.name,
                "field",
            )?))
        }
        _ => scalar(schema, node, path, ty, &type_name),
    }
}

/// A scalar: a template with per-request parts stays a template; anything else is
/// converted now.
fn scalar(
    schema: &Schema,
    node: &Value<'_>,
    path: &str,
    ty: &Type,
    type_name: &str,
) -> Result<V, PlanError> {
    let Some(written) = node.written() else {
        return Err(node.error_for_field(
            path,
            format!("expected {type_name}, found {}", node.describe()),
        ));
    };
    let leaf = match ty {
        Type::Bool => Leaf::Bool,
        Type::Byte => Leaf::Byte,
        Type::I16 => Leaf::I16,
        Type::I32 => Leaf::I32,
        Type::I64 => Leaf::I64,
        Type::Double => Leaf::Double,
        Type::Enum(e) => Leaf::Enum(schema.enums[*e].values.clone()),
        _ => Leaf::Bytes,
    };
    let template = if written.contains("${") {
        node.template()?
    } else {
        Template::constant(written)
    };
    if !template.is_constant() {
        return Ok(V::Dynamic(template, leaf));
    }
    let text = String::from_utf8_lossy(template.constant_bytes().expect("constant")).into_owned();
    let s = text.trim();
    let bad = |expected: String| {
        node.error_for_field(path, format!("expected {expected}, found {written:?}"))
    };
    let int = |min: i64, max: i64| -> Result<i64, PlanError> {
        s.parse::<i64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| bad(format!("{type_name} (an integer {min}..={max})")))
    };
    Ok(match ty {
        Type::Bool => V::Bool(parse_bool(s).ok_or_else(|| bad("a bool (true or false)".into()))?),
        Type::Byte => V::Byte(int(i8::MIN as i64, i8::MAX as i64)? as i8),
        Type::I16 => V::I16(int(i16::MIN as i64, i16::MAX as i64)? as i16),
        Type::I32 => V::I32(int(i32::MIN as i64, i32::MAX as i64)? as i32),
        Type::I64 => V::I64(int(i64::MIN, i64::MAX)?),
        Type::Double => V::Double(s.parse().map_err(|_| bad("a double (a number)".into()))?),
        Type::String | Type::Binary => V::Bytes(text.into_bytes()),
        Type::Uuid => V::Uuid(
            parse_uuid(s).ok_or_else(|| bad("a uuid (32 hex digits, dashes allowed)".into()))?,
        ),
        Type::Enum(e) => {
            let def = &schema.enums[*e];
            let found = def
                .values
                .iter()
                .find(|(name, _)| name == s)
                .map(|(_, n)| *n)
                .or_else(|| {
                    s.parse::<i32>()
                        .ok()
                        .filter(|n| def.values.iter().any(|(_, v)| v == n))
                });
            let names: Vec<&str> = def.values.iter().map(|(n, _)| n.as_str()).collect();
            match found {
                Some(n) => V::I32(n),
                None => {
                    // did_you_mean compares lower case; enum values are usually upper case.
                    let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
                    let near = did_you_mean(s, lower.iter().map(String::as_str))
                        .and_then(|l| lower.iter().position(|n| n == l))
                        .map(|i| names[i]);
                    let hint = match near {
                        Some(m) => format!(
                            "did you mean `{m}`? {}'s values: {}",
                            def.name,
                            one_of(&names)
                        ),
                        None => format!("{}'s values: {}", def.name, one_of(&names)),
                    };
                    return Err(bad(format!("a value of enum {}", def.name)).with_hint(hint));
                }
            }
        }
        _ => unreachable!("containers and structs are handled by `typed`"),
    })
}
fn field_list(schema: &Schema, fields: &[Field]) -> String {
    if fields.is_empty() {
        return "none".into();
    }
    fields
        .iter()
        .map(|f| {
            let req = match f.req {
                Requiredness::Required => "required ",
                _ => "",
            };
            format!("`{}` ({req}{})", f.name, schema.type_name(&f.ty))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: Vec<u8> = s.bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// An IDL default value as a value of `ty`; None when it does not fit (then it is not sent).
fn const_value(schema: &Schema, c: &ConstValue, ty: &Type) -> Option<V> {
    Some(match (ty, c) {
        (Type::Bool, ConstValue::Int(n)) => V::Bool(*n != 0),
        (Type::Bool, ConstValue::Ident(s)) => V::Bool(parse_bool(s)?),
        (Type::Byte, ConstValue::Int(n)) => V::Byte(i8::try_from(*n).ok()?),
        (Type::I16, ConstValue::Int(n)) => V::I16(i16::try_from(*n).ok()?),
        (Type::I32, ConstValue::Int(n)) => V::I32(i32::try_from(*n).ok()?),
        (Type::I64, ConstValue::Int(n)) => V::I64(*n),
        (Type::Double, ConstValue::Int(n)) => V::Double(*n as f64),
        (Type::Double, ConstValue::Double(d)) => V::Double(*d),
        (Type::String | Type::Binary, ConstValue::Str(s)) => V::Bytes(s.clone().into_bytes()),
        (Type::Enum(_), ConstValue::Int(n)) => V::I32(i32::try_from(*n).ok()?),
        (Type::Enum(e), ConstValue::Ident(name)) => {
            let short = name.rsplit('.').next().unwrap_or(name);
            V::I32(schema.enums[*e].values.iter().find(|(n, _)| n == short)?.1)
        }
        (_, ConstValue::Ident(name)) => {
            let constant = schema.consts.iter().find(|k| &k.name == name)?;
            return const_value(schema, &constant.value, ty);
        }
        (Type::List(e) | Type::Set(e), ConstValue::List(items)) => V::List(
            wire_type(e),
            items
                .iter()
                .map(|i| const_value(schema, i, e))
                .collect::<Option<_>>()?,
        ),
        (Type::Map(k, v), ConstValue::Map(entries)) => V::Map(
            wire_type(k),
            wire_type(v),
            entries
                .iter()
                .map(|(a, b)| Some((const_value(schema, a, k)?, const_value(schema, b, v)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

//! A request message built per call from its compiled form (onrush-plan's `GrpcMessage`):
//! fixed values are copied, `${...}` values rendered and converted to their field's type.

use crate::spec::{scalar_value, GrpcMessage, GrpcValue};
use onrush_plan::RenderContext;
use prost_reflect::{DynamicMessage, Value};

/// Why a message could not be built.
pub enum BuildError {
    /// A template used a runtime variable with no value (its slot).
    Unset(usize),
    /// A rendered value did not fit its field: the field's name and why.
    Invalid(String),
}

/// Builds `m` into a new dynamic message, rendering with `ctx` through `buf`.
pub fn build(
    m: &GrpcMessage,
    ctx: &RenderContext<'_>,
    buf: &mut Vec<u8>,
) -> Result<DynamicMessage, BuildError> {
    let mut msg = DynamicMessage::new(m.descriptor.clone());
    for (field, value) in &m.fields {
        let v = value_of(value, ctx, buf).map_err(|e| prefix(e, field.name()))?;
        msg.set_field(field, v);
    }
    Ok(msg)
}

fn prefix(e: BuildError, name: &str) -> BuildError {
    match e {
        BuildError::Invalid(why) => BuildError::Invalid(format!("{name}: {why}")),
        unset => unset,
    }
}

fn value_of(
    v: &GrpcValue,
    ctx: &RenderContext<'_>,
    buf: &mut Vec<u8>,
) -> Result<Value, BuildError> {
    Ok(match v {
        GrpcValue::Fixed(v) => v.clone(),
        GrpcValue::Template(t, kind) => {
            buf.clear();
            t.render(ctx, buf).map_err(|u| BuildError::Unset(u.slot))?;
            let text = std::str::from_utf8(buf)
                .map_err(|_| BuildError::Invalid("the value is not UTF-8".into()))?;
            scalar_value(kind, text).map_err(BuildError::Invalid)?
        }
        GrpcValue::Message(m) => Value::Message(build(m, ctx, buf)?),
        GrpcValue::List(items) => Value::List(
            items
                .iter()
                .map(|i| value_of(i, ctx, buf))
                .collect::<Result<_, _>>()?,
        ),
        GrpcValue::Map(pairs) => Value::Map(
            pairs
                .iter()
                .map(|(k, v)| Ok((k.clone(), value_of(v, ctx, buf)?)))
                .collect::<Result<_, BuildError>>()?,
        ),
    })
}

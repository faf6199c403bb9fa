//! A request step's body (`body`, `body_file`, `body_template`, `form`, `multipart`: at most
//! one) and `auth:` (an `Authorization` header from a user and a password, or a token).

use onrush_plan::grammar::{template_of, Mapping, TemplatePart, Value};
use onrush_plan::{PlanError, Template};
use onrush_template::{Builder, Func, Transform};

use crate::request::{Body, MultipartField};

const BODY_KEYS: [&str; 5] = ["body", "body_file", "body_template", "form", "multipart"];

/// The request body from whichever of the body keys is given.
pub(crate) fn body(step: &Mapping<'_>) -> Result<Body, PlanError> {
    let Some(key) = step.at_most_one(
        &BODY_KEYS,
        "body per request",
        "keep `body:` for an inline body, or one of `body_file`, `body_template`, `form`, `multipart`",
    )?
    else {
        return Ok(Body::None);
    };
    let value = step.get(key).expect("present");
    if value.is_null() {
        return Ok(Body::None);
    }
    Ok(match key {
        "body" => Body::Inline(value.template()?),
        "body_file" => Body::File(value.file("the body")?),
        "body_template" => Body::Inline(value.template_file()?),
        "form" => Body::Form(value.named_templates("form field")?),
        _ => Body::Multipart(multipart(&value)?),
    })
}

/// `multipart: { title: report, upload: { file: data.bin, content_type: ... } }`.
fn multipart(value: &Value<'_>) -> Result<Vec<MultipartField>, PlanError> {
    if !value.is_mapping() {
        return Err(value
            .error(format!("expected a mapping of field names to values or files, found {}", value.describe()))
            .with_hint("e.g. `multipart: { title: report, upload: { file: data.bin, content_type: application/octet-stream } }`"));
    }
    let mut out = Vec::new();
    for (key, field) in value.entries()? {
        let name = key.string()?;
        if field.is_mapping() {
            let f = field.mapping(&["file", "filename", "content_type"])?;
            let file = f
                .required("file", "the path of the file to upload")?
                .file("a multipart file")?;
            let filename = match f.get("filename") {
                Some(n) => n.string()?,
                None => file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "file".into()),
            };
            let content_type = match f.get("content_type") {
                Some(c) => c.string()?,
                None => "application/octet-stream".into(),
            };
            if filename.contains(['"', '\r', '\n']) || content_type.contains(['\r', '\n']) {
                return Err(field.error("the file name or content type contains a quote or a line break; expected plain text"));
            }
            out.push(MultipartField::File {
                name,
                path: file,
                filename,
                content_type,
            });
        } else {
            let value = if field.is_null() {
                Template::constant("")
            } else {
                field.template()?
            };
            out.push(MultipartField::Text { name, value });
        }
    }
    Ok(out)
}

/// `auth: { basic: { user, password } }` or `auth: { bearer: TOKEN }` → an Authorization
/// header template.
pub(crate) fn auth(value: &Value<'_>) -> Result<Template, PlanError> {
    let hint = "write `auth: { basic: { user: alice, password: \"${password}\" } }` or `auth: { bearer: \"${token}\" }`";
    let f = value
        .mapping(&["basic", "bearer"])
        .map_err(|e| e.with_hint(hint))?;
    match (f.get("basic"), f.get("bearer")) {
        (Some(b), None) => {
            let bf = b.mapping(&["user", "password"])?;
            let user = bf.required("user", "the user name")?;
            let password = bf.required("password", "the password")?;
            let mut parts = user.template_parts()?;
            parts.push(TemplatePart::Lit(":".into()));
            parts.extend(password.template_parts()?);
            let credentials = template_of(parts, "user:password");
            let mut b = Builder::default();
            b.literal("Basic ");
            match credentials.constant_bytes() {
                Some(c) => {
                    let mut out = Vec::new();
                    Transform::Base64.apply(c, &mut out);
                    b.literal(std::str::from_utf8(&out).expect("base64 is ASCII"));
                }
                None => b.func(Func::Apply {
                    transform: Transform::Base64,
                    arg: credentials,
                }),
            }
            Ok(b.finish("auth: basic".into()))
        }
        (None, Some(t)) => {
            let mut parts = vec![TemplatePart::Lit("Bearer ".into())];
            parts.extend(t.template_parts()?);
            Ok(template_of(parts, "auth: bearer"))
        }
        _ => Err(value
            .error("expected exactly one of `basic` or `bearer`")
            .with_hint(hint)),
    }
}

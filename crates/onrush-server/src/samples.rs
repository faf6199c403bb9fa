//! Fixed sample documents served by `/json`, `/html` and `/xml`, for extractor tests and demos.
//!
//! The values a test extracts are fixed and exported as constants, so tests in any crate can
//! assert them without copying strings (the unit tests below keep documents and constants in
//! step).

/// `$.token` of `/json`.
pub const JSON_TOKEN: &str = "onrush-session-7f3c9a2e41d8";
/// `$.user.id` of `/json`.
pub const JSON_USER_ID: u64 = 42;
/// `$.user.name` of `/json`.
pub const JSON_USER_NAME: &str = "Ada Lovelace";
/// `value` of `<input type="hidden" name="csrf_token">` in `/html`.
pub const CSRF_TOKEN: &str = "csrf-5b8e1d4a9c07";
/// `/order/@id` of `/xml`.
pub const XML_ORDER_ID: &str = "ORD-2026-0042";

/// A login/session response as an API would return it.
pub const JSON: &str = r#"{
  "token": "onrush-session-7f3c9a2e41d8",
  "expires_in": 3600,
  "user": {
    "id": 42,
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "roles": ["admin", "tester"]
  },
  "items": [
    {"id": 1, "name": "Espresso", "price": 2.5, "in_stock": true},
    {"id": 2, "name": "Cappuccino", "price": 3.2, "in_stock": true},
    {"id": 3, "name": "Croissant", "price": 1.9, "in_stock": false},
    {"id": 4, "name": "Orange juice", "price": 4.0, "in_stock": true}
  ],
  "next_page": "/json?page=2"
}
"#;

/// A login page: title, a form with a hidden CSRF input, links and a table.
pub const HTML: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>onrush sample shop - Sign in</title>
</head>
<body>
  <h1 id="heading">Sign in</h1>
  <form id="login" action="/echo" method="post">
    <input type="hidden" name="csrf_token" value="csrf-5b8e1d4a9c07">
    <label>User <input type="text" name="username"></label>
    <label>Password <input type="password" name="password"></label>
    <button type="submit">Sign in</button>
  </form>
  <nav>
    <a href="/json">Session (JSON)</a>
    <a href="/xml">Order (XML)</a>
    <a class="product" href="/html?product=1">Espresso</a>
    <a class="product" href="/html?product=2">Cappuccino</a>
  </nav>
  <table id="products">
    <thead><tr><th>id</th><th>name</th><th>price</th></tr></thead>
    <tbody>
      <tr><td>1</td><td>Espresso</td><td>2.50</td></tr>
      <tr><td>2</td><td>Cappuccino</td><td>3.20</td></tr>
      <tr><td>3</td><td>Croissant</td><td>1.90</td></tr>
    </tbody>
  </table>
</body>
</html>
"#;

/// An order document, with attributes, nested elements and a namespace-free layout.
pub const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<order id="ORD-2026-0042" status="confirmed">
  <customer id="42">
    <name>Ada Lovelace</name>
    <email>ada@example.com</email>
  </customer>
  <items>
    <item id="1" quantity="2"><name>Espresso</name><price currency="EUR">2.50</price></item>
    <item id="3" quantity="1"><name>Croissant</name><price currency="EUR">1.90</price></item>
  </items>
  <total currency="EUR">6.90</total>
</order>
"#;

/// Placeholder for the token in [`LOGIN_HTML`] and [`LOGIN_XML`].
const TOKEN_SLOT: &str = "{{TOKEN}}";

/// The `/login` page: like [`HTML`], with the fresh token in a hidden input, a
/// `<meta name="csrf-token">` and a `data-token` attribute (one place per kind of extractor).
pub const LOGIN_HTML: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="csrf-token" content="{{TOKEN}}">
  <title>onrush sample shop - Sign in</title>
</head>
<body>
  <h1 id="heading">Sign in</h1>
  <form id="login" action="/login" method="post" data-token="{{TOKEN}}">
    <input type="hidden" name="csrf_token" value="{{TOKEN}}">
    <label>User <input type="text" name="username" value="ada"></label>
    <label>Password <input type="password" name="password"></label>
    <button type="submit">Sign in</button>
  </form>
  <nav>
    <a href="/account">Account</a>
    <a href="/json">Session (JSON)</a>
  </nav>
</body>
</html>
"#;

/// The `/login?format=xml` document: the token in `/login/@token` and `/login/token`.
pub const LOGIN_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<login token="{{TOKEN}}" expires_in="3600">
  <token>{{TOKEN}}</token>
  <user id="42" login="ada">
    <name>Ada Lovelace</name>
  </user>
</login>
"#;

/// [`LOGIN_HTML`] with `token` in place.
pub fn login_html(token: &str) -> String {
    LOGIN_HTML.replace(TOKEN_SLOT, token)
}

/// [`LOGIN_XML`] with `token` in place.
pub fn login_xml(token: &str) -> String {
    LOGIN_XML.replace(TOKEN_SLOT, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_holds_the_documented_values() {
        let v: serde_json::Value = serde_json::from_str(JSON).unwrap();
        assert_eq!(v["token"], JSON_TOKEN);
        assert_eq!(v["user"]["id"], JSON_USER_ID);
        assert_eq!(v["user"]["name"], JSON_USER_NAME);
        assert_eq!(v["items"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn html_and_xml_hold_the_documented_values() {
        let input = format!(r#"<input type="hidden" name="csrf_token" value="{CSRF_TOKEN}">"#);
        assert!(HTML.contains(&input));
        assert!(XML.contains(&format!(r#"<order id="{XML_ORDER_ID}""#)));
    }

    #[test]
    fn login_documents_carry_the_token_everywhere() {
        let html = login_html("tok-7-00ff");
        assert!(!html.contains(TOKEN_SLOT));
        assert!(html.contains(r#"<input type="hidden" name="csrf_token" value="tok-7-00ff">"#));
        assert!(html.contains(r#"<meta name="csrf-token" content="tok-7-00ff">"#));
        assert!(html.contains(r#"data-token="tok-7-00ff""#));
        let xml = login_xml("tok-7-00ff");
        assert!(xml.contains(r#"<login token="tok-7-00ff""#));
        assert!(xml.contains("<token>tok-7-00ff</token>"));
    }
}

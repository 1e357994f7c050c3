//! What the console's tests share: forms posted with their token, the text of an
//! element by id, the flash message a redirect carries, a sign-in.

use crate::http;

pub const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// The form token of a console page.
pub fn form_token(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with its token")
        + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap_or_default().to_owned()
}

/// A form body: `k=v&...`, percent-encoded.
pub fn body(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            let v: String = v
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

pub async fn post(console: &str, path: &str, fields: &[(&str, &str)]) -> http::Answer {
    http::request(console, "POST", path, &[FORM], &body(fields)).await
}

/// The text between `id="{id}">` and the next `<`.
pub fn by_id<'a>(page: &'a str, id: &str) -> &'a str {
    let mark = format!("id=\"{id}\">");
    let at = page
        .find(&mark)
        .unwrap_or_else(|| panic!("no #{id} in {page}"))
        + mark.len();
    page[at..].split('<').next().unwrap_or_default()
}

/// The flash a redirect carries, decoded.
pub fn flash(answer: &http::Answer) -> String {
    let location = answer.header("location").unwrap_or_default();
    let raw = location.split("flash=").nth(1).unwrap_or_default();
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("20");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b' '));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Signs in; the session cookie (`name=token`).
pub async fn sign_in(console: &str, access_key: &str, secret: &str) -> String {
    let token = form_token(&http::get(console, "/login").await.body);
    let answer = post(
        console,
        "/login",
        &[
            ("csrf", &token),
            ("accessKey", access_key),
            ("secretKey", secret),
            ("next", "/topics"),
        ],
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let cookie = answer.header("set-cookie").expect("a session cookie");
    cookie.split(';').next().unwrap_or_default().to_owned()
}

//! Secrets shown redacted: a value that lets whoever reads it in appears only through
//! [`redact`], in every log line, message and error.

/// A value that lets whoever reads it in: shown only through [`redact`], in every log
/// line, message and error (logs are collected and shared; errors are pasted into
/// issues).
#[derive(Debug, Clone, Copy)]
pub enum Secret<'a> {
    /// A PostgreSQL URL or libpq `key=value` string (`--store`): its password.
    Store(&'a str),
    /// The webhook's URL: its path is the credential (Slack's, Discord's ...).
    Webhook(&'a str),
    /// An ntfy `URL/TOPIC`: anyone who knows the topic reads and posts to it.
    Ntfy(&'a str),
}

/// `secret` as safe to show: a store's passwords as `***`; a webhook's scheme and host
/// with its path as `/…`; ntfy's server and the first 3 characters of its topic + `…`.
pub fn redact(secret: Secret<'_>) -> String {
    match secret {
        Secret::Store(text) => match text.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", redact_store_url(rest)),
            None => redact_key_values(text),
        },
        Secret::Webhook(text) => match reqwest::Url::parse(text) {
            Ok(url) if url.path() == "/" && url.query().is_none() && url.fragment().is_none() => format!("{}/", origin(&url)),
            Ok(url) => format!("{}/…", origin(&url)),
            Err(_) => unparsed(text),
        },
        Secret::Ntfy(text) => match reqwest::Url::parse(text) {
            Ok(url) => {
                let topic = url.path_segments().and_then(|mut s| s.rfind(|s| !s.is_empty())).unwrap_or_default();
                // A topic too short to keep 3 characters back shows half of them.
                let shown: String = topic.chars().take(3.min(topic.chars().count() / 2)).collect();
                format!("{}/{shown}…", origin(&url))
            }
            Err(_) => unparsed(text),
        },
    }
}

/// `scheme://host[:port]`, without any user or password.
fn origin(url: &reqwest::Url) -> String {
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}", url.scheme(), url.host_str().unwrap_or_default())
}

/// A value that is not a URL: its scheme at most.
fn unparsed(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, _)) if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) => {
            format!("{scheme}://…")
        }
        _ => "…".to_owned(),
    }
}

/// What follows `postgres://`, read as tokio-postgres reads it: the credentials run to
/// the first `@` and the password follows their first `:`; a `password` parameter (its
/// name percent-decoded) may follow `?`.
fn redact_store_url(rest: &str) -> String {
    let (credentials, rest) = match rest.find('@') {
        Some(at) => (Some(&rest[..at]), &rest[at..]),
        None => (None, rest),
    };
    let mut shown = match credentials.map(|c| c.split_once(':')) {
        Some(Some((user, _))) => format!("{user}:***"),
        Some(None) => credentials.unwrap_or_default().to_owned(),
        None => String::new(),
    };
    let Some((before, query)) = rest.split_once('?') else {
        shown.push_str(rest);
        return shown;
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if percent_encoding::percent_decode_str(key).decode_utf8_lossy() == "password" => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{shown}{before}?{}", pairs.join("&"))
}

/// A libpq `key=value` string (`host=db password='a b'`): values may be quoted, with
/// backslash escapes, and spaces may surround `=`. What cannot be read is hidden.
fn redact_key_values(text: &str) -> String {
    let mut shown = vec![];
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find(|c: char| c == '=' || c.is_whitespace()).unwrap_or(rest.len());
        let key = &rest[..key_end];
        let Some(after) = rest[key_end..].trim_start().strip_prefix('=') else {
            shown.push("…".to_owned());
            break;
        };
        let after = after.trim_start();
        let Some(value_len) = libpq_value_len(after) else {
            shown.push(format!("{key}=…"));
            break;
        };
        let value = if key == "password" { "***" } else { &after[..value_len] };
        shown.push(format!("{key}={value}"));
        rest = after[value_len..].trim_start();
    }
    shown.join(" ")
}

/// The length of the value at the start of `text`: quoted to its closing `'`, else to
/// the next space; `None` when a quote is not closed.
fn libpq_value_len(text: &str) -> Option<usize> {
    let quoted = text.starts_with('\'');
    let mut chars = text.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return Some(i + 1),
            c if !quoted && c.is_whitespace() => return Some(i),
            _ => {}
        }
    }
    (!quoted).then_some(text.len())
}

#[cfg(test)]
mod redact_tests {
    use super::{redact, Secret};

    #[test]
    fn store_passwords_are_hidden_wherever_tokio_postgres_reads_them() {
        let store = |s| redact(Secret::Store(s));
        assert_eq!(
            store("postgres://askuser:s3cret@db:5432/askuser?sslmode=require"),
            "postgres://askuser:***@db:5432/askuser?sslmode=require"
        );
        assert_eq!(store("postgresql://askuser@/askuser?host=/tmp/x"), "postgresql://askuser@/askuser?host=/tmp/x");
        assert_eq!(store("postgres://u@db/a?sslmode=require&password=s3cret"), "postgres://u@db/a?sslmode=require&password=***");
        assert_eq!(store("postgres://db/a?pass%77ord=s3cret"), "postgres://db/a?pass%77ord=***");
        // An `@` or `/` in the password: the credentials run to the first `@`.
        assert_eq!(store("postgres://u:s3/c?r@et@db/a"), "postgres://u:***@et@db/a");
        assert_eq!(store("postgres://u:p@db/a?password=s3cret&x=1"), "postgres://u:***@db/a?password=***&x=1");
        assert_eq!(store("host=db user=askuser password=s3cret"), "host=db user=askuser password=***");
        assert_eq!(store("host=db password = 's3 c\\'ret' dbname=a"), "host=db password=*** dbname=a");
        assert_eq!(store("host=db password='s3cret"), "host=db password=…");
        assert_eq!(store("mysql: s3cret"), "…");
    }

    #[test]
    fn a_webhook_shows_its_host_and_ntfy_a_topic_prefix() {
        let hook = |s| redact(Secret::Webhook(s));
        assert_eq!(hook("https://hooks.slack.com/services/T0/B0/s3cret"), "https://hooks.slack.com/…");
        assert_eq!(hook("https://me:pw@hooks.example:8443/?key=s3cret"), "https://hooks.example:8443/…");
        assert_eq!(hook("http://[::1]:9/"), "http://[::1]:9/");
        assert_eq!(hook("https//hooks.example/s3cret"), "…");
        assert_eq!(hook("hxxps://hooks example/s3cret"), "hxxps://…");
        let ntfy = |s| redact(Secret::Ntfy(s));
        assert_eq!(ntfy("https://ntfy.sh/askuser-s3cret"), "https://ntfy.sh/ask…");
        assert_eq!(ntfy("https://ntfy.example:8080/push/s3cret-topic/"), "https://ntfy.example:8080/s3c…");
        assert_eq!(ntfy("https://ntfy.sh/ab"), "https://ntfy.sh/a…");
    }
}

//! URLs as they may be shown in logs, errors and health reports: credentials are sometimes
//! passed in a URL's user information (`https://user:password@host`), its query
//! (`?api_key=…`) or its fragment, so those parts are never shown.

/// `url` as it may be shown: `scheme://host[:port]/path`, its user information replaced by
/// `…@` and its query and fragment by `?…` (each marks that there was one).
pub fn shown_url(url: &str) -> String {
    let (head, cut) = match url.find(['?', '#']) {
        Some(at) => (&url[..at], true),
        None => (url, false),
    };
    // The authority runs from `://` to the next `/`; user information ends at its last `@`.
    let mut shown = match head.find("://") {
        Some(scheme_end) => {
            let authority_start = scheme_end + 3;
            let rest = &head[authority_start..];
            let authority_len = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_len].rfind('@') {
                Some(at) => format!("{}…@{}", &head[..authority_start], &rest[at + 1..]),
                None => head.to_owned(),
            }
        }
        None => head.to_owned(),
    };
    if cut {
        shown.push_str("?…");
    }
    shown
}

/// `text` with every URL-looking word cut to what [`shown_url`] shows (error messages of
/// reqwest and rmcp can carry a URL with its query).
pub fn cut_urls(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            if word.contains("://") {
                shown_url(word)
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn urls_are_shown_without_credentials_query_or_fragment() {
        let cases = [
            ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
            (
                "https://mcp.example.com/mcp?api_key=s3cret",
                "https://mcp.example.com/mcp?…",
            ),
            ("http://127.0.0.1:9/sse#frag", "http://127.0.0.1:9/sse?…"),
            (
                "https://user:s3cret@gw.example/v1",
                "https://…@gw.example/v1",
            ),
            ("https://s3cret@gw.example", "https://…@gw.example"),
            (
                "https://u:p@ss@gw.example:8443/v1?k=1",
                "https://…@gw.example:8443/v1?…",
            ),
            // An `@` in the path is not user information.
            (
                "https://gw.example/users/@me",
                "https://gw.example/users/@me",
            ),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }

    #[test]
    fn every_url_in_a_message_is_cut() {
        assert_eq!(
            cut_urls(
                "error sending request for url (https://u:pw@h.example/mcp?key=s3cret) after 2 tries"
            ),
            "error sending request for url (https://…@h.example/mcp?… after 2 tries"
        );
    }
}
